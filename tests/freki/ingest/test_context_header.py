"""Contextual chunk headers at their seams: the plain-text title rule, header parts and fitting, and the
chunker's use of them (fake embedding and word-count tokenizer; the real model is in
test_context_header_model.py)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from freki.ingest.chunking import SemanticChunker
from freki.ingest.context import chunk_header, embedding_input, header_parts, header_title
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import ParsedDocument, Section, parse_document
from freki.ingest.parsing.text import first_line_title
from wolf_service.tokens import get_token_counter


def words_window(text: str) -> int:
    """Stand-in for the model tokenizer: one word-piece per word plus [CLS] and [SEP]."""
    return len(text.split()) + 2


def zero_embed(texts: list[str]) -> np.ndarray:
    return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)


BODY = "The body paragraph follows here. It has two sentences."


@pytest.mark.parametrize("first, title", [
    ("Microstructural development of human newborn cerebral white matter assessed in vivo.",
     "Microstructural development of human newborn cerebral white matter assessed in vivo."),
    ("Frequently asked questions about Hrafn Relay", "Frequently asked questions about Hrafn Relay"),
    ("Does vitamin D prevent fractures?", "Does vitamin D prevent fractures?"),
    ("Dear all,", ""),                                      # a salutation, not a title
    ("Note:", ""),                                          # a lead-in
    ("- first item", ""),                                   # a list
    ("We met on Monday. Nothing was decided.", ""),        # two sentences
    ("word " * 31, ""),                                     # too long to be a title
    ("12345", ""),                                          # no letter
])
def test_first_line_title_takes_only_a_title_like_line(first: str, title: str) -> None:
    assert first_line_title(f"{first}\n\n{BODY}") == title


def test_first_line_title_needs_a_blank_line_and_more_text() -> None:
    assert first_line_title(f"A wrapped first line\nof a paragraph\n\n{BODY}") == ""
    assert first_line_title("Only a title\n\n") == ""
    assert first_line_title("Only a title") == ""
    assert first_line_title(f"\n\nLeading blank lines\n\n{BODY}") == "Leading blank lines"


def test_plain_text_title_is_the_parsed_title_and_stays_in_the_text() -> None:
    doc = parse_document(f"Kestrel survey\n\n{BODY}".encode(), source="", content_type="text/plain")
    assert doc.title == "Kestrel survey"
    assert doc.text.startswith("Kestrel survey\n\n")
    prose = parse_document(f"Dear all,\n\n{BODY}".encode(), source="notes.txt", content_type="text/plain")
    assert prose.title == "notes", "no title-like first line: the file name stays the title"


def test_header_parts_drop_repeats_and_blank_parts() -> None:
    assert header_parts("Guide", ("Guide", "Install ", "")) == ["Guide", "Install"]
    assert header_parts("", ()) == []


def test_chunk_header_leaves_out_what_the_chunk_starts_with() -> None:
    parts = ["Guide", "Install"]
    assert chunk_header(parts, "Guide\n\nintro text", words_window, 256) == "Install"
    assert chunk_header(parts, "Install\n\nsteps", words_window, 256) == "Guide"
    assert chunk_header(parts, "later text", words_window, 256) == "Guide > Install"


def test_chunk_header_is_cut_to_fit_the_window_and_a_quarter_of_it() -> None:
    title = " ".join(f"t{i}" for i in range(100))
    # A quarter of the 62 word-pieces of room: at most 15 header words.
    assert chunk_header([title], "short text", words_window, 64) == " ".join(f"t{i}" for i in range(15))
    full = " ".join(["w"] * 60)  # 62 of 64 word-pieces: room for 2 header words ("\n\n" adds none here)
    header = chunk_header(["alpha beta gamma"], full, words_window, 64)
    assert header == "alpha beta"
    assert words_window(embedding_input(header, full)) <= 64
    assert chunk_header(["alpha"], " ".join(["w"] * 62), words_window, 64) == ""


def document(title: str, sections: list[Section]) -> ParsedDocument:
    return ParsedDocument(text="\n\n".join(s.text for s in sections), title=title, content_type="text",
                          sections=sections)


def sentences(word: str, n: int) -> str:
    return " ".join(f"{word} sentence number {i} says a few more words here." for i in range(n))


def chunker(**config: object) -> SemanticChunker:
    cfg = ChunkingConfig(max_tokens=60, min_tokens=10, overlap_tokens=0, **config)  # type: ignore[arg-type]
    return SemanticChunker(cfg, get_token_counter(), zero_embed, words_window, 256)


def test_later_chunks_carry_title_and_section_path_in_their_embedding_text_only() -> None:
    doc = document("Kestrel survey", [
        Section(text=f"Kestrel survey\n\n{sentences('alpha', 12)}"),
        Section(text=f"Methods\n\n{sentences('bravo', 12)}", heading="Methods",
                heading_path=("Kestrel survey", "Methods")),
    ])
    chunks = chunker().chunk(doc)
    assert len(chunks) >= 4
    first_of_methods = next(c for c in chunks if c.text.startswith("Methods"))
    assert chunks[0].header == "" and chunks[0].embedding_text == chunks[0].text
    assert chunks[1].header == "Kestrel survey"
    assert first_of_methods.header == "Kestrel survey"
    assert chunks[-1].header == "Kestrel survey > Methods"
    assert chunks[-1].embedding_text == f"Kestrel survey > Methods\n\n{chunks[-1].text}"
    assert all("Kestrel" not in c.text for c in chunks[1:] if c is not first_of_methods), "stored text unchanged"


def test_the_hash_covers_the_header_and_the_setting_turns_it_off() -> None:
    section = Section(text=sentences("alpha", 12))
    first, renamed = chunker().chunk(document("Old title", [section])), chunker().chunk(document("New", [section]))
    assert [c.text for c in first] == [c.text for c in renamed]
    assert all(a.hash != b.hash for a, b in zip(first, renamed, strict=True)), "a new title re-embeds every chunk"
    assert chunker().chunk(document("Old title", [section]), title="New") == renamed, "the caller's title wins"
    off = chunker(context_header=False).chunk(document("Old title", [section]))
    assert all(c.header == "" for c in off)
    assert all(c.hash == hashlib.sha256(c.text.encode()).hexdigest() for c in off)
    assert chunker().effective != chunker(context_header=False).effective, "the chunking fingerprint changes"


def test_a_file_name_standing_in_for_a_title_is_no_header() -> None:
    assert header_title("scan_0012", "inbox/scan_0012.txt") == "", "renaming the file must not re-embed it"
    assert header_title("Kestrel survey", "inbox/scan_0012.txt") == "Kestrel survey"
    assert header_title("Kestrel survey", "") == "Kestrel survey"
    assert header_title(["a", "list"], "") == ""
