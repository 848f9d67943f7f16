"""Spreadsheets (.xlsx, .ods): one section per visible sheet, its used range as a Markdown table.

Cells are counted while rows stream in, never from a sheet's declared size (a declared range can claim a
million cells a file does not hold, and a file can hold more than it declares): past
``limits.spreadsheet_max_cells`` the document is refused. An empty row counts as one cell, so a file that
spreads a few values over a million rows is refused as fast as one that fills them. Formulas give their
cached value (what the author last saw). Hidden sheets are not indexed; their names are listed in the
``hidden_sheets`` metadata (docs/decisions/0101-office-email-ebook-formats.md).
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from freki.ingest.parsing.document import Metadata, ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, LimitExceeded, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.opendocument import TABLE, TEXT, check_not_encrypted, iter_xml, paragraph_text
from freki.ingest.parsing.tables import markdown_table

Row = Sequence[object]


class CellBudget:
    """Counts the cells of one document; refuses it past ``limits.spreadsheet_max_cells``."""

    def __init__(self, limit: int, source: str) -> None:
        self.limit = limit
        self.used = 0
        self._source = source

    def take(self, cells: int) -> None:
        """Count ``cells`` more (an empty row is one)."""
        self.used += max(cells, 1)
        if self.used > self.limit:
            raise LimitExceeded(
                f"spreadsheet {describe_source(self._source)} has more than {self.limit:,} cells; the limit is "
                f"{self.limit:,} (limits.spreadsheet_max_cells)", setting="limits.spreadsheet_max_cells",
                source=self._source,
            )


def parse_xlsx(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse an Excel .xlsx/.xlsm workbook (read-only streaming, cached formula values).

    Raises:
        LimitExceeded: More cells than ``limits.spreadsheet_max_cells``.
        CorruptDocument: The file is not a readable workbook.
    """
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    budget = CellBudget((limits or ParseLimits()).spreadsheet_max_cells, source)
    name = describe_source(source)
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, zlib.error, EOFError, InvalidFileException, KeyError, ValueError, OSError) as exc:
        raise CorruptDocument(f"XLSX is corrupt or truncated: {name} cannot be read ({exc})", source=source) from exc
    sheets: list[tuple[str, bool, list[Row]]] = []
    try:
        for sheet in workbook.worksheets:
            if sheet.sheet_state != "visible":
                sheets.append((sheet.title, False, []))
                continue
            sheet.reset_dimensions()  # iterate the rows the file holds, not the range it declares
            sheets.append((sheet.title, True, list(_counted(sheet.iter_rows(values_only=True), budget))))
        props = workbook.properties
        metadata: Metadata = {k: str(v) for k, v in (("title", props.title), ("author", props.creator)) if v}
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, ValueError, TypeError, OSError) as exc:
        raise CorruptDocument(f"XLSX is corrupt: {name} cannot be read ({exc})", source=source) from exc
    finally:
        workbook.close()
    return _document(sheets, metadata, "xlsx")


def parse_ods(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse an OpenDocument .ods spreadsheet, streaming ``content.xml``.

    Raises:
        EncryptedDocument: The file is password protected.
        LimitExceeded: More cells than ``limits.spreadsheet_max_cells``.
        CorruptDocument: The file is not a readable spreadsheet.
    """
    budget = CellBudget((limits or ParseLimits()).spreadsheet_max_cells, source)
    name = describe_source(source)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_not_encrypted(archive, source)
            with archive.open("content.xml") as content:
                sheets = list(_ods_sheets(content, budget))
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, OSError) as exc:
        raise CorruptDocument(f"ODS is corrupt or truncated: {name} cannot be read ({exc})", source=source) from exc
    except SyntaxError as exc:  # lxml's XMLSyntaxError
        raise CorruptDocument(f"ODS is corrupt: {name} has malformed XML ({exc})", source=source) from exc
    return _document(sheets, {}, "ods")


def _document(sheets: list[tuple[str, bool, list[Row]]], metadata: Metadata, kind: str) -> ParsedDocument:
    sections = []
    for title, visible, rows in sheets:
        table = markdown_table(rows) if visible else ""
        if table:
            sections.append(Section(text=f"{title}\n\n{table}", heading=title, heading_path=(title,), sheet=title))
    hidden = [title for title, visible, _ in sheets if not visible]
    if hidden:
        metadata["hidden_sheets"] = hidden
    return build_document(sections, title=str(metadata.get("title", "")), content_type=kind, metadata=metadata)


def _counted(rows: Iterable[Row], budget: CellBudget) -> Iterator[list[object]]:
    for row in rows:
        budget.take(len(row))
        yield [_cell_value(value) for value in row]


def _cell_value(value: object) -> object:
    """A cell as a person reads it: whole floats without ".0", dates without a midnight time."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return int(value)
    if isinstance(value, dt.datetime) and value.time() == dt.time():
        return value.date().isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return value


def _ods_sheets(content: Any, budget: CellBudget) -> Iterator[tuple[str, bool, list[Row]]]:
    """(name, visible, rows) of each sheet; ODF spells runs of equal cells or rows as one repeated element."""
    hidden_styles: set[str] = set()
    name, visible = "", True
    rows: list[Row] = []
    for event, element in iter_xml(content):
        tag = element.tag
        if event == "start":
            if tag == f"{TABLE}table":
                name = element.get(f"{TABLE}name", "")
                visible = element.get(f"{TABLE}style-name", "") not in hidden_styles
                rows = []
            continue
        if tag == "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}table-properties":
            if element.get(f"{TABLE}display") == "false":
                parent = element.getparent()
                hidden_styles.add(parent.get("{urn:oasis:names:tc:opendocument:xmlns:style:1.0}name", ""))
        elif tag == f"{TABLE}table-row":
            if visible:
                _ods_row(element, rows, budget)
            element.clear()
        elif tag == f"{TABLE}table":
            yield name, visible, rows
            element.clear()


def _ods_row(row: Any, rows: list[Row], budget: CellBudget) -> None:
    cells: list[object] = []
    pending_empty = 0  # empty cells are materialised only when a filled one follows them
    for cell in row:
        if cell.tag not in (f"{TABLE}table-cell", f"{TABLE}covered-table-cell"):
            continue
        repeat = _repeat(cell.get(f"{TABLE}number-columns-repeated"))
        text = "\n".join(paragraph_text(p) for p in cell.iter(f"{TEXT}p"))
        if not text.strip():
            pending_empty += repeat
            continue
        budget.take(pending_empty + repeat)
        cells.extend([""] * pending_empty + [text] * repeat)
        pending_empty = 0
    if not cells:
        budget.take(1)
        return
    rows.append(cells)  # its cells are counted above; each repetition counts again
    for _ in range(_repeat(row.get(f"{TABLE}number-rows-repeated")) - 1):
        budget.take(len(cells))
        rows.append(cells)


def _repeat(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1
