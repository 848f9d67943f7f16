"""ODT (OpenDocument text): headings as sections, paragraphs, lists, tables as Markdown; meta.xml as metadata."""

from __future__ import annotations

import io
import zipfile
import zlib
from typing import Any

from freki.ingest.parsing.document import Metadata, ParsedDocument, SectionBuilder, build_document
from freki.ingest.parsing.errors import CorruptDocument, describe_source
from freki.ingest.parsing.opendocument import TABLE, TEXT, check_not_encrypted, paragraph_text
from freki.ingest.parsing.tables import markdown_table
from freki.ingest.parsing.text import clean_inline

_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
_META_KEYS = {f"{_DC}title": "title", f"{_DC}creator": "author", f"{_META}initial-creator": "author",
              f"{_DC}subject": "subject", f"{_DC}language": "language", f"{_META}keyword": "keywords"}
# Containers whose children are body blocks; anything else (tables of contents, forms, shapes) is skipped.
_CONTAINERS = frozenset({f"{TEXT}section", f"{TEXT}soft-page-break"})


def parse_odt(data: bytes, *, source: str = "") -> ParsedDocument:
    """Parse an OpenDocument text file.

    Raises:
        EncryptedDocument: The file is password protected.
        CorruptDocument: The file is not a readable OpenDocument package.
    """
    from lxml import etree

    name = describe_source(source)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_not_encrypted(archive, source)
            content = etree.fromstring(archive.read("content.xml"), parser)
            meta = etree.fromstring(archive.read("meta.xml"), parser) if "meta.xml" in archive.namelist() else None
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, OSError) as exc:
        raise CorruptDocument(f"ODT is corrupt or truncated: {name} cannot be read ({exc})", source=source) from exc
    except etree.XMLSyntaxError as exc:
        raise CorruptDocument(f"ODT is corrupt: {name} has malformed XML ({exc})", source=source) from exc
    body = content.find(f"{_OFFICE}body/{_OFFICE}text")
    builder = SectionBuilder()
    if body is not None:
        _blocks(body, builder)
    metadata = _metadata(meta)
    first = builder.first_heading
    title = str(metadata.get("title") or (first[1] if first else ""))
    return build_document(builder.finish(), title=title, content_type="odt", metadata=metadata)


def _blocks(parent: Any, builder: SectionBuilder) -> None:
    for child in parent:
        tag = child.tag
        if tag == f"{TEXT}h":
            level = child.get(f"{TEXT}outline-level", "1")
            builder.heading(int(level) if level.isdigit() else 1, paragraph_text(child))
        elif tag == f"{TEXT}p":
            builder.paragraph(paragraph_text(child))
        elif tag == f"{TEXT}list":
            builder.paragraph("\n".join(_list_lines(child, 0)))
        elif tag == f"{TABLE}table":
            builder.paragraph(markdown_table(_table_rows(child)))
        elif tag in _CONTAINERS:
            _blocks(child, builder)


def _list_lines(listing: Any, level: int) -> list[str]:
    """One line a list item, nested lists indented."""
    lines: list[str] = []
    for item in listing:
        if item.tag not in (f"{TEXT}list-item", f"{TEXT}list-header"):
            continue
        for block in item:
            if block.tag in (f"{TEXT}p", f"{TEXT}h"):
                text = paragraph_text(block)
                if text:
                    lines.append("  " * level + f"- {text}")
            elif block.tag == f"{TEXT}list":
                lines.extend(_list_lines(block, level + 1))
    return lines


def _table_rows(table: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.iter(f"{TABLE}table-row"):
        cells = [" ".join(filter(None, (paragraph_text(p) for p in cell.iter(f"{TEXT}p"))))
                 for cell in row if cell.tag in (f"{TABLE}table-cell", f"{TABLE}covered-table-cell")]
        rows.append(cells)
    return rows


def _metadata(meta: Any) -> Metadata:
    metadata: Metadata = {}
    if meta is None:
        return metadata
    for element in meta.iter():
        key = _META_KEYS.get(element.tag) if isinstance(element.tag, str) else None
        value = clean_inline(element.text or "")
        if key and value and key not in metadata:
            metadata[key] = value
    return metadata
