"""Hot reload: live settings change without a restart; unsafe or invalid changes change nothing."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from wolf.v1 import freki_pb2

from freki.settings import FrekiSettings
from tests.freki.api.corpus_support import BAKERY_DOC, GERI_DOC
from tests.wolf_service.conftest import freki_stub, index_request, ops_of, retrieve_request
from wolf_service.reload import SettingsReloader, SettingsSource
from wolf_service.service_ops import COMMON_RELOADABLE

BASE: dict[str, Any] = {
    "host": "127.0.0.1", "port": 0, "reload": {"poll_interval_s": 0},
    "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
}


# One section of plain prose (~250 tokens), so the chunk count depends on max_tokens only.
LONG_DOC = " ".join(
    f"Observation {i}: the {topic} team reviewed its {thing} and wrote down what changed this week."
    for i, (topic, thing) in enumerate(
        [("storage", "disks"), ("network", "switches"), ("kitchen", "ovens"), ("garden", "roses"),
         ("finance", "budgets"), ("music", "pianos"), ("travel", "tickets"), ("library", "books"),
         ("clinic", "schedules"), ("school", "lessons"), ("harbour", "boats"), ("bakery", "starters")]
    )
)


_WRITES: list[Path] = []


def write(path: Path, **changes: Any) -> None:
    data = json.loads(json.dumps(BASE))
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    path.write_text(json.dumps(data))
    # Some file systems have a coarse mtime clock; give every write its own, later mtime.
    _WRITES.append(path)
    stamp = time.time() + len(_WRITES)
    os.utime(path, (stamp, stamp))


def reloader_for(path: Path, data_dir: Path) -> tuple[FrekiSettings, SettingsReloader]:
    write(path, data_dir=str(data_dir))
    live = FrekiSettings.load(path)
    from freki.api.operations import RELOADABLE

    return live, SettingsReloader(live=live, load=lambda: FrekiSettings.load(path),
                                  reloadable=RELOADABLE | COMMON_RELOADABLE, path=path)


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_safe_changes_apply_in_place(tmp_path: Path) -> None:
    path = tmp_path / "freki.json"
    live, reloader = reloader_for(path, tmp_path)
    retrieval_before = live.retrieval
    write(path, data_dir=str(tmp_path), retrieval={"top_k": 9, "score_threshold": 0.25}, log={"level": "debug"})
    result = reloader.reload("test")
    assert result.ok and result.applied == {"retrieval.top_k", "retrieval.score_threshold", "log.level"}
    assert (live.retrieval.top_k, live.retrieval.score_threshold, live.log.level) == (9, 0.25, "DEBUG")
    assert live.retrieval is not retrieval_before  # replaced whole, never half-written
    assert reloader.reload("again").applied == frozenset()


def test_restart_only_changes_are_refused_by_name(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "freki.json"
    live, reloader = reloader_for(path, tmp_path)
    write(path, data_dir=str(tmp_path / "elsewhere"), port=50999, embedding_model="other-model",
          store={"backend": "remote"}, retrieval={"top_k": 9})
    with caplog.at_level(logging.WARNING, logger="wolf_service.reload"):
        result = reloader.reload("test")
    assert result.refused == {"data_dir", "port", "embedding_model", "store.backend"}
    # Nothing at all was applied, not even the safe top_k change.
    assert (live.port, live.retrieval.top_k, live.data_dir) == (0, 5, tmp_path)
    message = caplog.records[-1].getMessage()
    assert "refused" in message and "data_dir, embedding_model, port, store.backend" in message


def test_invalid_file_keeps_the_old_settings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "freki.json"
    live, reloader = reloader_for(path, tmp_path)
    path.write_text('{"retrieval": {"top_k": 7,')  # truncated JSON
    with caplog.at_level(logging.ERROR, logger="wolf_service.reload"):
        broken = reloader.reload("test")
    assert "not valid JSON" in broken.error and live.retrieval.top_k == 5
    write(path, data_dir=str(tmp_path), retrieval={"top_k": 0})
    invalid = reloader.reload("test")
    assert "retrieval.top_k" in invalid.error and live.retrieval.top_k == 5
    write(path, data_dir=str(tmp_path), chunking={"min_tokens": 300, "max_tokens": 200})
    assert "min_tokens" in reloader.reload("test").error and live.chunking.max_tokens == 200
    assert all("keeping the current settings" in r.getMessage() for r in caplog.records)


def test_file_changes_are_polled(tmp_path: Path) -> None:
    path = tmp_path / "freki.json"
    live, reloader = reloader_for(path, tmp_path)
    reloader.start_polling(0.05)
    try:
        write(path, data_dir=str(tmp_path), retrieval={"top_k": 11})
        assert wait_for(lambda: live.retrieval.top_k == 11)
    finally:
        reloader.close()


def test_sighup_triggers_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "freki.json"
    live, reloader = reloader_for(path, tmp_path)
    previous = signal.getsignal(signal.SIGHUP)
    try:
        reloader.install_sighup()
        write(path, data_dir=str(tmp_path), max_prompt_chars=1234)
        os.kill(os.getpid(), signal.SIGHUP)
        assert wait_for(lambda: live.max_prompt_chars == 1234)
    finally:
        signal.signal(signal.SIGHUP, previous)


@pytest.mark.integration
def test_running_freki_uses_reloaded_settings(start_freki, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "freki.json"
    data_dir = tmp_path / "data"
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    write(path, data_dir=str(data_dir), retrieval={"top_k": 1})
    settings = FrekiSettings.load(path)
    # What `freki serve --config freki.json` does (minus SIGHUP, which needs the main thread).
    handle = start_freki(settings, reload_from=SettingsSource(lambda: FrekiSettings.load(path), path))
    reloader = ops_of(handle).reloader
    assert reloader is not None
    tenant = "reload"
    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        stub.IndexDocument(index_request("r-geri", GERI_DOC, tenant=tenant))
        stub.IndexDocument(index_request("r-bakery", BAKERY_DOC, tenant=tenant))
        first = stub.IndexDocument(index_request("r-long", LONG_DOC, tenant=tenant))
        query = retrieve_request("Which port does Geri use and how do I feed a starter?", tenant=tenant)
        assert len(stub.RetrieveContext(query).rag_context.documents) == 1

        write(path, data_dir=str(data_dir), retrieval={"top_k": 3},
              chunking={"max_tokens": 60, "min_tokens": 16, "overlap_tokens": 0},
              watch={"folders": [{"path": str(inbox), "tenant_id": tenant}], "debounce_s": 0.1})
        result = reloader.reload("test")
        assert result.ok, result
        assert len(stub.RetrieveContext(query).rag_context.documents) == 3
        # New chunking applies to documents indexed from now on, including a re-sent unchanged one.
        again = stub.IndexDocument(index_request("r-long", LONG_DOC, tenant=tenant))
        assert again.outcome == freki_pb2.INDEX_OUTCOME_UPDATED and again.chunk_count > first.chunk_count
        # The new watch folder is live: a file dropped in it gets indexed.
        (inbox / "note.md").write_text("# Note\n\nThe reload test drops this file into the inbox folder.\n")
        listed = lambda: stub.ListDocuments(freki_pb2.ListDocumentsRequest(tenant_id=tenant)).documents  # noqa: E731
        assert wait_for(lambda: any(d.source.endswith("note.md") for d in listed()), timeout=60)


def test_geri_reloads_generation_defaults_but_not_its_backend(tmp_path: Path) -> None:
    from geri.operations import RELOADABLE as GERI_RELOADABLE
    from geri.settings import GeriSettings

    path = tmp_path / "geri.json"
    base = {"port": 0, "backend": "ollama", "ollama_model": "llama3.2"}
    path.write_text(json.dumps(base))
    live = GeriSettings.load(path)
    reloader = SettingsReloader(live=live, load=lambda: GeriSettings.load(path),
                                reloadable=GERI_RELOADABLE | COMMON_RELOADABLE, path=path)
    path.write_text(json.dumps({**base, "system_prompt": "Answer in one word.", "default_max_tokens": 64,
                                "ollama_options": {"num_thread": 2}}))
    assert reloader.reload("test").applied == {"system_prompt", "default_max_tokens", "ollama_options.num_thread"}
    assert (live.system_prompt, live.default_max_tokens, live.ollama_options) == (
        "Answer in one word.", 64, {"num_thread": 2})
    path.write_text(json.dumps({**base, "ollama_model": "qwen2.5:0.5b", "backend": "embedded"}))
    assert reloader.reload("test").refused == {"ollama_model", "backend"}
    assert (live.ollama_model, live.backend, live.system_prompt) == ("llama3.2", "ollama", "Answer in one word.")
