"""``answer_cache.*`` reloads without a restart, on a real Geri (embedded SmolLM2) run from a settings file:
a smaller bound keeps the most recently used, 0 drops every entry (turning it back on finds none of them)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.backends.embedded import EmbeddedBackend
from geri.server import build_server
from geri.settings import GeriSettings
from tests.geri.geri_servers_support import embedded_backend  # noqa: F401 - fixture
from tests.wolf_service.conftest import ops_of
from wolf_service.reload import cli_settings

pytestmark = pytest.mark.integration

DOC = common_pb2.RetrievedDocument(document_id="relay", chunk_id="relay#0", relevance_score=0.9, source="relay.md",
                                   content="The relay listens on port 9427 and the dashboard on port 8088.")
CONTEXT = common_pb2.RAGContext(documents=[DOC], retrieval_score=0.9, index_epoch=time.time_ns() // 1000)


def test_answer_cache_settings_apply_on_reload(tmp_path: Path,
                                               embedded_backend: EmbeddedBackend) -> None:  # noqa: F811 - fixture
    path = tmp_path / "geri.json"

    def write(max_entries: int) -> None:
        path.write_text(json.dumps({"host": "127.0.0.1", "port": 0, "backend": "embedded", "shutdown_grace_s": 2.0,
                                    "reload": {"poll_interval_s": 0}, "answering": {"max_tokens": 128},
                                    "answer_cache": {"max_entries": max_entries}}))

    write(2)
    settings, source = cli_settings(GeriSettings, str(path), {})
    handle = build_server(settings, embedded_backend, reload_from=source)
    try:
        reloader = ops_of(handle).reloader
        assert reloader is not None
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)

            def cached(question: str) -> bool:
                return stub.Answer(geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
                    request_id="a", model_type=common_pb2.LLM, prompt=question, context=CONTEXT)),
                    timeout=300).cache_hit

            relay, dashboard = "Which port does the relay listen on?", "Which port is the dashboard on?"
            assert not cached(relay) and not cached(dashboard)  # two entries; the relay's is the older
            assert cached(relay)  # now the dashboard's is the least recently used

            # A smaller bound keeps the most recently used (which entry goes at once: test_answer_cache.py).
            write(1)
            assert reloader.reload("test").applied == frozenset({"answer_cache.max_entries"})
            assert settings.answer_cache.max_entries == 1 and cached(relay)

            write(0)
            assert reloader.reload("test").applied == frozenset({"answer_cache.max_entries"})
            write(1)
            assert reloader.reload("test").ok
            assert not cached(relay)  # turning the cache off dropped it; it is not back with the cache
    finally:
        handle.stop(2.0)
