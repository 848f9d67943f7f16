"""Prometheus metrics: a real Freki on port 0, scraped over HTTP while real calls run."""

from __future__ import annotations

import urllib.request
import uuid

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from wolf.v1 import freki_pb2

from tests.freki.api.corpus_support import BAKERY_DOC, GERI_DOC
from tests.wolf_service.conftest import freki_stub, index_request, metrics_url, ops_of, retrieve_request

pytestmark = pytest.mark.integration


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of the endpoint as {(name, labels): value}."""
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.status == 200
        text = reply.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text) for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_counters_move_with_real_calls(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(metrics={"port": 0})
    url = metrics_url(handle)
    before = scrape(url)
    index = {"service": "freki", "method": "FrekiService/IndexDocument", "code": "OK"}
    assert value(before, "wolf_rpc_requests_total", **index) == 0

    with grpc.insecure_channel(handle.address) as channel:
        stub = freki_stub(channel)
        first = stub.IndexDocument(index_request("metrics-geri", GERI_DOC, tenant="metrics"))
        stub.IndexDocument(index_request("metrics-geri", GERI_DOC, tenant="metrics"))  # unchanged
        stub.IndexDocument(index_request("metrics-bakery", BAKERY_DOC, tenant="metrics"))
        # The model is shared by the whole session: a query no other test sends misses, then hits. The same
        # request again is answered by the result cache; with another top_k, by the query-embedding cache.
        query = f"Which port does Geri listen on? ({uuid.uuid4().hex})"
        for top_k in (0, 0, 2):
            stub.RetrieveContext(retrieve_request(query, tenant="metrics", top_k=top_k))
        with pytest.raises(grpc.RpcError) as bad:
            stub.RetrieveContext(retrieve_request("", tenant="metrics"))
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    after = scrape(url)
    assert value(after, "wolf_rpc_requests_total", **index) == 3
    retrieve = {"service": "freki", "method": "FrekiService/RetrieveContext"}
    assert value(after, "wolf_rpc_requests_total", **retrieve, code="OK") == 3
    assert value(after, "wolf_rpc_requests_total", **retrieve, code="INVALID_ARGUMENT") == 1
    assert value(after, "wolf_rpc_duration_seconds_count", **retrieve, code="OK") == 3
    assert value(after, "wolf_rpc_duration_seconds_sum", **index) > 0
    # A caller's mistake is not a backend error.
    assert value(after, "wolf_backend_errors_total", **retrieve, code="INVALID_ARGUMENT") == 0
    assert value(after, "freki_documents_indexed_total", outcome="created") == 2
    assert value(after, "freki_documents_indexed_total", outcome="unchanged") == 1
    assert value(after, "freki_chunks_indexed_total") >= first.chunk_count + 1
    assert value(after, "freki_chunks_embedded_total") >= first.chunks_embedded
    # Embedder counters are process-wide (shared model): compare deltas.
    assert value(after, "freki_embeddings_computed_total") > value(before, "freki_embeddings_computed_total")
    assert value(after, "freki_query_cache_hits_total") >= value(before, "freki_query_cache_hits_total") + 1
    assert value(after, "freki_query_cache_misses_total") >= value(before, "freki_query_cache_misses_total") + 1
    for name, moved in (("freki_result_cache_hits_total", 1), ("freki_result_cache_misses_total", 2)):
        assert value(after, name) == value(before, name) + moved, name
    assert value(after, "freki_result_cache_bytes") > 0
    assert value(after, "freki_index_queue_depth") == 0
    assert value(after, "wolf_rpc_in_flight", service="freki", method="FrekiService/IndexDocument") == 0
    # Process metrics: memory, CPU, open files of this very process.
    assert value(after, "process_resident_memory_bytes") > 100 * 2**20
    assert value(after, "process_cpu_seconds_total") > 0 and value(after, "process_open_fds") > 0
    assert any(name == "python_info" for name, _ in after)


def test_each_server_has_its_own_registry_and_port(start_freki) -> None:  # type: ignore[no-untyped-def]
    a = start_freki(metrics={"port": 0})
    b = start_freki(metrics={"port": 0})
    url_a = metrics_url(a)
    url_b = metrics_url(b)
    assert url_a != url_b
    with grpc.insecure_channel(a.address) as channel:
        freki_stub(channel).GetIndexStatus(freki_pb2.GetIndexStatusRequest())
    status = {"service": "freki", "method": "FrekiService/GetIndexStatus", "code": "OK"}
    assert value(scrape(url_a), "wolf_rpc_requests_total", **status) == 1
    assert value(scrape(url_b), "wolf_rpc_requests_total", **status) == 0


def test_metrics_are_off_by_default_and_stop_with_the_server(start_freki) -> None:  # type: ignore[no-untyped-def]
    off = start_freki()
    assert ops_of(off).metrics_server is None
    on = start_freki(metrics={"port": 0})
    url = metrics_url(on)
    scrape(url)
    on.stop(0.5)
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=2)
