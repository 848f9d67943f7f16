"""API keys on a real Freki: authentication, tenant pinning, open probes, key rotation by reload."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import freki_pb2

from freki.settings import FrekiSettings
from tests.freki.api.corpus_support import GERI_DOC
from tests.wolf_service.conftest import (
    api_keys,
    bearer,
    freki_stub,
    index_request,
    ops_of,
    ops_settings,
    retrieve_request,
)
from wolf_service.auth import hash_key
from wolf_service.reload import SettingsSource

pytestmark = pytest.mark.integration


def expect(code: grpc.StatusCode, call, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        call(*args, **kwargs)
    assert err.value.code() == code, err.value.details()
    return str(err.value.details())


def test_calls_without_a_valid_key_are_unauthenticated(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys()})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        req = retrieve_request("port?")
        assert "missing API key" in expect(grpc.StatusCode.UNAUTHENTICATED, stub.RetrieveContext, req)
        assert "invalid API key" in expect(
            grpc.StatusCode.UNAUTHENTICATED, stub.RetrieveContext, req,
            metadata=(("authorization", "Bearer not-a-key"),))
        assert "expected 'Bearer <key>'" in expect(
            grpc.StatusCode.UNAUTHENTICATED, stub.RetrieveContext, req,
            metadata=(("authorization", "Basic Zm9vOmJhcg=="),))
        # Streaming RPCs are guarded too.
        export = freki_pb2.ExportOwnerDataRequest(request_id="e1", owner_id="someone")
        expect(grpc.StatusCode.UNAUTHENTICATED, lambda: list(stub.ExportOwnerData(export)))


def test_key_decides_the_tenant(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys()})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        # No tenant in the request: the key's tenant is used.
        stub.IndexDocument(index_request("auth-geri", GERI_DOC), metadata=bearer("acme"))
        doc = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="auth-geri"), metadata=bearer("acme"))
        assert doc.tenant_id == "acme"
        # Naming its own tenant is fine.
        found = stub.RetrieveContext(retrieve_request("Which port?", tenant="acme"), metadata=bearer("acme"))
        assert any(d.document_id == "auth-geri" for d in found.rag_context.documents)
        # Another tenant's key sees nothing of acme's…
        other = stub.RetrieveContext(retrieve_request("Which port?"), metadata=bearer("globex"))
        assert all(d.document_id != "auth-geri" for d in other.rag_context.documents)
        expect(grpc.StatusCode.NOT_FOUND, stub.GetDocument,
               freki_pb2.GetDocumentRequest(document_id="auth-geri"), metadata=bearer("globex"))
        # …and cannot ask for it.
        msg = expect(grpc.StatusCode.PERMISSION_DENIED, stub.RetrieveContext,
                     retrieve_request("Which port?", tenant="acme"), metadata=bearer("globex"))
        assert "globex-ci" in msg and "'acme'" in msg
        expect(grpc.StatusCode.PERMISSION_DENIED, stub.DeleteDocument,
               freki_pb2.DeleteDocumentRequest(request_id="d1", tenant_id="acme", document_id="auth-geri"),
               metadata=bearer("globex"))
        assert stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="auth-geri"), metadata=bearer("acme"))


def test_health_and_reflection_need_no_key(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys()})
    with grpc.insecure_channel(handle.address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="wolf.v1.FrekiService"), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    grpcurl = Path(sys.executable).with_name("grpcurl")
    out = subprocess.run([str(grpcurl), "-plaintext", handle.address, "list"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert "wolf.v1.FrekiService" in out.stdout.split()


def test_rotated_keys_apply_on_reload(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "freki.json"
    base = {"host": "127.0.0.1", "port": 0, "data_dir": str(tmp_path), "reload": {"poll_interval_s": 0},
            "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20}}
    path.write_text(json.dumps({**base, "security": {"api_keys": api_keys()}}))
    settings = FrekiSettings.load(path)
    handle = start_freki(settings)
    ops = ops_of(handle)
    reloader = ops.enable_reload(SettingsSource(lambda: FrekiSettings.load(path), path), [])
    new_key = "acme-rotated-key-5555"
    path.write_text(json.dumps({**base, "security": {"api_keys": [
        {"name": "acme-2026", "tenant": "acme", "sha256": hash_key(new_key)}]}}))
    assert reloader.reload("test").applied == {"security.api_keys"}
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        expect(grpc.StatusCode.UNAUTHENTICATED, stub.RetrieveContext, retrieve_request("q"), metadata=bearer("acme"))
        stub.RetrieveContext(retrieve_request("q"), metadata=(("authorization", f"Bearer {new_key}"),))


def test_settings_refuse_plain_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="SHA-256 of the key, not the key itself"):
        ops_settings(tmp_path, security={"api_keys": [{"name": "x", "tenant": "t", "sha256": "my-plain-key"}]})


def test_hash_cli_reads_the_key_from_stdin() -> None:
    out = subprocess.run([sys.executable, "-m", "wolf_service.auth"], input="s3cret\n",
                         capture_output=True, text=True, timeout=60, check=True)
    # Expected value from `printf s3cret | sha256sum`.
    assert out.stdout.strip() == hash_key("s3cret") == (
        "1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0")


def test_scopes_limit_what_a_key_may_do(start_freki) -> None:  # type: ignore[no-untyped-def]
    keys = [{"name": "reader", "tenant": "acme", "sha256": hash_key("k-read"), "scopes": ["read"]},
            {"name": "writer", "tenant": "acme", "sha256": hash_key("k-write"), "scopes": ["read", "write"]},
            {"name": "ops", "tenant": "acme", "sha256": hash_key("k-admin"), "scopes": ["admin"]}]
    handle = start_freki(security={"api_keys": keys})

    def key(k: str) -> tuple[tuple[str, str]]:
        return (("authorization", f"Bearer {k}"),)

    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        denied = expect(grpc.StatusCode.PERMISSION_DENIED, stub.IndexDocument,
                        index_request("scoped", GERI_DOC), metadata=key("k-read"))
        assert "'reader' lacks scope 'write'" in denied and "FrekiService/IndexDocument" in denied
        stub.IndexDocument(index_request("scoped", GERI_DOC), metadata=key("k-write"))
        assert stub.RetrieveContext(retrieve_request("Which port?"), metadata=key("k-read")).rag_context.documents
        delete = freki_pb2.DeleteDocumentRequest(request_id="d1", document_id="scoped")
        assert "lacks scope 'delete'" in expect(grpc.StatusCode.PERMISSION_DENIED, stub.DeleteDocument, delete,
                                                metadata=key("k-write"))
        export = freki_pb2.ExportOwnerDataRequest(request_id="e1", owner_id="someone")
        assert "lacks scope 'admin'" in expect(grpc.StatusCode.PERMISSION_DENIED,
                                               lambda: list(stub.ExportOwnerData(export, metadata=key("k-write"))))
        stub.DeleteDocument(delete, metadata=key("k-admin"))  # admin holds every scope


def test_every_rpc_has_a_declared_scope() -> None:
    """An RPC missing from the table would silently need admin: each is listed on purpose."""
    from wolf.v1 import freki_pb2 as freki_protos
    from wolf.v1 import geri_pb2

    from freki.api.operations import SCOPES as FREKI
    from geri.operations import SCOPES as GERI

    for module, table, service in ((freki_protos, FREKI, "FrekiService"), (geri_pb2, GERI, "GeriService")):
        methods = {f"{service}/{m.name}" for m in module.DESCRIPTOR.services_by_name[service].methods}
        assert methods == set(table), service
        assert set(table.values()) <= {"read", "write", "delete", "admin"}


def test_keys_without_scopes_keep_every_right_and_scopes_are_validated() -> None:
    from pydantic import ValidationError

    from wolf_service.auth import ApiKey

    legacy = ApiKey(name="old", tenant="t", sha256=hash_key("x"))
    assert all(legacy.holds(s) for s in ("read", "write", "delete", "admin"))
    with pytest.raises(ValidationError, match="scopes"):
        ApiKey(name="typo", tenant="t", sha256=hash_key("y"), scopes=["reed"])  # type: ignore[list-item]


def test_the_index_stream_is_guarded_and_pinned_message_by_message(start_freki) -> None:  # type: ignore[no-untyped-def]
    """IndexDocuments (client stream): no key → UNAUTHENTICATED; each message pinned to the key's tenant,
    and a message naming another tenant ends the stream with PERMISSION_DENIED."""
    handle = start_freki(security={"api_keys": api_keys()})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        unkeyed = iter([index_request("s1", GERI_DOC)])
        expect(grpc.StatusCode.UNAUTHENTICATED, lambda: list(stub.IndexDocuments(unkeyed)))
        results = list(stub.IndexDocuments(iter([index_request("stream-geri", GERI_DOC)]), metadata=bearer("acme")))
        assert [r.error_code for r in results] == [""]
        doc = stub.GetDocument(freki_pb2.GetDocumentRequest(document_id="stream-geri"), metadata=bearer("acme"))
        assert doc.tenant_id == "acme"
        msg = expect(grpc.StatusCode.PERMISSION_DENIED, lambda: list(stub.IndexDocuments(
            iter([index_request("stream-2", GERI_DOC, tenant="acme")]), metadata=bearer("globex"))))
        assert "'acme'" in msg
        expect(grpc.StatusCode.NOT_FOUND, stub.GetDocument,
               freki_pb2.GetDocumentRequest(document_id="stream-2"), metadata=bearer("acme"))
