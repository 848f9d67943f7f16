"""Contextual chunk headers: what a chunk is about, prepended to its *embedding input* only.

Only the first chunk of a document carries its title and only a section's first chunk its heading; a later
chunk ("The mice were then treated …") loses what the document is about. Each chunk's dense vector is
therefore computed from ``"<title> > <section path>\\n\\n<chunk text>"``. The stored and returned text stays
the chunk text, and BM25 indexes the chunk text alone (a title term would otherwise count once per chunk).

Parts the chunk already starts with are left out (the first chunk starts with the title, a section's first
chunk with its heading), and a header never pushes the input past the model window: it is cut to what
fits beside the chunk, at most a quarter of the window, or left out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

SEPARATOR = " > "
# A header may take at most this share of the model window (a 1,000-character title must not crowd out
# the chunk's own text).
MAX_WINDOW_SHARE = 4


def header_parts(title: str, heading_path: Sequence[str]) -> list[str]:
    """The document title then the section's heading path, whitespace-collapsed, repeats dropped."""
    parts: list[str] = []
    for raw in (title, *heading_path):
        part = " ".join(raw.split())
        if part and part not in parts:
            parts.append(part)
    return parts


def chunk_header(
    parts: Sequence[str], text: str, window_tokens: Callable[[str], int], window_limit: int
) -> str:
    """The header of one chunk: ``parts`` the chunk does not start with, cut to fit the model window.

    Args:
        parts: ``header_parts`` of the chunk's document and section.
        text: The chunk text.
        window_tokens: Model word-pieces of a text, special tokens included.
        window_limit: The model window, special tokens included.
    """
    head = text.lstrip()[:1000]
    kept = [p for p in parts if not head.startswith(p)]
    if not kept:
        return ""
    words = SEPARATOR.join(kept).split(" ")
    specials = window_tokens("")
    header_room = (window_limit - specials) // MAX_WINDOW_SHARE

    def fits(count: int) -> bool:
        header = " ".join(words[:count])
        return (window_tokens(header) - specials <= header_room
                and window_tokens(embedding_input(header, text)) <= window_limit)

    if fits(len(words)):
        return " ".join(words)
    low, high = 0, len(words) - 1  # largest word count that fits (0: none)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return " ".join(words[:low]).removesuffix(SEPARATOR.strip()).strip()


def embedding_input(header: str, text: str) -> str:
    """What the model embeds for a chunk: its header, a blank line, its text (the text alone without one)."""
    return f"{header}\n\n{text}" if header else text


def header_title(title: object, source: str) -> str:
    """The title headers name: a document's ``title`` metadata (the caller's, else the parsed one), but not
    a file name standing in for a missing title (``source``'s stem) — renaming a file must not re-embed it,
    and names like ``scan_0012`` say nothing about the text."""
    if not isinstance(title, str) or (source and title == PurePath(source).stem):
        return ""
    return title


def embedding_text(payload: Mapping[str, Any]) -> str:
    """What the model embedded for a stored chunk: its context header (if any) and its text."""
    return embedding_input(str(payload.get("context_header", "") or ""), str(payload.get("content", "")))
