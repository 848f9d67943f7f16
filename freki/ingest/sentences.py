"""Rule-based sentence splitting for chunking (no model downloads, deterministic).

Section text from `freki.ingest.parsing` separates paragraphs with blank lines and uses single newlines only for
hard breaks (list items, table rows, code lines), so both are always unit boundaries. A paragraph that is a
Markdown table (``freki.ingest.parsing.tables.is_table``) is one unit marked ``table``: its rows are never
split into sentences, and only ``freki.ingest.table_rows`` cuts it, between rows. Inside a line a
sentence ends at `.`, `!`, `?` or an ellipsis (plus closing quotes/brackets) followed by whitespace and a
capital letter, digit or opening quote — except after abbreviations ("Dr.", "e.g.", "U.S."), initials and
list numbers. CJK full stops end a sentence without needing a space.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from freki.ingest.parsing.tables import is_table

PARAGRAPH = "\n\n"
LINE = "\n"
SPACE = " "

_CANDIDATE = re.compile(r"(?:\.{3}|…|[.!?])+[\"'”’»)\]]*(?=\s)|[。！？]+[\"”’」』)）]*")
_STARTER = re.compile(r"[\"'“‘«(\[]*[A-Z0-9À-ÖØ-Þ\u0370-\u03ff\u0400-\u042f]")
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt vs fig figs eq eqs no nos vol vols pp approx ca cf al dept est gen
    gov rev sgt capt col lt maj ave blvd jan feb mar apr jun jul aug sep sept oct nov dec ref refs ed eds
    """.split()
)
_DOTTED = re.compile(r"(?:[a-z]{1,2}\.){2,}")
_INITIAL = re.compile(r"[A-Z]\.")
_LIST_NUMBER = re.compile(r"\d{1,3}\.")
_NON_SPACE = re.compile(r"\S")
_WORD_LOOKBACK = 64  # characters searched back for the word before a full stop (abbreviations are short)


@dataclass(frozen=True)
class Unit:
    """A sentence (or list item, code line, whole table) and the separator that precedes it in the text."""

    text: str
    separator: str
    table: bool = False
    # A later piece of a table cut by rows: it starts with the header again, and a chunk starts with it.
    header_repeated: bool = False


def split_line(line: str) -> list[str]:
    """Split one line of prose into sentences."""
    sentences: list[str] = []
    start = 0
    for match in _CANDIDATE.finditer(line):
        end = match.end()
        # Positions, not copies of the rest of the line: a line of 70,000 sentences stays linear.
        after = _NON_SPACE.search(line, end)
        if after is None:
            continue
        cjk = match.group()[0] in "。！？"
        if not cjk and not _ends_sentence(line, match.start(), match.group(), after.start()):
            continue
        piece = line[start:end].strip()
        if piece:
            sentences.append(piece)
        start = end
    tail = line[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def _ends_sentence(line: str, position: int, punctuation: str, next_start: int) -> bool:
    if not _STARTER.match(line, next_start):
        return False  # "e.g. the", "... and so on" — the next word is not a sentence start
    if punctuation.rstrip("\"'”’»)]") != ".":
        return True  # ! ? and ellipses followed by a capital end a sentence
    lookback = max(0, position - _WORD_LOOKBACK)
    space = line.rfind(" ", lookback, position)
    word_start = space + 1 if space >= 0 or not lookback else lookback
    word = line[word_start : position + 1].lstrip("\"'“‘«([")
    lowered = word.lower()
    if lowered[:-1] in _ABBREVIATIONS or _DOTTED.fullmatch(lowered) or _INITIAL.fullmatch(word):
        return False
    # "1. Install" at the start of a line is a list number, not a sentence of its own.
    return not (word_start == 0 and _LIST_NUMBER.fullmatch(word))


def section_units(text: str) -> list[Unit]:
    """Split section text into sentence units, remembering paragraph and line breaks between them."""
    units: list[Unit] = []
    for paragraph in re.split(r"\n\s*\n", text):
        separator = PARAGRAPH
        if is_table(paragraph):
            units.append(Unit(paragraph.strip("\n"), separator if units else "", table=True))
            continue
        for line in paragraph.split("\n"):
            if not line.strip():
                continue
            # Code and table lines keep their indentation; prose lines are split into sentences.
            pieces = split_line(line) if not line.startswith((" ", "\t")) else [line.rstrip()]
            for piece in pieces:
                units.append(Unit(piece, separator if units else ""))
                separator = SPACE
            separator = LINE
    return units


def join_units(units: list[Unit]) -> str:
    """Text of consecutive units, with the separators they had in the section."""
    return "".join((u.separator if i else "") + u.text for i, u in enumerate(units))
