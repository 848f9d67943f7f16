"""A real backend failure: Geri (Ollama backend) whose Ollama is down. The failure must show up as
UNAVAILABLE to the client, in wolf_backend_errors_total and in the audit log."""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, geri_pb2_grpc

from geri.server import build_server
from geri.settings import GeriSettings
from tests.wolf_service.conftest import metrics_url
from tests.wolf_service.test_metrics import scrape, value
from wolf_service.audit_log import read_audit_log


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_ollama_counts_as_backend_error(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    settings = GeriSettings(host="127.0.0.1", port=0, backend="ollama", shutdown_grace_s=1.0,
                            ollama_host=f"http://127.0.0.1:{closed_port()}", ollama_connect_timeout_s=1.0,
                            metrics={"port": 0}, audit_log=audit)
    handle = build_server(settings)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            with pytest.raises(grpc.RpcError) as err:
                stub.Generate(common_pb2.WolfRequest(request_id="down-1", model_type=common_pb2.LLM,
                                                     prompt="hello"), timeout=30)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            with pytest.raises(grpc.RpcError) as bad:  # a caller error, for contrast
                stub.Generate(common_pb2.WolfRequest(request_id="bad-1", model_type=common_pb2.RAG,
                                                     prompt="hello"), timeout=30)
            assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        samples = scrape(metrics_url(handle))
    finally:
        handle.stop(1.0)
    labels = {"service": "geri", "method": "GeriService/Generate"}
    assert value(samples, "wolf_backend_errors_total", **labels, code="UNAVAILABLE") == 1
    assert value(samples, "wolf_backend_errors_total", **labels, code="INVALID_ARGUMENT") == 0
    assert value(samples, "wolf_rpc_requests_total", **labels, code="INVALID_ARGUMENT") == 1
    outcomes = {e["request_id"]: e["outcome"] for e in read_audit_log(audit)}
    assert outcomes == {"down-1": "unavailable", "bad-1": "invalid_argument"}
