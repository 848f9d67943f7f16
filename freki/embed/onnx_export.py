"""Export the embedding model to ONNX once, into a cache shared by every process on the machine.

The file name carries a key of the model's files, torch's version (the exporter) and
``EXPORT_FORMAT``; a file is written under a temporary name and renamed, so concurrent processes
see no file or a whole one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from freki.embed.runners import model_pipeline

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger("freki.encoders")

# Bump when the exported graph changes shape or meaning, so stale cache files are not reused.
EXPORT_FORMAT = 1


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/freki`` (``~/.cache/freki``): a cache, safe to delete."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "freki"


def export_onnx(model: SentenceTransformer, model_path: str, cache_dir: Path) -> Path:
    """Path of the model's ONNX export in ``cache_dir``, exporting it first if missing."""
    target = Path(cache_dir) / "onnx" / f"{cache_key(model_path)}.onnx"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    log.info("exporting the embedding model to ONNX: %s", target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.stem, suffix=".tmp")
    os.close(fd)
    try:
        _export(model, Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache may be shared by service users
        os.replace(tmp, target)  # atomic: a concurrent reader sees no file or a whole one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def cache_key(model_path: str) -> str:
    """Changes when the model's files, torch (the exporter) or EXPORT_FORMAT change."""
    import torch

    digest = hashlib.sha256(f"{EXPORT_FORMAT}|{torch.__version__}|{model_path}".encode())
    root = Path(model_path)
    if root.is_dir():
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            stat = file.stat()
            digest.update(f"|{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{root.name or 'model'}-{digest.hexdigest()[:16]}"


def _export(model: SentenceTransformer, path: Path) -> None:
    import torch

    names = list(model.tokenizer.model_input_names)
    sample = model.tokenizer(["an example", "a somewhat longer example text"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    # The tracer warns about every data-dependent branch of the model code; the probe check in
    # build_encoder is what decides whether the export is right.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model_pipeline(model).eval(), tuple(sample[n] for n in names), str(path), input_names=names,
            output_names=["sentence_embedding"], dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
            opset_version=17, dynamo=False,
        )
