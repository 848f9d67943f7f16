"""Offline BM25 over the German man-page set: which analysis of passages and queries ranks best.

Exact BM25 (k1 1.2, b 0.75, IDF as Qdrant computes it) over whole man-page descriptions, in this process,
on the **train** split only (choices are made here; test figures come from scripts/eval/retrieval.py):

* ``analyzers``: the English analyzer vs the German one (queries German only, or German and English terms
  merged), with compound parts, without stop words;
* ``mixed``: the German pages plus 600 English ones (manpages, seeded sample) as one corpus, each analyzed
  in its detected language; German and English queries analyzed in their own language only, or also with
  ``query_languages`` ["de", "en"].

    python -m scripts.eval.lexical_languages analyzers
    python -m scripts.eval.lexical_languages mixed
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Mapping

from freki.embed.analyzers import ENGLISH, Analyzer, _fold, _stemmed_words, analyzer_for
from freki.embed.sparse import LexicalConfig, SparseEncoder
from scripts.evalsets import manpages

Terms = Callable[[str], list[str]]


class Bm25:
    """Exact BM25 over term bags, documents ranked by score."""

    def __init__(self, bags: Mapping[str, Counter[str]]) -> None:
        self.ids, self.bags = list(bags), list(bags.values())
        n = len(self.bags)
        df = Counter(t for bag in self.bags for t in bag)
        self.avg = sum(sum(b.values()) for b in self.bags) / n
        self.idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}

    def ndcg10(self, terms: list[str], relevant: str) -> float:
        scores = []
        for doc, bag in zip(self.ids, self.bags, strict=True):
            length = sum(bag.values())
            s = sum(self.idf[t] * bag[t] * 2.2 / (bag[t] + 1.2 * (0.25 + 0.75 * length / self.avg))
                    for t in terms if bag.get(t))
            scores.append((s, doc))
        scores.sort(reverse=True)
        return next((1 / math.log2(r + 2) for r, (_, d) in enumerate(scores[:10]) if d == relevant), 0.0)


def analyzers() -> None:
    es = manpages.load("de")
    qrels = es.split("train")
    no_stop = Analyzer("german-no-stop", "de", _stemmed_words(frozenset(), "german", _fold))
    runs: list[tuple[str, Analyzer, Terms]] = [
        ("English analyzer", ENGLISH, ENGLISH.terms),
        ("German analyzer, German query", analyzer_for("de"), analyzer_for("de").terms),
        ("German analyzer, query German + English", analyzer_for("de"),
         SparseEncoder(lexical=LexicalConfig(query_languages=("en",))).query_terms),
        ("German + compound parts", analyzer_for("de", german_compounds=True),
         analyzer_for("de", german_compounds=True).terms),
        ("German without stop words", no_stop, no_stop.terms),
    ]
    for name, passage, query in runs:
        bm25 = Bm25({d: Counter(passage.terms(t)) for d, t in es.corpus.items()})
        scores = [bm25.ndcg10(query(es.queries[q]), next(iter(rel))) for q, rel in qrels.items()]
        print(f"{name:42s} nDCG@10 {sum(scores) / len(scores):.4f} ({len(scores)} train queries)", flush=True)


def mixed() -> None:
    de = manpages.load("de")
    en = [json.loads(line) for line in manpages.build("en", max_pages=600).read_text().splitlines()]
    corpus = {f"de:{k}": v for k, v in de.corpus.items()} | {f"en:{r['page']}": r["passage"] for r in en}
    queries = {f"de:{q}": de.queries[q] for q in de.split("train")}
    queries |= {f"en:{r['page']}": r["query"] for r in en if manpages.split_of(r["page"]) == "train"}
    enc = SparseEncoder()
    bags = {}
    for doc, text in corpus.items():
        [passage] = enc.encode_document([text])
        bags[doc] = Counter(enc.analyzer(passage.language).terms(text))
    bm25 = Bm25(bags)
    for name, config in (("own language only", LexicalConfig()),
                         ("+ query_languages [de, en]", LexicalConfig(query_languages=("de", "en")))):
        encoder = SparseEncoder(lexical=config)
        for lang in ("de", "en"):
            mine = [q for q in queries if q.startswith(lang + ":")]
            scores = [bm25.ndcg10(encoder.query_terms(queries[q]), q) for q in mine]
            print(f"{name:28s} {lang} queries ({len(mine)}): nDCG@10 {sum(scores) / len(scores):.4f}", flush=True)


if __name__ == "__main__":
    {"analyzers": analyzers, "mixed": mixed}[sys.argv[1] if len(sys.argv) > 1 else "analyzers"]()
