"""Tables through the chunker with the real all-MiniLM-L6-v2 tokenizer: rows are never cut, a table that fits
stays whole, a larger one is split by rows with the header repeated, and every chunk fits the model window."""

from __future__ import annotations

import random

import pytest

from freki.ingest.chunking import Chunk
from freki.ingest.limits import ChunkingConfig
from freki.ingest.parsing import parse_document
from freki.ingest.parsing.tables import markdown_table
from freki.ingest.sentences import section_units
from tests.freki.ingest.test_chunking_model import Model, generated_paragraphs

pytestmark = pytest.mark.integration

HEADER = ["Part number", "Supplier", "Unit price (EUR)", "Warehouse shelf"]


@pytest.fixture(scope="module")
def model() -> Model:
    return Model()


def parts_table(rows: int, seed: int = 5) -> tuple[list[list[str]], str]:
    rng = random.Random(seed)
    suppliers = ["Nordwerk GmbH", "Acme Fasteners Ltd.", "Hrafn Metals", "Sleipnir Tools AB"]
    body = [[f"PN-{1000 + i}", rng.choice(suppliers), f"{rng.randint(1, 900)}.{rng.randint(0, 99):02d}",
             f"Aisle {rng.randint(1, 40)}, shelf {rng.choice('ABCDEFG')}. Fragile? {rng.choice(['No.', 'Yes.'])}"]
            for i in range(rows)]
    return body, markdown_table(body, header=HEADER)


def table_lines(chunk: Chunk) -> list[str]:
    return [line for line in chunk.text.split("\n") if line.startswith("|")]


def chunk_markdown(model: Model, text: str) -> list[Chunk]:
    return model.chunker().chunk(parse_document(text, source="parts.md"))


def test_a_table_paragraph_is_one_unit_never_split_into_sentences() -> None:
    _, table = parts_table(3)
    units = section_units(f"Intro sentence. Another one.\n\n{table}\n\nAfter. The end.")
    assert [u.table for u in units] == [False, False, True, False, False]
    assert units[2].text == table


def test_a_long_table_is_split_by_rows_each_piece_repeating_the_header(model: Model) -> None:
    body, table = parts_table(120)
    prose = "\n\n".join(generated_paragraphs(6, seed=11))
    chunks = chunk_markdown(model, f"# Parts\n\n{prose}\n\n{table}\n\n{prose}")
    header, separator = table.split("\n")[:2]
    holding = [c for c in chunks if any(line not in (header, separator) for line in table_lines(c))]
    assert len(holding) >= 3  # the table is far larger than one window
    rows = set(table.split("\n")[2:])
    seen: list[str] = []
    for chunk in holding:
        lines = table_lines(chunk)
        assert lines[:2] == [header, separator], chunk.text
        assert all(line in rows for line in lines[2:]), "a row was cut"
        seen.extend(lines[2:])
    assert seen == table.split("\n")[2:]  # every row once, in order (table pieces carry no overlap)
    assert max(model.window_tokens(c.text) for c in chunks) <= 256
    # Pieces aim at min_tokens: a row lookup lands on a chunk of a few rows, not a window's worth.
    only_rows = [c for c in holding if all(line.startswith("|") for line in c.text.split("\n"))]
    assert len(only_rows) >= 5
    assert all(c.token_count <= model.chunker().effective.min_tokens for c in only_rows)


def test_rows_cut_counts_only_rows_too_long_for_a_chunk(model: Model) -> None:
    chunker = model.chunker()
    _, table = parts_table(120)
    chunker.chunk(parse_document(table, source="t.md"))
    assert chunker.rows_cut == 0


def test_a_table_that_fits_the_window_stays_whole_inside_a_long_section(model: Model) -> None:
    _, table = parts_table(6)
    prose = "\n\n".join(generated_paragraphs(12, seed=2))
    for position in range(3):
        parts = prose.split("\n\n")
        parts.insert(4 + 3 * position, table)
        chunks = chunk_markdown(model, "\n\n".join(parts))
        assert len(chunks) > 3
        assert sum(1 for c in chunks if table in c.text) >= 1
        assert all(not table_lines(c) or table in c.text for c in chunks), "the table was cut"


def test_a_row_longer_than_the_window_is_the_only_cut_and_is_counted(model: Model) -> None:
    long_cell = " ".join(f"word{i}" for i in range(400))
    table = markdown_table([["a", "short row"], ["b", long_cell], ["c", "another short row"]], header=["Key", "Text"])
    chunker = model.chunker()
    chunks = chunker.chunk(parse_document(table, source="t.md"))
    assert chunker.rows_cut == 1
    assert all(c.text.startswith("| Key | Text |\n| --- | --- |\n") for c in chunks)
    assert max(model.window_tokens(c.text) for c in chunks) <= 256
    assert "| a | short row |" in chunks[0].text and "| c | another short row |" in chunks[-1].text


def test_small_budgets_still_fit_the_window(model: Model) -> None:
    _, table = parts_table(40, seed=9)
    chunker = model.chunker(ChunkingConfig(max_tokens=120, min_tokens=30, overlap_tokens=20))
    chunks = chunker.chunk(parse_document(table, source="t.md"))
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.token_count <= 120 and model.window_tokens(chunk.text) <= 256
        assert chunk.text.startswith(table.split("\n")[0])


def test_editing_one_row_of_a_long_table_changes_few_chunks(model: Model) -> None:
    body, table = parts_table(120)
    chunker = model.chunker()
    before = {c.hash for c in chunker.chunk(parse_document(table, source="t.md"))}
    for edit in ({10: "PN-1010 replaced by PN-2010 after the audit of March"}, {60: "x"}, "insert"):
        rows = [row[:] for row in body]
        if edit == "insert":
            rows.insert(50, ["PN-new", "Hrafn Metals", "1.00", "Aisle 1, shelf A."])
        else:
            for index, value in edit.items():
                rows[index][0] = value
        after = [c.hash for c in chunker.chunk(parse_document(markdown_table(rows, header=HEADER), source="t.md"))]
        assert len(after) > 20
        assert len(set(after) - before) <= 3, edit
