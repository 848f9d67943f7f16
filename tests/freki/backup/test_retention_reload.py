"""Retention policies change without a restart: a real ``freki serve``, its settings file edited and SIGHUP
sent. A policy added with ``interval_s`` 0 waits; turning the interval on starts the passes; shortening the
policy's age erases the old document at the next pass; GetIndexStatus shows the live policy throughout."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from wolf.v1 import freki_pb2

from tests.freki.freki_process_support import FrekiProcess

pytestmark = pytest.mark.integration

RELOADED = "settings reloaded (SIGHUP)"


def wait_for(condition: Callable[[], bool], what: str, log: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}\n{log.read_text()[-3000:]}"
        time.sleep(0.2)


def test_retention_policies_reload_without_restart(tmp_path: Path) -> None:
    config, log = tmp_path / "freki.json", tmp_path / "freki.log"

    def write(interval_s: float, max_age_days: float) -> None:
        config.write_text(json.dumps({
            "data_dir": str(tmp_path / "data"), "reload": {"poll_interval_s": 0},
            "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
            "retention": {"interval_s": interval_s, "policies": [
                {"name": "events", "tenant_id": "acme", "age_field": "event_date", "max_age_days": max_age_days}]}}))

    write(0, 36_500)
    server = FrekiProcess(config, log)

    def policy() -> freki_pb2.RetentionPolicyStatus:
        status = server.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(tenant_id="acme"), timeout=30)
        (only,) = status.retention
        return only

    def exists(doc: str) -> bool:
        try:
            server.stub.GetDocument(freki_pb2.GetDocumentRequest(document_id=doc, tenant_id="acme"), timeout=30)
            return True
        except grpc.RpcError as exc:
            assert exc.code() == grpc.StatusCode.NOT_FOUND
            return False

    def reload(interval_s: float, max_age_days: float) -> None:
        done = log.read_text().count(RELOADED)
        write(interval_s, max_age_days)
        server.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: log.read_text().count(RELOADED) > done, "the reload is applied (not refused)", log)

    try:
        for doc, day in (("old-event", "2020-01-01"), ("new-event", "2999-01-01")):
            server.stub.IndexDocument(freki_pb2.IndexDocumentRequest(
                request_id=doc, document_id=doc, tenant_id="acme", metadata={"event_date": day},
                content=f"Event {doc}: the ferry timetable changes in winter. " * 6), timeout=120)
        assert policy().next_run.seconds == 0 and policy().last_run.seconds == 0, "interval 0: no pass scheduled"

        reload(0.3, 36_500)  # passes start; the 100-year policy keeps both
        wait_for(lambda: policy().last_run.seconds > 0, "a retention pass runs after the reload", log)
        assert exists("old-event") and policy().documents_deleted == 0

        reload(0.3, 365)  # shortened: the 2020 event is past it
        wait_for(lambda: not exists("old-event"), "the next pass erases the document past the shortened age", log)
        wait_for(lambda: policy().documents_deleted == 1, "and counts it once the pass is over", log)
        shown = policy()
        assert shown.max_age_days == 365 and shown.documents_deleted == 1 and shown.last_error == ""
        assert exists("new-event"), "the future-dated document stays"
        audit = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").read_text().splitlines()]
        assert [e["target"] for e in audit if e["action"] == "freki.retention_erase"] == ["document=old-event"]
    finally:
        server.stop()
