"""Structured JSON logs and the audit trail, observed around real calls to a real Freki."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2

from tests.wolf_service.conftest import KEYS, api_keys, bearer, freki_stub, index_request, retrieve_request
from wolf_service.audit_log import read_audit_log
from wolf_service.logs import LogSettings, configure_logging

pytestmark = pytest.mark.integration

CONTENT_MARKER = "Zebracorn"  # appears only in the document text
PROMPT_MARKER = "Quokkaflux"  # appears only in the prompt
DOC = f"# Notes\n\nThe {CONTENT_MARKER} protocol rotates its keys every ninety days and logs each rotation."


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """The root logger's JSON output at INFO, restored afterwards."""
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    handler = configure_logging(LogSettings(level="INFO", format="json"), stream=stream)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def test_access_log_is_json_with_call_fields_and_no_content(start_freki, captured_logs) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"api_keys": api_keys()})
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        stub.IndexDocument(index_request("log-doc", DOC), metadata=bearer("acme"))
        stub.RetrieveContext(retrieve_request(f"How often does {PROMPT_MARKER} rotate keys?"),
                             metadata=(*bearer("acme"), ("x-wolf-user", "agent-7")))
        with pytest.raises(grpc.RpcError):
            stub.RetrieveContext(retrieve_request("x", tenant="acme"), metadata=bearer("globex"))
        with pytest.raises(grpc.RpcError):
            stub.RetrieveContext(retrieve_request("x"), metadata=(*bearer("acme"), ("x-wolf-user", "a b")))
    lines = [json.loads(line) for line in captured_logs.getvalue().splitlines()]
    access = [e for e in lines if e["logger"] == "wolf_service.access"]
    by_rpc = {(e["rpc"], e["status"]): e for e in access}
    ok = by_rpc[("FrekiService/RetrieveContext", "OK")]
    assert ok["level"] == "INFO" and ok["tenant"] == "acme" and ok["principal"] == "acme-ci"
    assert ok["user"] == "agent-7" and by_rpc[("FrekiService/IndexDocument", "OK")]["user"] == ""
    assert ok["request_id"] == "ret-1" and isinstance(ok["duration_ms"], float) and ok["ts"]
    assert by_rpc[("FrekiService/IndexDocument", "OK")]["request_id"] == "idx-log-doc"
    denied = by_rpc[("FrekiService/RetrieveContext", "PERMISSION_DENIED")]
    assert denied["principal"] == "globex-ci"
    assert by_rpc[("FrekiService/RetrieveContext", "INVALID_ARGUMENT")]["user"] == "<invalid>"  # never copied
    text = captured_logs.getvalue()
    for secret in (CONTENT_MARKER, PROMPT_MARKER, *KEYS.values()):
        assert secret not in text


def test_an_over_long_request_id_is_logged_cut_not_whole(start_freki, captured_logs) -> None:  # type: ignore[no-untyped-def]
    """A 100,000-character request id (any length fits in a message) is refused, and no log line carries it
    whole: the access and error lines name it cut to at most 256 characters with its digest."""
    handle = start_freki()
    long_id = "r" * 100_000
    request = retrieve_request("Which port?")
    request.request_id = long_id
    with grpc.insecure_channel(handle.address) as channel, pytest.raises(grpc.RpcError) as refused:
        freki_stub(channel).RetrieveContext(request)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    lines = captured_logs.getvalue().splitlines()
    assert lines and max(len(line) for line in lines) < 2_000
    access = [json.loads(line) for line in lines if '"wolf_service.access"' in line]
    logged = access[-1]["request_id"]
    assert len(logged) <= 256 and logged.startswith("rrrr") and "sha256:" in logged


def test_log_level_filters_and_bearer_tokens_are_masked(captured_logs) -> None:  # type: ignore[no-untyped-def]
    log = logging.getLogger("tests.wolf_service.sample")
    log.debug("not shown at INFO")
    log.info("forwarding header authorization: Bearer abc.def-123", extra={"tenant": "acme", "count": 3})
    entries = [json.loads(line) for line in captured_logs.getvalue().splitlines()]
    mine = [e for e in entries if e["logger"] == "tests.wolf_service.sample"]
    assert len(mine) == 1
    assert mine[0]["msg"] == "forwarding header authorization: Bearer [REDACTED]"
    assert mine[0]["tenant"] == "acme" and mine[0]["count"] == 3


def test_audit_records_who_what_when_and_outcome(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    audit = tmp_path / "audit.jsonl"
    handle = start_freki(security={"api_keys": api_keys()}, audit_log=audit)
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        stub.IndexDocument(index_request("audit-doc", DOC), metadata=bearer("acme"))
        stub.RetrieveContext(retrieve_request(f"{PROMPT_MARKER}?"),  # audited: who read, how many hits; no query
                             metadata=(*bearer("acme"), ("x-wolf-user", "agent-7")))
        with pytest.raises(grpc.RpcError):
            stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="d-missing", document_id="nope"),
                                metadata=bearer("acme"))
        with pytest.raises(grpc.RpcError):  # no key: the attempt is still recorded
            stub.DeleteDocument(freki_pb2.DeleteDocumentRequest(request_id="d-anon", document_id="audit-doc"))
        exported = list(stub.ExportOwnerData(
            freki_pb2.ExportOwnerDataRequest(request_id="x1", owner_id="acme"), metadata=bearer("acme")))
        erased = stub.DeleteOwnerData(freki_pb2.DeleteOwnerDataRequest(request_id="g1", owner_id="acme"),
                                      metadata=bearer("acme"))
    events = list(read_audit_log(audit))
    ids = {"idx-audit-doc", "ret-1", "d-missing", "d-anon", "x1", "g1"}
    mine = [e for e in events if e.get("request_id") in ids]
    read = mine.pop(1)
    assert (read["action"], read["outcome"], read["actor"], read["user"]) == \
        ("freki.retrieve", "ok", "acme-ci", "agent-7")
    assert read["hits"] >= 0 and read["tenant"] == "acme"
    assert [(e["action"], e["outcome"]) for e in mine] == [
        ("freki.index_document", "ok"),
        ("freki.delete_document", "not_found"),
        ("freki.delete_document", "unauthenticated"),
        ("gdpr.export_owner", "ok"),
        ("gdpr.erase_owner", "ok"),
    ]
    index, _, anon, export, erase = mine
    assert index["actor"] == "acme-ci" and index["tenant"] == "acme" and index["target"] == "document=audit-doc"
    assert index["index_outcome"] == "INDEX_OUTCOME_CREATED" and index["chunks"] >= 1 and index["at"]
    assert anon["actor"].startswith("ipv") and anon["tenant"] == "default"
    assert export["messages"] == len(exported) >= 2
    assert erase["documents"] == erased.documents_deleted >= 1
    assert CONTENT_MARKER not in audit.read_text() and PROMPT_MARKER not in audit.read_text()
