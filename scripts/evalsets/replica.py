"""An offline replica of Freki's dense, sparse and convex retrieval over the chunks of an indexed eval store.

Measuring a retrieval idea through the API needs code in the service and, for index-time ideas (BM25
constants), a re-index of each corpus (SciFact: 8-20 minutes here). The replica measures first: it reads
every chunk of a cached eval index once (``dump_store``: lexical text, document, dense and sparse vectors,
and the query vectors Freki's own embedder gives), then ranks exactly as the store does:

* dense: cosine to every chunk (the engine's HNSW returns the same top lists here, see ``--validate``);
* sparse: BM25 term weights recomputed from the chunk texts with Freki's tokenizer for any ``Bm25Params``
  (``check_weights`` compares them with the stored vectors), times Qdrant's IDF
  ``ln(1 + (N - df + 0.5) / (df + 0.5))`` over the collection's N chunks;
* convex: ``freki.search.fusion.convex`` over the union of both top lists (cosine for every candidate,
  lexical relevance ``s / (s + half * terms)`` for the sparse top list, 0 elsewhere), as
  ``freki/store/edge_queries.py`` fuses inside the engine.

Documents are ranked by their best chunk, as ``harness.doc_ranking`` ranks the API's answers.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from freki.embed.sparse import Bm25Params, term_index, tokenize
from freki.engine import FrekiEngine
from freki.ingest.indexing import lexical_text
from freki.search import fusion
from scripts.evalsets import EvalSet
from scripts.evalsets.harness import eval_settings, ndcg_at

Ranking = list[tuple[str, float]]


@dataclass
class StoreDump:
    """Every chunk of one eval index and the query vectors of its sets."""

    chunk_ids: list[str]
    documents: list[str]
    texts: list[str]  # what BM25 indexed (the chunk without the overlap from the previous chunk)
    dense: np.ndarray  # (chunks, dim), unit length
    sparse: list[tuple[list[int], list[float]]]  # the stored BM25 term weights
    query_vectors: dict[str, np.ndarray] = field(default_factory=dict)


def dump_store(data_dir: Path, sets: Sequence[EvalSet], cache: Path) -> StoreDump:
    """Read a cached eval index (through a copy: the engine locks its directory) and embed the sets' judged
    queries with Freki's query embedder; the dump is cached in ``cache``."""
    if cache.exists():
        with cache.open("rb") as fh:
            dumped: StoreDump = pickle.load(fh)
        if all(q in dumped.query_vectors for es in sets for split in es.qrels.values() for q in split
               if q in es.queries):
            return dumped
    with tempfile.TemporaryDirectory(prefix="freki-replica-") as tmp:
        copy = Path(tmp) / data_dir.name
        shutil.copytree(data_dir, copy)
        engine = FrekiEngine(eval_settings(copy))
        try:
            dumped = _read_chunks(engine)
            for es in sets:
                for split in es.qrels.values():
                    for q in split:
                        if q in es.queries and q not in dumped.query_vectors:
                            dumped.query_vectors[q] = np.asarray(engine.embedder.embed_query(es.queries[q]), np.float32)
        finally:
            engine.close()
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as fh:
        pickle.dump(dumped, fh)
    return dumped


def _read_chunks(engine: FrekiEngine) -> StoreDump:
    [store] = engine.chunk_stores
    ids: list[str] = []
    docs: list[str] = []
    texts: list[str] = []
    dense: list[list[float]] = []
    sparse: list[tuple[list[int], list[float]]] = []
    offset: str | None = None
    while True:
        page, offset = store.scroll((), limit=512, offset=offset, with_vectors=True, with_sparse=True)
        for p in page:
            ids.append(p.id)
            docs.append(str(p.payload["document_id"]))
            texts.append(lexical_text(p.payload))
            dense.append(p.dense or [])
            sparse.append((p.sparse.indices, p.sparse.values) if p.sparse else ([], []))
        if offset is None:
            break
    matrix = np.asarray(dense, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return StoreDump(ids, docs, texts, matrix, sparse)


class Replica:
    """Dense, sparse and convex rankings of one dumped index; ``set_bm25`` recomputes the passage weights."""

    def __init__(self, dump: StoreDump, params: Bm25Params | None = None) -> None:
        self.dump = dump
        self.n = len(dump.chunk_ids)
        columns: dict[int, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[float] = []
        self.lengths = np.zeros(self.n)
        for i, text in enumerate(dump.texts):
            counts = Counter(tokenize(text))
            self.lengths[i] = sum(counts.values())
            for term, tf in counts.items():
                rows.append(i)
                cols.append(columns.setdefault(term_index(term), len(columns)))
                tfs.append(tf)
        self.columns = columns
        self.term_of = {c: t for t, c in columns.items()}
        # (chunk, term, tf) triples in row order (rows are chunks, as read) and a column-ordered view of them
        self.rows, self.cols, self.tfs = np.asarray(rows), np.asarray(cols, dtype=np.int64), np.asarray(tfs)
        self.row_start = np.searchsorted(self.rows, np.arange(self.n + 1))
        self.by_col = np.argsort(self.cols, kind="stable")
        self.col_start = np.searchsorted(self.cols[self.by_col], np.arange(len(columns) + 1))
        df = np.bincount(self.cols, minlength=len(columns))
        self.idf = np.log((self.n - df + 0.5) / (df + 0.5) + 1.0)
        self.set_bm25(params or Bm25Params())

    def set_bm25(self, params: Bm25Params) -> None:
        """Passage weights ``tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))``, as ``SparseEncoder`` writes them."""
        self.params = params
        norm = params.k1 * (1.0 - params.b + params.b * self.lengths[self.rows] / params.avgdl)
        self.weights = self.tfs * (params.k1 + 1.0) / (self.tfs + norm)

    def terms_of_chunk(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """Columns and term frequencies of one chunk."""
        span = slice(self.row_start[row], self.row_start[row + 1])
        return self.cols[span], self.tfs[span]

    def check_weights(self) -> float:
        """Largest difference between the stored sparse vectors and this replica's weights (for the params the
        index was built with it must be ~1e-7: same tokenizer, same formula); inf if a term set differs."""
        worst = 0.0
        for i, (indices, values) in enumerate(self.dump.sparse):
            span = slice(self.row_start[i], self.row_start[i + 1])
            mine = {self.term_of[int(c)]: float(w) for c, w in zip(self.cols[span], self.weights[span], strict=True)}
            if set(mine) != set(indices):
                return float("inf")
            worst = max([worst, *(abs(mine[t] - v) for t, v in zip(indices, values, strict=True))])
        return worst

    def query_terms(self, text: str) -> tuple[dict[int, float], int]:
        """A query as {column: weight 1} and its number of distinct terms (unknown terms score nothing)."""
        terms = list(dict.fromkeys(term_index(t) for t in tokenize(text)))
        return {self.columns[t]: 1.0 for t in terms if t in self.columns}, max(1, len(terms))

    def bm25(self, query: Mapping[int, float]) -> np.ndarray:
        """BM25 of every chunk for a weighted query (Qdrant's IDF times the query weight times the passage's)."""
        scores = np.zeros(self.n)
        for col, weight in query.items():
            entries = self.by_col[self.col_start[col] : self.col_start[col + 1]]
            scores[self.rows[entries]] += weight * self.idf[col] * self.weights[entries]  # one entry per chunk
        return scores

    def cosines(self, vector: np.ndarray) -> np.ndarray:
        return np.asarray(self.dump.dense @ (vector / np.linalg.norm(vector)))

    # -- rankings ---------------------------------------------------------------------------------------
    def dense_top(self, cos: np.ndarray, depth: int) -> np.ndarray:
        return top(cos, depth)

    def sparse_top(self, bm: np.ndarray, depth: int) -> np.ndarray:
        hits = np.flatnonzero(bm > 0)
        return hits[top(bm[hits], depth)] if len(hits) else hits

    def convex(self, cos: np.ndarray, bm: np.ndarray, half: float, depth: int, weight: float
               ) -> list[fusion.Scored]:
        """Fused chunk list (ids are row numbers as strings), as the engine's convex query returns it."""
        union = np.union1d(self.dense_top(cos, depth), lexical := self.sparse_top(bm, depth))
        dense = {str(i): fusion.dense_relevance(float(cos[i])) for i in union}
        sparse = {str(i): fusion.sparse_relevance(float(bm[i]), half) for i in lexical}
        return fusion.convex(dense, sparse, weight)[:depth]

    def documents(self, chunks: Sequence[int], scores: Sequence[float]) -> Ranking:
        """Documents by their best chunk."""
        best: dict[str, float] = {}
        for c, s in zip(chunks, scores, strict=True):
            doc = self.dump.documents[c]
            if s > best.get(doc, -1.0):
                best[doc] = float(s)
        return sorted(best.items(), key=lambda kv: -kv[1])


def top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def per_query_ndcg(runs: Mapping[str, Ranking], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, float]:
    return {q: ndcg_at(runs.get(q, []), rel) for q, rel in qrels.items()}


def paired_bootstrap(base: Mapping[str, float], other: Mapping[str, float], resamples: int = 2000,
                     seed: int = 1) -> tuple[float, float, float]:
    """Mean per-query difference ``other - base`` and its 95 % bootstrap interval."""
    diff = np.asarray([other[q] - base[q] for q in base])
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), (resamples, len(diff)))].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def agreement(a: Mapping[str, Ranking], b: Mapping[str, Ranking], k: int = 10) -> float:
    """Share of queries whose top-k documents come in the same order in both runs."""
    same = [[d for d, _ in a.get(q, [])[:k]] == [d for d, _ in b.get(q, [])[:k]] for q in a]
    return sum(same) / max(1, len(same))
