"""The type registry (``document_types``): a chunk profile and a retriever weight per ``document_type``,
hot-reloaded from the settings file, validated with clear errors; real server, model and Qdrant engine."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from pydantic import ValidationError
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from freki.settings import FrekiSettings
from tests.freki.api.test_service import index, retrieve
from wolf_service.reload import SettingsReloader, SettingsSource
from wolf_service.service_ops import ServiceOps

LONG = " ".join(f"Paragraph {i} says the ferry to the island leaves from pier {i} every hour on weekdays."
                for i in range(12))
BREED = "Golden retrievers are friendly family dogs that love water and need daily exercise."
CARE = "Brush a golden retriever's coat twice a week and check its ears after swimming."


def write(path: Path, data_dir: Path, **document_types: Any) -> None:
    path.write_text(json.dumps({"data_dir": str(data_dir), "host": "127.0.0.1", "port": 0,
                                "chunking": {"max_tokens": 200, "min_tokens": 40, "overlap_tokens": 20},
                                "document_types": document_types}))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder  # type: ignore[no-untyped-def]
           ) -> Iterator[tuple[freki_pb2_grpc.FrekiServiceStub, SettingsReloader, Path, Path]]:
    tmp = tmp_path_factory.mktemp("types")
    path, data_dir = tmp / "freki.json", tmp / "data"
    write(path, data_dir)
    settings = FrekiSettings.load(path)
    engine = FrekiEngine(settings, embedder=embedder)
    handle, _ = build_server(settings, engine=engine,
                             reload_from=SettingsSource(lambda: FrekiSettings.load(path), path))
    ops = handle.closers[0].__self__  # type: ignore[attr-defined]
    assert isinstance(ops, ServiceOps) and ops.reloader is not None
    try:
        with grpc.insecure_channel(handle.address) as channel:
            yield freki_pb2_grpc.FrekiServiceStub(channel), ops.reloader, path, data_dir
    finally:
        handle.stop(1.0)
        engine.close()


@pytest.mark.integration
def test_a_types_chunk_profile_applies_after_a_reload(served) -> None:  # type: ignore[no-untyped-def]
    stub, reloader, path, data_dir = served
    meta = {"document_type": "faq"}
    before = index(stub, "ferry-faq", LONG, tenant_id="types", metadata=meta)
    other = index(stub, "ferry-essay", LONG, tenant_id="types", metadata={"document_type": "essay"})
    assert before.chunk_count == other.chunk_count
    write(path, data_dir, faq={"chunking": {"max_tokens": 40, "min_tokens": 10, "overlap_tokens": 0}})
    assert reloader.reload("test").ok
    again = index(stub, "ferry-faq", LONG, tenant_id="types", metadata=meta)
    assert again.outcome == freki_pb2.INDEX_OUTCOME_UPDATED and again.chunk_count > before.chunk_count
    essay = index(stub, "ferry-essay", LONG, tenant_id="types", metadata={"document_type": "essay"})
    assert essay.chunk_count == other.chunk_count, "other types keep the global chunking"


@pytest.mark.integration
def test_retriever_weights_move_a_type_and_reload_live(served) -> None:  # type: ignore[no-untyped-def]
    stub, reloader, path, data_dir = served
    index(stub, "breed", BREED, tenant_id="weights", metadata={"document_type": "breed"})
    index(stub, "care", CARE, tenant_id="weights", metadata={"document_type": "care"})

    def order() -> list[str]:
        found = retrieve(stub, "golden retriever dogs", tenant_id="weights", top_k=2, score_threshold=0.05)
        return [d.document_id for d in found.rag_context.documents]

    first, second = order()
    write(path, data_dir, **{(d := "breed" if second == "breed" else "care"): {"retriever_weight": 5.0}})
    assert reloader.reload("test").ok
    assert order() == [second, first], "the weighted type comes first (a cached result is not served)"
    write(path, data_dir, **{d: {"retriever_weight": 0.0}})
    assert reloader.reload("test").ok
    assert order() == [first], "weight 0: never found"
    write(path, data_dir)
    assert reloader.reload("test").ok and order() == [first, second]


@pytest.mark.parametrize(("types", "said"), [
    ({"faq": {"chunking": {"max_tokens": 40, "min_tokens": 40}}}, "min_tokens (40) must be below max_tokens"),
    ({"faq": {"chunking": {"max_tokens": 40, "overlap_tokens": 50}}}, "overlap_tokens (50) must be below"),
    ({"faq": {"retriever_weight": -1}}, "greater than or equal to 0"),
    ({"faq": {"weight": 2}}, "Extra inputs are not permitted"),
    ({"bad name!": {}}, "document_types names are"),
    ({f"t{i}": {} for i in range(65)}, "at most 64"),
])
def test_bad_registries_are_refused_clearly(tmp_path: Path, types: dict, said: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(said)):
        FrekiSettings(data_dir=tmp_path, document_types=types)


@pytest.mark.integration
def test_an_invalid_reload_changes_nothing(served) -> None:  # type: ignore[no-untyped-def]
    _, reloader, path, data_dir = served
    write(path, data_dir, faq={"retriever_weight": 2.0})
    assert reloader.reload("test").ok
    write(path, data_dir, faq={"retriever_weight": 99})
    result = reloader.reload("test")
    assert not result.ok and "retriever_weight" in result.error
    assert reloader.live.document_types["faq"].retriever_weight == 2.0  # type: ignore[attr-defined]
    write(path, data_dir)
    assert reloader.reload("test").ok
