"""Retention policies erase on schedule, through the same erasure as DeleteDocument (gone from every file,
in the erasure log for restores, in the audit log), are visible in GetIndexStatus and survive a restart.
Real server, engine and model; the policies' own background thread does the work."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration

POLICIES = {"interval_s": 0.3, "policies": [
    {"name": "chat", "match": {"document_type": "chat-log"}, "max_age_days": 2 / 86400},
    {"name": "events", "tenant_id": "acme", "age_field": "event_date", "max_age_days": 30},
]}


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.2)


def on_disk(folder: Path, needle: str) -> list[str]:
    """Files holding ``needle``; the engine may replace files meanwhile (maintenance), so vanished ones are skipped."""
    found = []
    for parent, _dirs, files in os.walk(folder):  # os.walk skips directories that vanish under it
        for name in files:
            path = Path(parent) / name
            try:
                if needle.encode() in path.read_bytes():
                    found.append(str(path.relative_to(folder)))
            except FileNotFoundError:
                continue
    return sorted(found)


def test_retention_erases_on_schedule_and_survives_a_restart(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    settings = freki_settings(tmp_path / "data", retention=POLICIES)

    def serve() -> tuple[object, FrekiEngine, grpc.Channel, freki_pb2_grpc.FrekiServiceStub]:
        handle, engine = build_server(settings, engine=FrekiEngine(settings, embedder=embedder))
        channel = grpc.insecure_channel(handle.address)  # type: ignore[attr-defined]
        return handle, engine, channel, freki_pb2_grpc.FrekiServiceStub(channel)

    def exists(stub: freki_pb2_grpc.FrekiServiceStub, doc: str) -> bool:
        try:
            stub.GetDocument(freki_pb2.GetDocumentRequest(document_id=doc, tenant_id="acme"), timeout=30)
            return True
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.NOT_FOUND
            return False

    def index(stub: freki_pb2_grpc.FrekiServiceStub, doc: str, **metadata: str) -> None:
        stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=doc, document_id=doc, tenant_id="acme", metadata={**metadata, "tag": f"CANARY{doc}"},
            content=f"Conversation {doc}: the ferry timetable changes in winter. " * 6), timeout=120)

    def policies(stub: freki_pb2_grpc.FrekiServiceStub) -> dict[str, freki_pb2.RetentionPolicyStatus]:
        status = stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(tenant_id="acme"), timeout=30)
        return {p.name: p for p in status.retention}

    handle, engine, channel, stub = serve()
    try:
        with pytest.raises(grpc.RpcError) as off:  # this server has no backup.dir
            stub.CreateBackup(freki_pb2.CreateBackupRequest(request_id="b"), timeout=60)
        assert off.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "set backup.dir" in off.value.details()
        index(stub, "note", document_type="note")
        index(stub, "old-event", event_date="2020-01-01")
        index(stub, "future-event", event_date="2999-01-01")
        index(stub, "undated")
        index(stub, "chat-1", document_type="chat-log")
        wait_for(lambda: not exists(stub, "chat-1"), "the chat log older than 2 s is erased")
        wait_for(lambda: not exists(stub, "old-event"), "the event past 30 days is erased")
        assert all(exists(stub, d) for d in ("note", "future-event", "undated")), "nothing else goes"
        for canary in ("CANARYchat-1", "CANARYold-event"):
            assert on_disk(tmp_path / "data", canary) == [], f"{canary} left on disk: erasure as DeleteDocument"
        shown = policies(stub)
        assert shown["chat"].documents_deleted == 1 and shown["events"].documents_deleted == 1
        assert dict(shown["chat"].match) == {"document_type": "chat-log"} and shown["events"].age_field == "event_date"
        assert shown["chat"].last_run.seconds > 0 and shown["chat"].next_run.seconds > 0
        assert shown["chat"].last_error == ""
    finally:
        channel.close()
        handle.stop(1.0)  # type: ignore[attr-defined]
        engine.close()

    audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
    erased = sorted(e["target"] for e in audit if e["action"] == "freki.retention_erase")
    assert erased == ["document=chat-1", "document=old-event"]
    actors = {e["actor"] for e in audit if e["action"] == "freki.retention_erase"}
    assert actors == {"retention:chat", "retention:events"}
    log = [json.loads(line) for line in (tmp_path / "data" / "erasures.jsonl").read_text().splitlines()]
    logged = sorted((e["kind"], e["document_ids"][0]) for e in log)
    assert logged == [("retention", "chat-1"), ("retention", "old-event")]

    handle, engine, channel, stub = serve()  # a restart: the counts are kept, the schedule goes on
    try:
        assert policies(stub)["chat"].documents_deleted == 1
        index(stub, "chat-2", document_type="chat-log")
        wait_for(lambda: not exists(stub, "chat-2"), "the restarted server erases the next chat log")
        wait_for(lambda: policies(stub)["chat"].documents_deleted == 2, "and counts it")
    finally:
        channel.close()
        handle.stop(1.0)  # type: ignore[attr-defined]
        engine.close()
