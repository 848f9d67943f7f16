"""Chunk statistics per corpus: chunks per document, and tokens embedded against tokens indexed.

For each corpus and boundary signal (``chunking.boundary_signal``), documents are parsed and chunked as
IndexDocument does, with the packaged model's tokenizer and window. Printed per row:

* chunks per document (mean and a histogram);
* tokens indexed: the model word-pieces of every document's text (special tokens excluded), once;
* tokens embedded: word-pieces of every chunk text (overlap included) plus, with the embedding signal,
  every sentence the boundary pass embeds; their ratio is the boundary cost, kept at or below 1.3.

Asserts nothing. Example (about a minute for the lexical rows; the embedding rows run the model):

    .venv/bin/python -m scripts.bench.chunk_stats                          # SciFact 1,000 + SQuAD, both signals
    .venv/bin/python -m scripts.bench.chunk_stats --docs 5183 --signals lexical
"""

from __future__ import annotations

import argparse
from collections import Counter

from freki.embed.embedder import Embedder
from freki.ingest.chunking import SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import parse_document
from scripts.evalsets import scifact, squad
from wolf_service.tokens import get_token_counter


def corpus_texts(name: str, docs: int) -> list[str]:
    evalset = scifact.load() if name == "scifact" else squad.load()
    return [evalset.corpus[d] for d in sorted(evalset.corpus)[:docs]]


def stats(texts: list[str], signal: str, embedder: Embedder) -> str:
    specials = embedder.window_tokens("")
    sentence_pieces = 0

    def counting_embed(sentences: list[str]):  # type: ignore[no-untyped-def]
        nonlocal sentence_pieces
        sentence_pieces += sum(embedder.window_tokens(s) - specials for s in sentences)
        return embedder.embed(sentences)

    chunker = SemanticChunker(ChunkingConfig(boundary_signal=signal), get_token_counter(), counting_embed,
                              embedder.window_tokens, embedder.max_seq_length)
    per_doc: list[int] = []
    indexed = chunk_pieces = 0
    for text in texts:
        doc = parse_document(text.encode(), source="doc.txt", content_type="text/plain")
        chunks = chunker.chunk(doc)
        per_doc.append(len(chunks))
        indexed += sum(embedder.window_tokens(s.text) - specials for s in doc.sections)
        chunk_pieces += sum(embedder.window_tokens(c.text) - specials for c in chunks)
    histogram = Counter(min(n, 5) for n in per_doc)
    shape = " ".join(f"{k if k < 5 else '5+'}:{histogram[k]}" for k in sorted(histogram))
    embedded = chunk_pieces + sentence_pieces
    return (f"| {signal} | {len(texts)} | {sum(per_doc) / len(per_doc):.2f} | {shape} | {indexed:,} | "
            f"{chunk_pieces:,} | {sentence_pieces:,} | **{embedded / indexed:.2f}** |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default="scifact,squad")
    parser.add_argument("--docs", type=int, default=1000, help="documents per corpus (the first N by id)")
    parser.add_argument("--signals", default="lexical,embedding")
    args = parser.parse_args()
    embedder = Embedder("all-MiniLM-L6-v2")
    for name in args.corpora.split(","):
        texts = corpus_texts(name, args.docs)
        print(f"\n{name}\n\n| signal | docs | chunks/doc | chunks per doc: count | tokens indexed | chunk tokens "
              "| sentence-pass tokens | embedded / indexed |\n| --- | --- | --- | --- | --- | --- | --- | --- |",
              flush=True)
        for signal in args.signals.split(","):
            print(stats(texts, signal, embedder), flush=True)


if __name__ == "__main__":
    main()
