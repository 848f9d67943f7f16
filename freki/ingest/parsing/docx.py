"""DOCX: paragraphs and tables in body order; heading styles start sections; core properties as metadata."""

from __future__ import annotations

import io
import re
import zipfile
import zlib

import docx
from docx.document import Document as DocxDocument
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table, _Cell
from docx.text.paragraph import Paragraph

from freki.ingest.parsing.document import ParsedDocument, SectionBuilder, build_document
from freki.ingest.parsing.errors import CorruptDocument, EncryptedDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.tables import check_table_size, table_text
from freki.ingest.parsing.text import clean_inline, office_properties

_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_LIST_STYLE = re.compile(r"list", re.IGNORECASE)
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def parse_docx(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse a Word .docx file; tables become Markdown tables (``freki.ingest.parsing.tables``).

    Raises:
        LimitExceeded: A table has more rows or columns than ``limits.table_max_rows`` / ``table_max_columns``.
        EncryptedDocument: The file is a password-protected (OLE-wrapped) document.
        CorruptDocument: The file is not a readable .docx package.
    """
    name = describe_source(source)
    if data.startswith(OLE_MAGIC):
        raise EncryptedDocument(
            f"DOCX is encrypted or is a legacy .doc file: {name} is an OLE container, not a .docx "
            "package; remove the password or save it as .docx",
            source=source,
        )
    try:
        document = docx.Document(io.BytesIO(data))
        builder = SectionBuilder()
        title = _walk(document, builder, limits or ParseLimits(), source)
        metadata = office_properties(document.core_properties)
    except (zipfile.BadZipFile, zlib.error, EOFError, PackageNotFoundError, KeyError, ValueError, OSError) as exc:
        raise CorruptDocument(
            f"DOCX is corrupt or truncated: {name} cannot be read as a Word package ({exc})", source=source
        ) from exc
    # python-docx surfaces malformed XML as lxml errors; those have no common import-safe base class.
    except Exception as exc:
        if type(exc).__module__.startswith("lxml"):
            message = f"DOCX is corrupt: {name} has malformed XML ({exc})"
            raise CorruptDocument(message, source=source) from exc
        raise
    sections = builder.finish()
    first = builder.first_heading
    title = metadata.get("title") or title or (first[1] if first else "")
    return build_document(sections, title=title, content_type="docx", metadata=metadata)


def _walk(document: DocxDocument, builder: SectionBuilder, limits: ParseLimits, source: str) -> str:
    """Feed body paragraphs and tables to `builder`; return the text of a Title-styled paragraph."""
    title = ""
    list_lines: list[str] = []

    def flush_list() -> None:
        if list_lines:
            builder.paragraph("\n".join(list_lines))
            list_lines.clear()

    for block in document.iter_inner_content():
        if isinstance(block, Table):
            flush_list()
            rows = _table_rows(block)
            check_table_size(rows, limits, source=source)
            builder.paragraph(table_text(rows))
            continue
        text = clean_inline(block.text)
        if not text:
            continue
        style = _style_name(block)
        heading = _HEADING_STYLE.match(style)
        if heading:
            flush_list()
            builder.heading(int(heading.group(1)), text)
        elif style.lower() in ("title",):
            flush_list()
            title = title or text
            builder.heading(1, text)
        elif _LIST_STYLE.search(style):
            # Each list item keeps its own line so sentence splitting treats it as a unit.
            list_lines.append(f"- {text}")
        else:
            flush_list()
            builder.paragraph(text)
    flush_list()
    return title


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "") if style is not None else ""


def _table_rows(table: Table) -> list[list[str]]:
    """Cell texts by row and grid column.

    A cell merged across columns gives its text once, then empty cells (the columns stay aligned); one
    merged down rows repeats its text in each, so every row reads on its own. A table nested in a cell is
    flattened into that cell's text, its cells joined by commas and its rows by semicolons.
    """
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            cells.append("" if previous is not None and cell._tc is previous._tc else _cell_text(cell))
            previous = cell
        rows.append(cells)
    return rows


def _cell_text(cell: _Cell) -> str:
    parts: list[str] = []
    for block in cell.iter_inner_content():
        if isinstance(block, Table):
            parts.append("; ".join(", ".join(c for c in row if c) for row in _table_rows(block) if any(row)))
        else:
            parts.append(clean_inline(block.text))
    return " ".join(part for part in parts if part)
