"""Markdown: YAML frontmatter as metadata, headings as sections, markup stripped to plain text."""

from __future__ import annotations

import datetime
import re
from typing import Any

import yaml

from freki.ingest.parsing.document import ParsedDocument, SectionBuilder, build_document
from freki.ingest.parsing.errors import CorruptDocument, describe_source
from freki.ingest.parsing.text import clean_inline, decode_text, lines_to_paragraphs

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_REF_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s+\S+")
_BULLET = re.compile(r"^(\s*)[-*+][ \t]+(?:\[[ xX]\][ \t]+)?")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?")

# Inline rewrites, applied in order; each keeps the human-readable part of the markup.
_INLINE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"<!--.*?-->"), ""),
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>"), r"\1"),
    (re.compile(r"</?[A-Za-z][^>]*>"), ""),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)(.+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w_])_(?=\S)(.+?)(?<=\S)_(?![\w_])"), r"\1"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),
    (re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])"), r"\1"),
)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def strip_inline(text: str) -> str:
    """Plain text of one line of markdown (code spans are kept verbatim, minus backticks)."""
    parts: list[str] = []
    position = 0
    for match in _CODE_SPAN.finditer(text):
        parts.append(_strip_markup(text[position : match.start()]))
        parts.append(match.group(2).strip())
        position = match.end()
    parts.append(_strip_markup(text[position:]))
    return clean_inline("".join(parts))


def _strip_markup(text: str) -> str:
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    return text


def split_frontmatter(text: str, *, source: str = "") -> tuple[dict[str, str], str, int]:
    """Separate a leading `---` YAML block from the body.

    Returns:
        (metadata, body, number of lines the frontmatter occupied).

    Raises:
        CorruptDocument: The block is not valid YAML or not a mapping; the message names the line.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text, 0
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        # An unclosed block is more likely a thematic break than broken metadata.
        return {}, text, 0
    block = "\n".join(lines[1:end])
    name = describe_source(source)
    try:
        loaded = yaml.safe_load(block) if block.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorruptDocument(
            f"invalid YAML frontmatter in {name}{line}: {problem}", source=source
        ) from exc
    if not isinstance(loaded, dict):
        raise CorruptDocument(
            f"YAML frontmatter in {name} must be a mapping of keys to values (got {type(loaded).__name__})",
            source=source,
        )
    metadata: dict[str, str] = {}
    _flatten(loaded, "", metadata)
    return metadata, "\n".join(lines[end + 1 :]), end + 1


def _flatten(value: dict[Any, Any], prefix: str, out: dict[str, str]) -> None:
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            _flatten(item, f"{name}.", out)
        elif isinstance(item, list | tuple | set):
            out[name] = ", ".join(_scalar(x) for x in item)
        elif item is not None:
            out[name] = _scalar(item)


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)


def parse_markdown(data: str | bytes, *, source: str = "") -> ParsedDocument:
    """Parse markdown into sections by heading, with frontmatter as metadata."""
    metadata, body, _ = split_frontmatter(decode_text(data, source=source), source=source)
    builder = SectionBuilder()
    pending: list[str] = []  # prose, list and table lines not yet turned into paragraphs
    hard: set[int] = set()  # indices in `pending` of table rows, which keep their own line

    def flush_prose() -> None:
        for paragraph in lines_to_paragraphs(pending, hard=frozenset(hard)):
            builder.paragraph(paragraph)
        pending.clear()
        hard.clear()

    lines = body.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            flush_prose()
            marker = fence.group(1)
            code: list[str] = []
            index += 1
            while index < len(lines) and not lines[index].strip().startswith(marker[0] * len(marker)):
                code.append(lines[index])
                index += 1
            # Code keeps its line breaks; blank lines inside it must not start a new paragraph.
            builder.paragraph("\n".join(c.rstrip() for c in code if c.strip()))
            index += 1
            continue
        atx = _ATX.match(line)
        if atx:
            flush_prose()
            builder.heading(len(atx.group(1)), strip_inline(atx.group(2) or ""))
            index += 1
            continue
        next_line = lines[index + 1] if index + 1 < len(lines) else ""
        after_blank = not pending or not pending[-1].strip()
        if line.strip() and after_blank and _SETEXT.match(next_line) and not _BULLET.match(line):
            flush_prose()
            builder.heading(1 if next_line.strip().startswith("=") else 2, strip_inline(line))
            index += 2
            continue
        if _TABLE_SEPARATOR.match(line) and "|" in line:
            index += 1  # the |---| row under a table header carries no text
            continue
        if _RULE.match(line) or _REF_DEFINITION.match(line):
            flush_prose()
            index += 1
            continue
        plain, is_row = _plain_line(line)
        if is_row:
            hard.add(len(pending))
        pending.append(plain)
        index += 1
    flush_prose()
    sections = builder.finish()
    title = metadata.get("title") or (builder.first_heading[1] if builder.first_heading else "")
    return build_document(sections, title=title, content_type="markdown", metadata=metadata)


def _plain_line(line: str) -> tuple[str, bool]:
    """Plain text of one body line, and whether it is a table row."""
    line = _QUOTE.sub("", line)
    while _QUOTE.match(line):
        line = _QUOTE.sub("", line)
    indent = ""
    bullet = _BULLET.match(line)
    if bullet:
        # Drop the bullet but keep the line a list item (its own line) for sentence splitting.
        indent = "- "
        line = line[bullet.end() :]
    stripped = line.strip()
    if stripped.startswith("|") and stripped.endswith("|") and len(stripped) > 1:
        cells = [strip_inline(cell) for cell in stripped[1:-1].split("|")]
        return " | ".join(cells), True
    return (indent + strip_inline(line) if line.strip() else ""), False
