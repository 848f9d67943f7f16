"""What this CPU can do that changes how a model should run on it."""

from __future__ import annotations


def native_bf16() -> bool:
    """Whether torch (oneDNN) has native bf16 kernels on this CPU (AVX512-BF16 or AMX); emulated bf16 is slower
    than fp32."""
    import torch

    try:
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without the check
        return False
