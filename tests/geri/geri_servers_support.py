"""Reusable Geri fixtures: the real embedded backend, an in-process Geri on port 0, and a real
Ollama-protocol server (ollama-proxy-plus in front of ``transformers serve`` running SmolLM2).

Other test packages (e.g. Odin's) reuse them with::

    from tests.geri.geri_servers_support import embedded_backend, geri_server, geri_stub  # noqa: F401

``geri_server`` yields a :class:`wolf_service.serving.ServerHandle`; ``handle.address`` is
``127.0.0.1:<port>``. ``start_geri(settings, backend)`` is the context manager behind it, for
tests that need their own settings (e.g. a small window) on the shared backend.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from safetensors.torch import save_model
from wolf.v1 import geri_pb2_grpc

from geri.backends.embedded import EmbeddedBackend, default_model_path
from geri.backends.loaded_model import load_model
from geri.server import build_server
from geri.settings import GeriSettings
from tests.local_servers_support import free_port, start_ollama_proxy, stop, wait_http  # noqa: F401 - free_port is used by the tests
from wolf_service.serving import ServerHandle

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VENV_BIN = Path(sys.executable).parent
# Name the converted checkpoint so the Ollama-protocol model is "local/smollm2".
HF_DIR_NAME = "smollm2"
OLLAMA_MODEL = f"local/{HF_DIR_NAME}"


def geri_settings(**overrides: Any) -> GeriSettings:
    """Settings for a test server: loopback, free port, embedded backend, short grace."""
    values: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "backend": "embedded", "shutdown_grace_s": 2.0}
    values.update(overrides)
    return GeriSettings(**values)


@contextlib.contextmanager
def start_geri(settings: GeriSettings, backend: Any) -> Iterator[ServerHandle]:
    """Run Geri in-process with ``backend`` until the block ends (stopped in ``finally``)."""
    handle = build_server(settings, backend)
    try:
        yield handle
    finally:
        handle.stop(settings.shutdown_grace_s)


@pytest.fixture(scope="session")
def embedded_backend() -> Iterator[EmbeddedBackend]:
    """The real SmolLM2-135M-Instruct backend, loaded once per session."""
    backend = EmbeddedBackend(geri_settings())
    backend.prepare()
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="module")
def geri_server(embedded_backend: EmbeddedBackend) -> Iterator[ServerHandle]:
    """A running Geri (embedded backend) for the whole test module."""
    with start_geri(geri_settings(), embedded_backend) as handle:
        yield handle


@pytest.fixture(scope="module")
def geri_stub(geri_server: ServerHandle) -> Iterator[geri_pb2_grpc.GeriServiceStub]:
    """A client stub on a channel to the module's Geri."""
    with grpc.insecure_channel(geri_server.address) as channel:
        yield geri_pb2_grpc.GeriServiceStub(channel)


# --- a real Ollama-protocol server ------------------------------------------------------------


@dataclass(frozen=True)
class OllamaProtocolServer:
    """Where the proxy listens and which model name it serves."""

    host: str
    model: str






def export_hf_checkpoint(dest: Path) -> Path:
    """Write SmolLM2 as a plain (de-quantized) Hugging Face checkpoint at ``dest``, once.

    ``transformers serve`` cannot serve the GGUF directly (its config has no architecture),
    so the weights are de-quantized and saved; the directory is reused across sessions.
    """
    marker = dest / ".complete"
    if marker.exists():
        return dest
    loaded = load_model(default_model_path())
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # save_pretrained refuses GGUF-quantized models; the tensors themselves are plain fp32 by now.
    config = loaded.model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [type(loaded.model).__name__]
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    loaded.model.generation_config.save_pretrained(tmp)
    save_model(loaded.model, str(tmp / "model.safetensors"))
    loaded.tokenizer.save_pretrained(tmp)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    marker.touch()
    return dest




@dataclass(frozen=True)
class OpenAICompatibleServer:
    """``transformers serve`` (OpenAI-compatible) and the model id it serves."""

    base_url: str
    model: str


@pytest.fixture(scope="session")
def openai_compatible_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAICompatibleServer]:
    """``transformers serve`` on a free port running SmolLM2 (de-quantized), an OpenAI-compatible server."""
    transformers_bin = VENV_BIN / "transformers"
    if not transformers_bin.exists():
        pytest.skip("transformers is not installed with its CLI: no OpenAI-compatible server")
    checkpoint = export_hf_checkpoint(Path(tempfile.gettempdir()) / "wolfpack-geri-hf" / HF_DIR_NAME)
    logs = tmp_path_factory.mktemp("openai-compatible")
    # Its /v1/models scans the Hugging Face cache and answers 500 when that directory does not exist.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_CACHE": str(tmp_path_factory.mktemp("hf-cache"))}
    port = free_port()
    log = logs / "transformers-serve.log"
    proc = subprocess.Popen(
        [str(transformers_bin), "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu", HF_DIR_NAME],
        cwd=checkpoint.parent,  # the pinned model id is the relative directory name
        env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/health", proc, 180, log)
        yield OpenAICompatibleServer(base_url=f"http://127.0.0.1:{port}/v1", model=HF_DIR_NAME)
    finally:
        stop(proc)



@pytest.fixture(scope="session")
def ollama_protocol_server(
    openai_compatible_server: OpenAICompatibleServer, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OllamaProtocolServer]:
    """ollama-proxy-plus on a free port in front of ``transformers serve`` running SmolLM2."""
    if not (VENV_BIN / "ollama-proxy").exists():
        pytest.skip("ollama-proxy-plus is not installed (pip install '.[dev]'): no Ollama-protocol server")
    port = free_port()
    proc = start_ollama_proxy(openai_compatible_server.base_url, port,
                              tmp_path_factory.mktemp("ollama-protocol") / "ollama-proxy.log", OLLAMA_MODEL)
    try:
        yield OllamaProtocolServer(host=f"http://127.0.0.1:{port}", model=OLLAMA_MODEL)
    finally:
        stop(proc)


def count_waits(backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A list that gets an entry each time ``backend`` queues for its model (the model still runs)."""
    waits: list[str] = []
    wait = backend._wait_for_model  # noqa: SLF001 - counting the queue

    def counted(cancel: threading.Event | None) -> bool:
        waits.append("wait")
        return wait(cancel)

    monkeypatch.setattr(backend, "_wait_for_model", counted)
    return waits
