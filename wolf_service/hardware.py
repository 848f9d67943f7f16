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


def openmp_thread_limit() -> int | None:
    """``OMP_THREAD_LIMIT`` as a positive int, or None when it is unset or not a number."""
    import os

    try:
        limit = int(os.environ.get("OMP_THREAD_LIMIT", ""))
    except ValueError:
        return None
    return limit if limit > 0 else None


def fit_torch_threads_to_openmp_limit() -> int:
    """Lower torch's intra-op threads to ``OMP_THREAD_LIMIT`` when it is above it; return the thread count.

    torch plans a bf16 matmul (oneDNN) for its own thread count; when OpenMP may start fewer threads, the
    parts planned for the missing threads are never written and the result holds uninitialised memory
    (NaN, garbage). fp32 (MKL) matmuls are not affected. See docs/decisions/0350.
    """
    import torch

    limit = openmp_thread_limit()
    if limit is not None and torch.get_num_threads() > limit:
        torch.set_num_threads(limit)
    return int(torch.get_num_threads())
