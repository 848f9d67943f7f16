"""SemanticChunker with a fake embedding at the seam (the real model is in test_chunking_model.py).

The fake embeds a sentence by its first word: sentences sharing a first word are identical vectors,
different first words are nearly orthogonal — so "topics" are easy to build and to check.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from freki.ingest.chunking import Chunk, SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import ParsedDocument, Section, parse_document
from freki.ingest.sentences import join_units, section_units
from wolf_service.tokens import get_token_counter

TOPICS = ["Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel"]
FILLER = "quiet river stone lamp garden window paper violin market ladder cloud copper".split()


def fake_embed(texts: list[str]) -> np.ndarray:
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.split()[0].encode()).digest()[:4], "big")
        vector = np.random.default_rng(seed).standard_normal(64)
        rows.append(vector / np.linalg.norm(vector))
    return np.stack(rows).astype(np.float32)


def words_window(text: str) -> int:
    """Stand-in for the model tokenizer: one word-piece per word plus [CLS] and [SEP]."""
    return len(text.split()) + 2


class CountingEmbed:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return fake_embed(texts)


def make_chunker(
    config: ChunkingConfig | None = None,
    window_limit: int = 256,
    embed: Callable[[list[str]], np.ndarray] = fake_embed,
) -> SemanticChunker:
    return SemanticChunker(config or ChunkingConfig(), get_token_counter(), embed, words_window, window_limit)


def generated_text(paragraphs: int, seed: int = 3) -> str:
    rng = random.Random(seed)
    out, number = [], 0
    for p in range(paragraphs):
        topic = TOPICS[(p // 2) % len(TOPICS)]
        sentences = []
        for _ in range(rng.randint(2, 6)):
            number += 1
            body = " ".join(rng.choices(FILLER, k=rng.randint(6, 16)))
            sentences.append(f"{topic} note {number} mentions {body}.")
        out.append(" ".join(sentences))
    return "\n\n".join(out)


def split_overlap(previous: Chunk, current: Chunk) -> tuple[str, str]:
    """(overlap, new text) of `current`: the longest run of previous's trailing sentences it starts with."""
    units = section_units(previous.text)
    for m in range(len(units) - 1, 0, -1):
        suffix = join_units(units[-m:]).lstrip()
        if current.text.startswith(suffix) and current.text[len(suffix) : len(suffix) + 1].isspace():
            return suffix, current.text[len(suffix) :].lstrip()
    return "", current.text


def doc_of(text: str) -> ParsedDocument:
    return parse_document(text, source="generated.txt")


# --- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 0}, r"max_tokens must be positive \(got 0\)"),
        ({"max_tokens": 100, "min_tokens": 100}, r"min_tokens=100, max_tokens=100"),
        ({"min_tokens": -1}, r"min_tokens must be >= 0"),
        ({"max_tokens": 100, "min_tokens": 10, "overlap_tokens": 100}, r"overlap_tokens=100, max_tokens=100"),
        ({"similarity_threshold": 1.5}, r"similarity_threshold must be in \[0, 1\] \(got 1.5\)"),
        ({"similarity_threshold": -0.1}, r"similarity_threshold must be in \[0, 1\]"),
    ],
)
def test_invalid_config_is_rejected_with_the_values(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkingConfig(**kwargs)  # type: ignore[arg-type]


def test_window_without_room_for_text_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"window_limit \(10\) leaves 8 word-pieces after 2 special tokens"):
        make_chunker(window_limit=10)


def test_window_clamps_max_min_and_overlap() -> None:
    effective = make_chunker(ChunkingConfig(), window_limit=256).effective
    assert (effective.max_tokens, effective.overlap_tokens, effective.min_tokens) == (254, 63, 95)
    assert effective.window_limit == 256
    assert "max 254 tokens and 256 model word-pieces" in effective.describe()


def test_config_within_window_is_used_as_is() -> None:
    config = ChunkingConfig(max_tokens=120, min_tokens=40, overlap_tokens=20, similarity_threshold=0.5)
    effective = make_chunker(config, window_limit=512).effective
    assert (effective.max_tokens, effective.min_tokens, effective.overlap_tokens) == (120, 40, 20)
    assert effective.similarity_threshold == 0.5


# --- sizes, overlap, sentence boundaries ------------------------------------------------------------

CONFIG = ChunkingConfig(max_tokens=160, min_tokens=50, overlap_tokens=30)


@pytest.fixture(scope="module")
def long_chunks() -> tuple[ParsedDocument, list[Chunk]]:
    doc = doc_of(generated_text(60))
    return doc, make_chunker(CONFIG).chunk(doc)


def test_chunks_respect_max_tokens_and_window(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    _, chunks = long_chunks
    counter = get_token_counter()
    assert len(chunks) > 20
    for chunk in chunks:
        assert chunk.token_count == counter.count(chunk.text) <= 160
        assert words_window(chunk.text) <= 256


def test_new_text_reaches_min_tokens_except_at_section_end(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    _, chunks = long_chunks
    counter = get_token_counter()
    for previous, current in zip(chunks, chunks[1:-1], strict=False):
        _, new_text = split_overlap(previous, current)
        assert counter.count(new_text) >= 50, current.text


def test_overlap_is_whole_trailing_sentences_within_budget(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    _, chunks = long_chunks
    counter = get_token_counter()
    overlaps = [split_overlap(a, b)[0] for a, b in zip(chunks, chunks[1:], strict=False)]
    assert sum(1 for o in overlaps if o) >= len(overlaps) * 0.8  # sentences are short: overlap nearly always fits
    assert all(counter.count(o) <= 30 for o in overlaps)


def test_chunks_never_cut_a_sentence(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    doc, chunks = long_chunks
    sentences = {u.text for s in doc.sections for u in section_units(s.text)}
    for chunk in chunks:
        for unit in section_units(chunk.text):
            assert unit.text in sentences


def test_new_texts_cover_the_document_in_order(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    doc, chunks = long_chunks
    pieces = [chunks[0].text] + [split_overlap(a, b)[1] for a, b in zip(chunks, chunks[1:], strict=False)]
    assert " ".join(" ".join(pieces).split()) == " ".join(doc.text.split())


def test_new_text_is_the_chunk_without_its_overlap(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    """What the chunker says is overlap (kept out of BM25) is exactly the repeated sentences."""
    _, chunks = long_chunks
    assert chunks[0].overlap_chars == 0 and chunks[0].new_text == chunks[0].text
    for previous, current in zip(chunks, chunks[1:], strict=False):
        overlap, new_text = split_overlap(previous, current)
        assert current.new_text == new_text, current.text
        assert current.text[: current.overlap_chars].strip() == overlap
    assert sum(1 for c in chunks if c.overlap_chars) >= (len(chunks) - 1) * 0.8


def test_chunk_identity_fields(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    _, chunks = long_chunks
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert all(c.hash == hashlib.sha256(c.text.encode()).hexdigest() for c in chunks)


def test_chunking_is_deterministic(long_chunks: tuple[ParsedDocument, list[Chunk]]) -> None:
    doc, chunks = long_chunks
    assert make_chunker(CONFIG).chunk(doc) == chunks


def test_oversize_sentence_is_split_at_word_boundaries() -> None:
    words = [f"word{i}" for i in range(600)]
    doc = doc_of("Short opener here. " + " ".join(words) + " and it ends.")
    chunks = make_chunker(ChunkingConfig(max_tokens=100, min_tokens=20, overlap_tokens=0)).chunk(doc)
    assert len(chunks) > 5
    assert all(c.token_count <= 100 for c in chunks)
    joined = " ".join(c.text for c in chunks).split()
    assert joined == doc.text.split()  # no word lost, duplicated or cut


def test_word_longer_than_the_window_is_split_by_characters() -> None:
    blob = "x" * 5000
    chunks = make_chunker(ChunkingConfig(max_tokens=50, min_tokens=10, overlap_tokens=0)).chunk(doc_of(blob))
    assert "".join(c.text for c in chunks) == blob
    assert all(c.token_count <= 50 for c in chunks)


def test_tiny_window_is_never_exceeded() -> None:
    chunker = make_chunker(ChunkingConfig(), window_limit=40)
    assert chunker.effective.max_tokens == 38
    chunks = chunker.chunk(doc_of(generated_text(20)))
    assert chunks
    assert all(words_window(c.text) <= 40 and c.token_count <= 38 for c in chunks)


# --- sections, metadata, semantics ------------------------------------------------------------------


def test_sections_are_hard_boundaries_with_metadata() -> None:
    text = "---\ntitle: Guide\nsecret_key: hidden-value\n---\n# Install\n\n" + generated_text(6, seed=1)
    text += "\n\n## Linux\n\nLinux users run the installer.\n\n# Usage\n\nRun it."
    chunks = make_chunker(CONFIG).chunk(parse_document(text, source="guide.md"))
    sections = [c.metadata.get("section") for c in chunks]
    assert sections[-2:] == ["Install > Linux", "Usage"]
    assert set(sections[:-2]) == {"Install"}
    assert chunks[-2].text == "Linux\n\nLinux users run the installer."
    assert all("hidden-value" not in c.text and "page" not in c.metadata for c in chunks)


def test_pages_are_boundaries_and_recorded() -> None:
    doc = ParsedDocument(
        text="",
        title="",
        content_type="pdf",
        sections=[Section("Alpha one. Alpha two.", page=1), Section("Alpha three.", page=2)],
    )
    chunks = make_chunker(CONFIG).chunk(doc)
    assert [(c.text, c.metadata) for c in chunks] == [
        ("Alpha one. Alpha two.", {"page": "1"}),
        ("Alpha three.", {"page": "2"}),
    ]


@pytest.mark.parametrize("signal", ["lexical", "embedding"])
def test_topic_shift_becomes_a_boundary(signal: str) -> None:
    first = " ".join(f"Alpha fact {i} concerns {' '.join(FILLER[:8])}." for i in range(8))
    second = " ".join(f"Bravo fact {i} concerns {' '.join(FILLER[4:])}." for i in range(8))
    # The paragraph needs two chunks.
    config = ChunkingConfig(max_tokens=150, min_tokens=40, overlap_tokens=0, boundary_signal=signal)
    chunks = make_chunker(config).chunk(doc_of(f"{first} {second}"))  # one paragraph: only similarity tells
    assert [c.text for c in chunks] == [first, second]


def test_a_section_that_fits_one_chunk_is_one_chunk_and_embeds_nothing() -> None:
    """Even with a topic shift inside: boundaries are only looked for where a split is needed."""
    first = " ".join(f"Alpha fact {i} concerns {' '.join(FILLER[:8])}." for i in range(8))
    second = " ".join(f"Bravo fact {i} concerns {' '.join(FILLER[4:])}." for i in range(8))
    embed = CountingEmbed()
    config = ChunkingConfig(max_tokens=400, min_tokens=40, overlap_tokens=60)
    chunks = make_chunker(config, embed=embed).chunk(doc_of(f"{first} {second}"))
    assert [c.text for c in chunks] == [f"{first} {second}"]
    assert embed.calls == []


def test_small_sections_are_not_embedded() -> None:
    embed = CountingEmbed()
    chunks = make_chunker(CONFIG, embed=embed).chunk(doc_of("Alpha one. Bravo two. Charlie three."))
    assert embed.calls == []
    assert [c.text for c in chunks] == ["Alpha one. Bravo two. Charlie three."]


def test_large_sections_are_embedded_once_per_document_with_the_embedding_signal() -> None:
    embed = CountingEmbed()
    make_chunker(replace(CONFIG, boundary_signal="embedding"), embed=embed).chunk(doc_of(generated_text(10)))
    assert len(embed.calls) == 1
    assert len(embed.calls[0]) == len(set(embed.calls[0]))  # each distinct sentence once


def test_lexical_boundaries_embed_nothing() -> None:
    embed = CountingEmbed()
    chunks = make_chunker(CONFIG, embed=embed).chunk(doc_of(generated_text(10)))
    assert len(chunks) > 3 and embed.calls == []


@pytest.mark.parametrize(("config", "threshold"), [
    (ChunkingConfig(), 0.44), (ChunkingConfig(boundary_signal="embedding"), 0.7),
    (ChunkingConfig(boundary_signal="embedding", similarity_threshold=0.5), 0.5),
])
def test_each_signal_has_its_own_default_threshold(config: ChunkingConfig, threshold: float) -> None:
    effective = make_chunker(config).effective
    assert (effective.boundary_signal, effective.similarity_threshold) == (config.boundary_signal, threshold)
    assert config.boundary_signal in effective.describe()


def test_an_unknown_signal_is_refused() -> None:
    with pytest.raises(ValueError, match=r"boundary_signal must be one of lexical, embedding \(got 'words'\)"):
        ChunkingConfig(boundary_signal="words")


def test_empty_document_has_no_chunks() -> None:
    assert make_chunker().chunk(ParsedDocument(text="", title="", content_type="text")) == []


def test_editing_one_sentence_changes_few_chunks() -> None:
    paragraphs = generated_text(120, seed=9).split("\n\n")
    chunker = make_chunker(CONFIG)
    before = {c.hash for c in chunker.chunk(doc_of("\n\n".join(paragraphs)))}
    edited = paragraphs[:]
    edited[60] = edited[60].replace(" mentions ", " briefly mentions ", 1)
    after = {c.hash for c in chunker.chunk(doc_of("\n\n".join(edited)))}
    assert len(before) > 40
    assert 1 <= len(after - before) <= 3
