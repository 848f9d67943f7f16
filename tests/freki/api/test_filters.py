"""Metadata filters over gRPC on the real model and engine: list elements (any / all), numeric and date
ranges, negation, caller metadata that shares a name with a system field, and the refusals."""

from __future__ import annotations

import uuid

import grpc
import pytest
from wolf.v1 import common_pb2, freki_pb2

pytestmark = pytest.mark.integration

TENANT = "filters"
ALL = common_pb2.METADATA_MATCH_ALL

# A SmartBreeds-style note, an ImmoNow-style note whose own ``source_type`` shadows the system field,
# and a plain text document whose lists and numbers come from the request.
NOTE = """---
title: Feeding a senior Labrador
topics: [health, diet]
year: 2021
published: 2021-03-04
source_type: docs
---
# Feeding
Senior Labradors need fewer calories and more joint support in their diet.
"""
CARE = """---
title: Grooming a Poodle
topics: [care]
year: 2023
published: 2023-06-01T09:30:00+02:00
---
# Grooming
Poodles need professional grooming every six weeks and daily brushing.
"""
VET = "Vaccination schedule for puppies: the first shots at eight weeks, boosters every four weeks."


def _index(stub, doc_id: str, content: str, **kw) -> freki_pb2.IndexDocumentResponse:  # type: ignore[no-untyped-def]
    return stub.IndexDocument(freki_pb2.IndexDocumentRequest(
        request_id=uuid.uuid4().hex, tenant_id=TENANT, document_id=doc_id, content=content, **kw), timeout=60)


def _docs(stub, *filters: common_pb2.MetadataFilter) -> set[str]:  # type: ignore[no-untyped-def]
    reply = stub.RetrieveContext(common_pb2.WolfRequest(
        request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt="dog care and health", tenant_id=TENANT,
        retrieval=common_pb2.RetrievalOptions(top_k=10, score_threshold=0.0, filters=list(filters)),
    ), timeout=30)
    return {d.document_id for d in reply.rag_context.documents}


def _flt(key: str, *values: str, **kw) -> common_pb2.MetadataFilter:  # type: ignore[no-untyped-def]
    return common_pb2.MetadataFilter(key=key, values=list(values), **kw)


@pytest.fixture(scope="module")
def dogs(freki_stub):  # type: ignore[no-untyped-def]
    _index(freki_stub, "notes/labrador#diet", NOTE, content_type="markdown")
    _index(freki_stub, "notes/poodle.md", CARE, content_type="markdown")
    _index(freki_stub, "vet.txt", VET, content_type="text", metadata={"year": "2019", "clinic": "north"},
           metadata_lists={"topics": common_pb2.MetadataValues(values=["health", "vaccines"])})
    return freki_stub


def test_list_metadata_matches_any_element(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("topics", "health")) == {"notes/labrador#diet", "vet.txt"}
    assert _docs(dogs, _flt("topics", "diet", "care")) == {"notes/labrador#diet", "notes/poodle.md"}


def test_list_metadata_can_require_every_value(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("topics", "health", "diet", match=ALL)) == {"notes/labrador#diet"}
    assert _docs(dogs, _flt("topics", "health", "care", match=ALL)) == set()


def test_negation_excludes_list_elements(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("topics", "health", exclude=True)) == {"notes/poodle.md"}


def test_numeric_ranges(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("year", gte="2020")) == {"notes/labrador#diet", "notes/poodle.md"}
    assert _docs(dogs, _flt("year", gt="2019", lt="2022.5")) == {"notes/labrador#diet"}
    assert _docs(dogs, _flt("year", gte="2020", exclude=True)) == {"vet.txt"}
    assert _docs(dogs, _flt("year", "2019")) == {"vet.txt"}  # the string still matches by value


def test_date_ranges_compare_instants(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("published", gte="2022-01-01")) == {"notes/poodle.md"}
    # 09:30+02:00 is 07:30 UTC: before 08:00Z, after 07:00Z
    assert _docs(dogs, _flt("published", lt="2023-06-01T08:00:00Z", gt="2023-06-01T07:00:00Z")) == {
        "notes/poodle.md"}
    assert _docs(dogs, _flt("published", lte="2021-12-31")) == {"notes/labrador#diet"}


def test_caller_metadata_wins_over_the_system_field_of_the_same_name(dogs) -> None:  # type: ignore[no-untyped-def]
    # ImmoNow filters its own source_type; the note that sets it matches, not the system content type
    assert _docs(dogs, _flt("source_type", "docs")) == {"notes/labrador#diet"}
    # documents that do not set source_type still answer with the system field (older clients' filter)
    assert _docs(dogs, _flt("source_type", "markdown")) == {"notes/poodle.md"}
    # the system field under its unambiguous name
    assert _docs(dogs, _flt("@content_type", "markdown")) == {"notes/labrador#diet", "notes/poodle.md"}
    assert _docs(dogs, _flt("@document_id", "vet.txt", exclude=True)) == {"notes/labrador#diet", "notes/poodle.md"}


def test_filters_combine(dogs) -> None:  # type: ignore[no-untyped-def]
    assert _docs(dogs, _flt("topics", "health"), _flt("year", lt="2020")) == {"vet.txt"}


def test_lists_come_back_whole_and_joined(dogs) -> None:  # type: ignore[no-untyped-def]
    reply = dogs.RetrieveContext(common_pb2.WolfRequest(
        request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt="labrador diet", tenant_id=TENANT,
        retrieval=common_pb2.RetrievalOptions(top_k=1, score_threshold=0.0,
                                              document_ids=["notes/labrador#diet"])), timeout=30)
    doc = reply.rag_context.documents[0]
    assert doc.metadata["topics"] == "health, diet"
    assert list(doc.metadata_lists["topics"].values) == ["health", "diet"]
    assert "year" not in doc.metadata_lists and doc.metadata["year"] == "2021"
    info = dogs.GetDocument(freki_pb2.GetDocumentRequest(tenant_id=TENANT, document_id="vet.txt"), timeout=30)
    assert list(info.metadata_lists["topics"].values) == ["health", "vaccines"]


@pytest.mark.parametrize(("flt", "message"), [
    (_flt("year", "2021", gte="2020"), "both values and range bounds"),
    (_flt("year", gte="2020", lt="2024-01-01"), "must all be numbers or all ISO 8601 dates"),
    (_flt("year", gte="soon"), "must all be numbers or all ISO 8601 dates"),
    (_flt("@nope", "x"), "not a system field"),
    (_flt("@source", gte="1"), "text field"),
    (_flt("year"), "at least one value or a range bound"),
])
def test_malformed_filters_are_refused_by_name(dogs, flt, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        _docs(dogs, flt)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in (err.value.details() or "") and "retrieval.filters[0]" in (err.value.details() or "")


def test_a_key_in_both_metadata_maps_is_refused(dogs) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        _index(dogs, "twice.txt", "text", metadata={"topics": "a"},
               metadata_lists={"topics": common_pb2.MetadataValues(values=["b"])})
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "both metadata and metadata_lists" in (
        err.value.details() or "")


def test_list_metadata_counts_against_the_size_limit(dogs) -> None:  # type: ignore[no-untyped-def]
    for big in (common_pb2.MetadataValues(values=["x" * 1000] * 40), common_pb2.MetadataValues(values=[""] * 20_000)):
        with pytest.raises(grpc.RpcError) as err:
            _index(dogs, "big.txt", "text", metadata_lists={"tags": big})
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "limits.metadata_bytes" in (
            err.value.details() or "")


@pytest.mark.parametrize(("options", "limit"), [
    ({"query_variants": [f"variant {i}" for i in range(9)]}, "limits.max_query_variants"),
    ({"filters": [_flt(f"k{i}", "x") for i in range(33)]}, "limits.max_filters"),
    ({"filters": [_flt("topics", *[str(i) for i in range(1025)])]}, "limits.max_filter_values"),
    ({"document_ids": [f"d{i}" for i in range(1025)]}, "limits.max_document_ids"),
    ({"filters": [_flt("topics", "x" * 8193)]}, "limits.metadata_value_chars"),
])
def test_oversized_queries_are_refused_naming_the_limit(dogs, options, limit) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as err:
        dogs.RetrieveContext(common_pb2.WolfRequest(
            request_id=uuid.uuid4().hex, model_type=common_pb2.RAG, prompt="dogs", tenant_id=TENANT,
            retrieval=common_pb2.RetrievalOptions(top_k=3, **options)), timeout=30)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and limit in (err.value.details() or "")
