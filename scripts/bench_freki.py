"""Freki speed through its gRPC API: index throughput, RetrieveContext latency and concurrency, vs txtai.

Prints figures; asserts nothing. Sections:

0. Encoders: the bare model under torch (``SentenceTransformer.encode``), ONNX Runtime (Freki's
   default, freki/embed/encoders.py) and the bf16 runner Freki uses for indexing batches: cosine to
   torch, batch throughput, one-query latency.
1. Index throughput: N SciFact abstracts (cut to ~80 words, one chunk each) through IndexDocument with 8
   concurrent clients (``freki serve`` in its own process, as in sections 3 and 4), in chunks/s,
   next to raw ``SentenceTransformer.encode`` on the same chunk
   texts, and next to the raw ONNX encoder (the ceiling of the engine Freki runs).
2. RetrieveContext p50/p99 (single client, query embedding included: every query text is new, so
   the LRU cache never answers) at 10k and 100k chunks, dense and hybrid. The collections are
   synthesised from real indexed SciFact chunks (see ``synthesise``): embedding 100k real chunks
   takes hours on this box. Query texts are real SciFact claims.
3. Throughput with 1, 8 and 64 concurrent clients (distinct queries), queries/s, against ``freki serve``
   running in its own process as deployed.
4. Side by side with txtai (same packaged MiniLM model, hybrid = dense + BM25; txtai is a library, so
   in this process) on a SciFact subset
   (all documents judged for the test claims + random others): index wall time, query p50,
   nDCG@10, and Freki's figures as ratios to txtai's.

    python scripts/bench_freki.py            # ~15-25 min on a busy 2-core box
    python scripts/bench_freki.py --quick    # a few minutes: small N, 10k only, small txtai subset
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from evalsets import scifact  # noqa: E402
from evalsets.harness import (  # noqa: E402
    CACHE,
    data_dir_for,
    eval_settings,
    evaluate,
    index_corpus,
    retrieve,
    retrieve_request,
    run_queries,
    running_freki,
    shared_embedder,
)

from freki.embed.embedder import ModelIdentity, resolve_model_path  # noqa: E402
from freki.embed.encoders import BatchedEncoder, Encoder, OnnxEncoder, TorchEncoder  # noqa: E402
from freki.embed.onnx_export import default_cache_dir, export_onnx  # noqa: E402
from freki.embed.runners import TorchRunner  # noqa: E402
from freki.embed.sparse import SparseEncoder  # noqa: E402
from freki.ingest.indexing import CHUNK_SEALED_FIELDS  # noqa: E402
from freki.ingest.registry import DocumentRecord, DocumentRegistry  # noqa: E402
from freki.settings import FrekiSettings  # noqa: E402
from freki.store import ChunkPoint, CollectionSpec, EdgeStore, StoredPoint  # noqa: E402
from freki.store.keys import KeyStore  # noqa: E402
from freki.store.sealed import SealedStore  # noqa: E402

BENCH_CACHE = CACHE.parent / "freki-bench"


def one_chunk_texts(n: int) -> dict[str, str]:
    """The first n SciFact abstracts, cut to ~80 words so each is one chunk (no semantic splitting)."""
    es = scifact.load()
    return {doc_id: " ".join(text.split()[:80]) for doc_id, text in list(es.corpus.items())[:n]}


def bench_indexing(n: int) -> tuple[float, float]:
    texts = one_chunk_texts(n)
    import grpc
    from wolf.v1 import freki_pb2_grpc

    with (tempfile.TemporaryDirectory() as tmp, freki_process(eval_settings(Path(tmp))) as target,
          grpc.insecure_channel(target) as channel):
        started = time.perf_counter()
        stats = index_corpus(freki_pb2_grpc.FrekiServiceStub(channel), texts, Path(tmp), workers=8, log_every=10**9)
        freki_s = time.perf_counter() - started
        stream_s = _index_streamed(target, texts)
    chunks = stats["chunks"]
    freki_rate = chunks / freki_s
    print(f"index: {len(texts)} docs -> {chunks:.0f} chunks in {freki_s:.1f} s = {freki_rate:.1f} chunks/s via "
          f"IndexDocument (8 clients, {shared_embedder(eval_settings(Path('.'))).backend} encoder)", flush=True)
    print(f"index: the same docs again, as new ids, over one IndexDocuments stream: {stream_s:.1f} s = "
          f"{chunks / stream_s:.1f} chunks/s", flush=True)
    raw_rate = 0.0
    for name, encoder in raw_encoders().items():
        started = time.perf_counter()
        encoder.encode(list(texts.values()), batch_size=32)
        rate = len(texts) / (time.perf_counter() - started)
        raw_rate = raw_rate or rate  # the first is sentence-transformers' own model.encode
        print(f"  raw {name} encode of the same texts: {rate:.1f} texts/s; Freki / raw = {freki_rate / rate:.2f}",
              flush=True)
    return freki_rate, raw_rate


def _index_streamed(target: str, texts: dict[str, str]) -> float:
    """Seconds to index ``texts`` (under fresh ids) over one IndexDocuments stream."""
    import grpc
    from wolf.v1 import freki_pb2, freki_pb2_grpc

    requests = (freki_pb2.IndexDocumentRequest(request_id=uuid.uuid4().hex, document_id=f"stream/{d}", content=t)
                for d, t in texts.items())
    with grpc.insecure_channel(target) as channel:
        started = time.perf_counter()
        results = list(freki_pb2_grpc.FrekiServiceStub(channel).IndexDocuments(requests, timeout=3600))
        elapsed = time.perf_counter() - started
    failed = [r.error_code for r in results if r.error_code]
    if failed:
        print(f"  {len(failed)} documents refused over the stream: {failed[:3]}", flush=True)
    return elapsed


@functools.cache
def raw_encoders() -> dict[str, Encoder]:
    """The bare model: sentence-transformers' ``model.encode`` (torch) and the ONNX export Freki runs."""
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path("all-MiniLM-L6-v2")
    model = SentenceTransformer(path, device="cpu")
    onnx = OnnxEncoder(export_onnx(model, path, default_cache_dir()), model.tokenizer, max_length=256)
    # Every batch on each runner Freki may pick for indexing batches (freki/embed/bulk_choice.py).
    fp32 = BatchedEncoder(model.tokenizer, 256, TorchRunner(model))
    bf16 = BatchedEncoder(model.tokenizer, 256, TorchRunner(model, bf16=True))
    return {"torch (model.encode)": TorchEncoder(model), "onnx": onnx, "torch-fp32 (traced, workers)": fp32,
            "bf16 (traced, workers)": bf16}


def bench_encoders(texts: list[str], queries: list[str]) -> None:
    """Torch vs ONNX on the bare model: agreement, batch throughput and one-query latency."""
    encoders = raw_encoders()
    vectors = {name: enc.encode(texts, batch_size=32) for name, enc in encoders.items()}
    ref = vectors["torch (model.encode)"]
    for name, got in list(vectors.items())[1:]:
        cosines = np.sum(ref * got, axis=1)
        print(f"encoders: cosine {name} vs torch over {len(texts)} passages: min {cosines.min():.6f}, "
              f"mean {cosines.mean():.6f}", flush=True)
    for name, enc in encoders.items():
        started = time.perf_counter()
        enc.encode(texts, batch_size=32)
        rate = len(texts) / (time.perf_counter() - started)
        times = []
        for q in queries:
            t0 = time.perf_counter()
            enc.encode([q], batch_size=1)
            times.append((time.perf_counter() - t0) * 1000)
        print(f"  {name:20s}: {rate:6.1f} passages/s (batch 32); one query p50 {statistics.median(times):.1f} ms",
              flush=True)
    # What micro-batching can save: CPU time (all threads) per query text at several batch sizes.
    onnx = encoders["onnx"]
    for size in (1, 8, 64):
        before = os.times()
        for start in range(0, len(queries), size):
            onnx.encode(queries[start:start + size], batch_size=size)
        after = os.times()
        cpu = (after.user - before.user) + (after.system - before.system)
        print(f"  onnx CPU per query, batches of {size:2d}: {cpu * 1000 / len(queries):.1f} ms", flush=True)


def complete_seed_dir(preferred: Path | None = None) -> Path | None:
    """A completely indexed SciFact cache to take real chunks from: ``preferred`` (the current code's) when it
    is complete, else the newest complete one (its key changes with the index code; seed chunks only need to be
    real ones); None when there is none."""
    if preferred is not None and (preferred / "eval-complete.json").exists():
        return preferred
    found = sorted(CACHE.glob("scifact-*/eval-complete.json"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


def seed_points(seed_dir: Path, collection: str = "freki_chunks") -> list[StoredPoint]:
    """Every chunk (with its vectors, payload unsealed) of an indexed Freki data dir."""
    keys = KeyStore(seed_dir / "keys.sqlite")
    store = SealedStore(EdgeStore(seed_dir / "qdrant"), keys, CHUNK_SEALED_FIELDS)
    try:
        identity = shared_embedder(eval_settings(Path("."))).identity
        store.ensure_collection(CollectionSpec(collection, identity.dimension, identity.name))
        points: list[StoredPoint] = []
        offset: str | None = None
        while True:
            page, offset = store.scroll([], limit=1000, offset=offset, with_vectors=True)
            points.extend(page)
            if offset is None:
                if not points or "content" not in points[0].payload:
                    sys.exit(f"the seed index {seed_dir} yields no readable chunks")
                return points
    finally:
        store.close()
        keys.close()


def synth_dir(size: int, seeds: int | str) -> Path:
    """Where ``synthesise`` keeps a collection of ``size`` chunks made from ``seeds`` real ones ("*": any)."""
    return BENCH_CACHE / f"synth-v2-{size}-{seeds}"


def synthesise(size: int, seed: list[StoredPoint], identity: ModelIdentity) -> Path:
    """A Freki data dir with ``size`` chunks: the real seed chunks, then perturbed copies.

    Copy i of a seed chunk keeps its text (so its BM25 vector is real) and gets the seed vector
    plus Gaussian noise, renormalised (cosine to the seed ~0.9): realistic neighbourhood density
    for HNSW without embedding 100k texts. Each synthetic document is committed (its own generation and
    registry record), or Freki's start-up consistency pass would remove its chunks as orphans. Payloads are
    stored unsealed (readers accept both). Cached under .cache/freki-bench.
    """
    target = synth_dir(size, len(seed))
    marker = target / "complete"
    if marker.exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    # No flush per write (the WAL has every write; close() flushes): one flush per registry record made
    # the 10k build take minutes and the 100k build most of an hour on a busy box.
    store = EdgeStore(target / "qdrant", flush_writes=False)
    store.ensure_collection(CollectionSpec("freki_chunks", identity.dimension, identity.name))
    registry = DocumentRegistry(EdgeStore(target / "qdrant", flush_writes=False), "freki_chunks_documents")
    rng = np.random.default_rng(0)
    sparse = SparseEncoder()
    base = np.asarray([p.dense for p in seed], dtype=np.float32)
    batch: list[ChunkPoint] = []
    documents: dict[str, tuple[dict[str, object], int]] = {}  # document id -> (a payload, chunks)
    for i in range(size):
        src = seed[i % len(seed)]
        vec = base[i % len(seed)]
        if i >= len(seed):
            vec = vec + rng.normal(0, 0.022, vec.shape).astype(np.float32)
            vec /= np.linalg.norm(vec)
        doc_id = f"{src.payload.get('document_id')}~{i // len(seed)}"
        generation = uuid.uuid5(uuid.NAMESPACE_URL, f"synth-doc/{doc_id}").hex
        payload = dict(src.payload, document_id=doc_id, generation=generation)
        documents[doc_id] = (payload, documents.get(doc_id, (payload, 0))[1] + 1)
        batch.append(ChunkPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, f"synth/{i}")), vec.tolist(),
                                sparse.encode_passage(str(src.payload.get("content", ""))), payload))
        if len(batch) == 2000:
            store.upsert(batch)
            batch = []
    if batch:
        store.upsert(batch)
    for doc_id, (payload, chunks) in documents.items():
        registry.put(DocumentRecord(
            tenant_id=str(payload["tenant_id"]), document_id=doc_id, owner_id=str(payload.get("owner_id", "")),
            source=str(payload.get("source", "")), content_type=str(payload.get("source_type", "text")),
            content_hash=str(payload.get("doc_hash", "")), chunk_count=chunks,
            indexed_at=str(payload.get("indexed_at", "")), embedding_model=identity.name,
            generation=str(payload["generation"]),
        ))
    registry.store.close()
    print(f"  building HNSW for {size} points (blocks a few minutes at 100k)...", flush=True)
    store.optimize()
    store.close()
    marker.write_text("ok")
    return target


def latency(data_dir: Path, queries: list[str], label: str) -> None:
    with running_freki(eval_settings(data_dir)) as stub:
        retrieve(stub, "warm up the model and the store", "dense", 5)
        for mode in ("dense", "hybrid"):
            times = []
            for q in queries:
                started = time.perf_counter()
                retrieve(stub, f"{q} ({label} {mode})", mode, 5)  # a new text: the LRU cache never answers
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
            print(f"RetrieveContext {label} {mode:6s}: p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms "
                  f"({len(times)} queries, 1 client)", flush=True)


@contextlib.contextmanager
def freki_process(settings: FrekiSettings, pid: list[int] | None = None) -> Iterator[str]:
    """``freki serve`` with ``settings`` in its own process, as deployed; yields its address when SERVING
    (and appends the server's process id to ``pid`` when given).

    Load generated in the server's own process (client threads, asyncio tasks) would compete with it
    for the GIL and measure the client too.
    """
    import json

    from demo import free_port, start_service, stop_service, wait_serving

    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "freki.json"
        config.write_text(json.dumps(settings.model_dump(mode="json", exclude={"port", "host"})))
        service = start_service("freki", "Freki (bench)", ["--config", str(config), "--log-level", "WARNING"],
                                free_port(), Path(tmp))
        try:
            wait_serving([service], timeout_s=180)
            if pid is not None:
                pid.append(service.proc.pid)
            yield service.target
        finally:
            stop_service(service)


def encoder_ceiling(queries: list[str], threads: int) -> tuple[float, float]:
    """Queries/s of the query encoder alone with ``threads`` callers, and its CPU time per query (this
    process's, all threads): the server's embedder (same model, runner and micro-batching settings) in this
    process, each caller embedding distinct texts.

    With 64 callers this is the encoder-bound ceiling of ``concurrency``: what the server could serve if
    everything else a RetrieveContext does (gRPC, search, fusion) cost nothing and no load client shared
    the cores.
    """
    import threading

    from freki.engine.config import build_embedder

    settings = eval_settings(Path("."))
    embedder = build_embedder(settings)
    embedder.enable_batching(settings.retrieval.query_batch_max, settings.retrieval.query_batch_wait_ms / 1000)
    embedder.embed_query("warm up the encoder")
    pending = iter(queries)
    lock = threading.Lock()

    def caller() -> None:
        while True:
            with lock:
                text = next(pending, None)
            if text is None:
                return
            embedder.embed_query(text)

    workers = [threading.Thread(target=caller) for _ in range(threads)]
    cpu, started = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return len(queries) / (time.perf_counter() - started), (time.process_time() - cpu) / len(queries)


def proc_stat(path: Path) -> list[str]:
    """The fields of a /proc ``…/stat`` file after the command name: ppid is [1], utime [11], stime [12],
    cutime [13], cstime [14] (clock ticks)."""
    return path.read_text().rsplit(")", 1)[1].split()


def stat_cpu_seconds(fields: list[str], waited_children: bool = False) -> float:
    """User + system CPU seconds in ``proc_stat`` fields (with ``waited_children``, also what the children the
    process has waited for used)."""
    ticks = fields[11:15] if waited_children else fields[11:13]
    return sum(int(t) for t in ticks) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (all its threads)."""
    return stat_cpu_seconds(proc_stat(Path(f"/proc/{pid}/stat")))


def tree_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a process and its live descendants (Freki's parser sandboxes are child processes);
    plus what its waited-for children used (cutime + cstime)."""
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            stats[int(stat.parent.name)] = proc_stat(stat)
        except (OSError, ValueError):
            continue  # exited while scanning
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, fields in stats.items() if int(fields[1]) == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(stat_cpu_seconds(stats[member], waited_children=member == pid) for member in tree if member in stats)


def concurrency(data_dir: Path, queries: list[str], levels: list[int], total: int
                ) -> tuple[dict[int, float], dict[int, tuple[float, float]]]:
    """Hybrid queries/s with ``clients`` calls in flight, against ``freki serve`` in its own process.

    The load comes from asyncio tasks on one channel in this process (one task = one client with
    one call in flight), each sending distinct query texts so the LRU cache never answers. Also prints the
    CPU time per query of the server and of this load client, and the CPU-bound ceiling they imply: the
    cores of the box divided by the CPU time one query costs at one client (server + client).
    """
    import asyncio

    import grpc
    from wolf.v1 import freki_pb2_grpc

    results: dict[int, float] = {}
    costs: dict[int, tuple[float, float]] = {}  # clients -> CPU seconds per query (server, load client)
    pids: list[int] = []
    cores = len(os.sched_getaffinity(0))
    with freki_process(eval_settings(data_dir), pids) as target:

        async def run(clients: int, texts: list[str]) -> tuple[float, float, float]:
            async with grpc.aio.insecure_channel(target) as channel:
                stub = freki_pb2_grpc.FrekiServiceStub(channel)
                await stub.RetrieveContext(retrieve_request("warm up", "hybrid", 5), timeout=60)
                pending = iter(texts)

                async def client() -> None:
                    for text in pending:
                        await stub.RetrieveContext(retrieve_request(text, "hybrid", 5), timeout=60)

                server0, client0, started = cpu_seconds(pids[0]), time.process_time(), time.perf_counter()
                await asyncio.gather(*(client() for _ in range(clients)))
                wall = time.perf_counter() - started
                return (len(texts) / wall, (cpu_seconds(pids[0]) - server0) / len(texts),
                        (time.process_time() - client0) / len(texts))

        ceiling = 0.0
        for n, clients in enumerate(levels):
            texts = [f"{q} ({n})" for q in queries[:total]]  # new texts for every level
            results[clients], server_cpu, client_cpu = asyncio.run(run(clients, texts))
            costs[clients] = (server_cpu, client_cpu)
            if n == 0:
                ceiling = cores / (server_cpu + client_cpu)
            print(f"throughput hybrid, {clients:2d} concurrent clients: {results[clients]:.1f} queries/s "
                  f"({total} queries, server in its own process); CPU per query: server {server_cpu * 1000:.1f} ms, "
                  f"load client {client_cpu * 1000:.1f} ms; server used {results[clients] * server_cpu:.2f} cores",
                  flush=True)
        print(f"CPU-bound ceiling ({cores} cores / CPU per query at {levels[0]} client): {ceiling:.1f} queries/s; "
              f"{levels[-1]} clients reach {results[levels[-1]] / ceiling:.2f} of it", flush=True)
    return results, costs


def side_by_side(n_docs: int) -> None:
    """Freki (``freki serve`` in its own process, 8 indexing clients) next to txtai in this process."""
    import grpc
    from wolf.v1 import freki_pb2_grpc

    es = scifact.load()
    qrels = es.split("test")
    judged = sorted({d for rel in qrels.values() for d in rel})
    others = [d for d in es.corpus if d not in set(judged)]
    rng = np.random.default_rng(1)
    picked = judged[: n_docs // 2] + list(rng.choice(others, max(0, n_docs - len(judged[: n_docs // 2])),
                                                      replace=False))
    corpus = {d: es.corpus[d] for d in picked}
    sub_qrels = {q: {d: g for d, g in rel.items() if d in corpus} for q, rel in qrels.items()}
    sub_qrels = {q: rel for q, rel in sub_qrels.items() if rel}
    queries = {q: es.queries[q] for q in sub_qrels}
    print(f"side by side on {len(corpus)} SciFact documents, {len(queries)} test claims", flush=True)

    data_dir = data_dir_for(f"bench-sub{len(corpus)}", corpus, eval_settings(Path(".")))
    import shutil

    shutil.rmtree(data_dir, ignore_errors=True)  # time a fresh index every run
    server: list[int] = []
    with freki_process(eval_settings(data_dir), server) as target, grpc.insecure_channel(target) as channel:
        stub = freki_pb2_grpc.FrekiServiceStub(channel)
        started, cpu0, client0 = time.perf_counter(), tree_cpu_seconds(server[0]), time.process_time()
        index_corpus(stub, corpus, data_dir, workers=8, log_every=10**9)
        f_index = time.perf_counter() - started
        # CPU time says what wall time cannot on a shared box: the server's (and its parser sandboxes'), plus
        # the indexing clients'.
        f_cpu = tree_cpu_seconds(server[0]) - cpu0 + time.process_time() - client0
        f_times = []
        for q in queries.values():
            t0 = time.perf_counter()
            retrieve(stub, q, "default", 10)
            f_times.append((time.perf_counter() - t0) * 1000)
        f_ndcg = evaluate(run_queries(stub, queries, "default", 100), sub_qrels)["ndcg@10"]

    from txtai import Embeddings

    model_path = resolve_model_path("all-MiniLM-L6-v2")  # the same packaged weights Freki uses
    emb = Embeddings(path=model_path, content=True, hybrid=True)
    started, cpu0 = time.perf_counter(), time.process_time()
    emb.index([(d, t, None) for d, t in corpus.items()])
    t_index, t_cpu = time.perf_counter() - started, time.process_time() - cpu0
    t_times, runs = [], {}
    for q, text in queries.items():
        t0 = time.perf_counter()
        res = emb.search(text, 100)
        t_times.append((time.perf_counter() - t0) * 1000)
        runs[q] = [(r["id"], r["score"]) for r in res]
    t_ndcg = evaluate(runs, sub_qrels)["ndcg@10"]
    f_p50, t_p50 = statistics.median(f_times), statistics.median(t_times)

    # The same embedding work: txtai embeds each abstract once, cut at the model's 256-word-piece window;
    # Freki embeds every chunk (whole abstracts, with overlap) plus each sentence once for boundaries.
    chunk_texts = [str(p.payload.get("content", "")) for p in seed_points(data_dir)]
    tokenizer = shared_embedder(eval_settings(Path("."))).window_tokens
    words_txtai = sum(min(256, tokenizer(t)) for t in corpus.values())
    words_chunks = sum(tokenizer(t) for t in chunk_texts)
    same_work = Embeddings(path=model_path, content=True, hybrid=True)
    started, cpu0 = time.perf_counter(), time.process_time()
    same_work.index([(str(i), t, None) for i, t in enumerate(chunk_texts)])
    t_chunks, t_chunks_cpu = time.perf_counter() - started, time.process_time() - cpu0
    print(f"embedded word-pieces: txtai {words_txtai}, Freki's {len(chunk_texts)} chunks {words_chunks} "
          f"({words_chunks / words_txtai:.2f}x, before the sentence pass)", flush=True)
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print("| system | index wall s | index CPU s | query p50 ms | nDCG@10 |\n| --- | --- | --- | --- | --- |")
    print(f"| Freki (gRPC, default mode; CPU = server + clients) | {f_index:.1f} | {f_cpu:.1f} | {f_p50:.1f} | "
          f"{f_ndcg:.4f} |")
    print(f"| txtai {version('txtai')} (in-process, hybrid) | {t_index:.1f} | {t_cpu:.1f} | {t_p50:.1f} | "
          f"{t_ndcg:.4f} |")
    print(f"| txtai, indexing Freki's {len(chunk_texts)} chunk texts | {t_chunks:.1f} | {t_chunks_cpu:.1f} | | |")
    print(f"| Freki / txtai | {f_index / t_index:.2f} | {f_cpu / t_cpu:.2f} | {f_p50 / t_p50:.2f} | "
          f"{f_ndcg / t_ndcg:.2f} |")
    print(f"| Freki / txtai on the same chunks | {f_index / t_chunks:.2f} | {f_cpu / t_chunks_cpu:.2f} | | |",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes; skips the 100k collection")
    parser.add_argument("--skip", default="",
                        help="comma list of sections to skip: encoders,index,latency,concurrency,txtai")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    n_index, sizes, n_lat, n_sub = (200, [10_000], 100, 300) if args.quick else (1000, [10_000, 100_000], 300, 1000)
    es = scifact.load()
    queries = list(es.queries.values())
    if "encoders" not in skip:
        passages = list(one_chunk_texts(n_index).values())
        bench_encoders(passages[:256], queries[:100])
    if "index" not in skip:
        bench_indexing(n_index)
    seed_dir = complete_seed_dir(data_dir_for("scifact", es.corpus, eval_settings(Path("."))))
    if seed_dir is None:
        print(f"no indexed SciFact cache under {CACHE}; run scripts/eval_retrieval.py --sets scifact first")
        skip |= {"latency", "concurrency"}
    if seed_dir is not None and ("latency" not in skip or "concurrency" not in skip):
        seed = seed_points(seed_dir)
        identity = shared_embedder(eval_settings(Path("."))).identity
        print(f"seed: {len(seed)} real SciFact chunks", flush=True)
        # The concurrency section serves the 10k collection only: building 100k for it alone takes minutes.
        needed = sizes if "latency" not in skip else [10_000]
        dirs = {size: synthesise(size, seed, identity) for size in needed}
        if "latency" not in skip:
            for size, d in dirs.items():
                latency(d, queries[:n_lat], f"{size // 1000}k")
        if "concurrency" not in skip:
            total = 200 if args.quick else 600
            qps, costs = concurrency(dirs[10_000], queries[n_lat:], [1, 8, 64], total)
            # Also with as many callers as the server has request threads: it never has more queries in flight,
            # so its passes are never fuller than that (the encoder's CPU per query falls with pass size).
            workers = eval_settings(Path(".")).max_workers
            alone = {n: encoder_ceiling([f"{q} (encoder {n})" for q in queries[n_lat:][:total]], n)
                     for n in sorted({1, workers, 64})}
            print(f"query encoder alone, micro-batched as in the server: {alone[1][0]:.1f} queries/s with 1 caller "
                  f"({alone[1][1] * 1000:.1f} ms CPU per query), "
                  f"{alone[workers][0]:.1f} with {workers} (= max_workers; "
                  f"{alone[workers][1] * 1000:.1f} ms), {alone[64][0]:.1f} with 64 "
                  f"({alone[64][1] * 1000:.1f} ms CPU per query; the encoder-bound ceiling)", flush=True)
            server, client = costs[64]
            # The load client runs on the same cores: what the server alone would serve on them is the measured
            # rate scaled by (server + client) / server CPU (both cores busy either way). Both ratios are printed;
            # the target is stated against the first.
            print(f"64 clients vs 1: {qps[64] / qps[1]:.2f}x; 64 clients vs the ceiling: {qps[64] / alone[64][0]:.2f} "
                  f"as measured, {qps[64] * (server + client) / server / alone[64][0]:.2f} with the load client's "
                  f"{client * 1000:.1f} ms CPU per query taken off the server's cores; the server spends "
                  f"{(server - alone[64][1]) * 1000:.1f} ms CPU per query besides what the encoder alone spends",
                  flush=True)
    if "txtai" not in skip:
        side_by_side(n_sub)


if __name__ == "__main__":
    main()
