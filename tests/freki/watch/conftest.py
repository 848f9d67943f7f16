"""Fixtures for watch-folder tests: a real temp folder, the real engine and model, the real gRPC server."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from freki.watch.watcher import Watcher
from wolf_service.serving import ServerHandle

TENANT = "default"


def watch_settings(data_dir: Path, folder: Path, **watch: object) -> FrekiSettings:
    """Small chunks (so short texts still split), a short debounce, one watched folder."""
    spec: dict[str, object] = {"folders": [{"path": str(folder), "name": "docs"}], "debounce_s": 0.3}
    spec.update(watch)
    return FrekiSettings(
        host="127.0.0.1", port=0, data_dir=data_dir, shutdown_grace_s=1.0,
        chunking={"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
        watch=spec,  # type: ignore[arg-type]
    )


def paragraphs(topic: str, n: int) -> str:
    """``n`` distinct paragraphs about ``topic`` (distinct words, so chunks differ)."""
    return "\n\n".join(
        f"Section {i} about {topic}. The {topic} record number {i} notes that observers counted {i * 7 + 3} "
        f"animals near marker {topic}-{i}. Weather on day {i} was {['mild', 'cold', 'windy', 'wet'][i % 4]}, "
        f"and the survey team {['walked', 'drove', 'camped', 'waited'][i % 4]} beside lake {i} until dusk."
        for i in range(n)
    )


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll until ``predicate()`` holds (file events arrive asynchronously)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def settle(watcher: Watcher, timeout: float = 60.0) -> None:
    """Let pending events arrive, then wait until the watcher has nothing left to do."""
    time.sleep(0.3)
    assert watcher.wait_idle(timeout), f"watcher still busy: {watcher.status()}"


@dataclass
class Watched:
    """A running Freki watching ``folder``."""

    folder: Path
    settings: FrekiSettings
    engine: FrekiEngine
    watcher: Watcher
    handle: ServerHandle
    stub: freki_pb2_grpc.FrekiServiceStub

    def doc_ids(self) -> set[str]:
        return {r.document_id for r in self.engine.registry.iterate(TENANT)}

    def search(self, text: str, top_k: int = 5) -> list[common_pb2.RetrievedDocument]:
        request = common_pb2.WolfRequest(request_id="t", model_type=common_pb2.RAG, prompt=text,
                                         retrieval=common_pb2.RetrievalOptions(top_k=top_k))
        response = self.stub.RetrieveContext(request, timeout=30)
        return list(response.rag_context.documents)

    def status(self) -> freki_pb2.IndexStatus:
        return self.stub.GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=30)


def start_watched(folder: Path, data_dir: Path, embedder, **watch: object) -> tuple[Watched, Callable[[], None]]:  # type: ignore[no-untyped-def]
    """Start engine + watcher + server; returns the handle bundle and a stop function."""
    settings = watch_settings(data_dir, folder, **watch)
    engine = FrekiEngine(settings, embedder=embedder)
    watcher = Watcher(engine, settings)
    handle, engine = build_server(settings, engine=engine, watcher=watcher)
    channel = grpc.insecure_channel(handle.address)

    def stop() -> None:
        channel.close()
        handle.stop(1.0)  # stops the watcher too (a closer)
        engine.close()

    return Watched(folder, settings, engine, watcher, handle, freki_pb2_grpc.FrekiServiceStub(channel)), stop


@pytest.fixture
def watched(tmp_path: Path, embedder) -> Iterator[Watched]:  # type: ignore[no-untyped-def]
    folder = tmp_path / "docs"
    folder.mkdir()
    bundle, stop = start_watched(folder, tmp_path / "data", embedder)
    try:
        settle(bundle.watcher)
        yield bundle
    finally:
        stop()
