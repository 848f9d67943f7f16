"""Tables from real files (PDFs drawn with fpdf2, DOCX with python-docx, HTML) come out as Markdown tables
with their header, once, in reading order; table limits refuse naming the setting."""

from __future__ import annotations

import io

import docx
import pytest
from fpdf import FPDF

from freki.ingest.parsing import LimitExceeded, ParseLimits, parse_document
from freki.ingest.parsing.tables import is_table

ROWS = [["Part", "Supplier", "Price", "Shelf"]] + [
    [f"PN-{i}", "Nordwerk GmbH", f"{i}.50", f"Aisle {i} shelf B"] for i in range(12)
]
BEFORE = "Quarterly report. The parts our suppliers delivered in the third quarter are listed below."
AFTER = "After the table comes more prose. Prices include tax."


def table_pdf(borders: str, rows: list[list[str]] = ROWS) -> bytes:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    pdf.multi_cell(0, 5, BEFORE)
    pdf.ln(3)
    with pdf.table(borders_layout=borders, col_widths=(25, 45, 30, 60)[: len(rows[0])], text_align="LEFT") as table:
        for row in rows:
            cells = table.row()
            for value in row:
                cells.cell(value)
    pdf.ln(3)
    pdf.multi_cell(0, 5, AFTER)
    return bytes(pdf.output())


def paragraphs(text: str) -> list[str]:
    return text.split("\n\n")


@pytest.mark.parametrize("borders", ["ALL", "NONE", "HORIZONTAL_LINES"])
def test_pdf_table_is_a_markdown_table_between_the_prose(borders: str) -> None:
    doc = parse_document(table_pdf(borders), source="parts.pdf")
    before, table, after = paragraphs(doc.sections[0].text)
    assert before == BEFORE and after == AFTER
    assert is_table(table)
    lines = table.split("\n")
    assert lines[0] == "| Part | Supplier | Price | Shelf |"
    assert lines[3] == "| PN-1 | Nordwerk GmbH | 1.50 | Aisle 1 shelf B |"
    assert len(lines) == 2 + 12
    assert doc.text.count("Nordwerk GmbH") == 12  # the table's words once, in the table


def test_pdf_prose_under_a_drawn_rule_is_not_a_table() -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    for _ in range(3):
        pdf.multi_cell(0, 5, BEFORE + " " + AFTER)
        pdf.line(10, pdf.get_y() + 1, 200, pdf.get_y() + 1)
        pdf.rect(10, pdf.get_y() + 2, 190, 1)
        pdf.ln(4)
    doc = parse_document(bytes(pdf.output()), source="memo.pdf")
    assert "|" not in doc.text and doc.text.count("Quarterly report.") == 3


def test_pdf_table_pages_beyond_the_limit_keep_their_text_and_say_so() -> None:
    doc = parse_document(table_pdf("ALL"), source="parts.pdf", limits=ParseLimits(pdf_table_pages=0))
    assert "|" not in doc.text and "PN-11 Nordwerk GmbH 11.50" in doc.text
    assert doc.metadata["table_pages_not_read"] == "1 (limits.pdf_table_pages)"


def test_pdf_table_over_the_column_limit_is_refused_naming_the_setting() -> None:
    with pytest.raises(LimitExceeded, match=r"table of 4 columns; the limit is 3 \(limits.table_max_columns\)"):
        parse_document(table_pdf("ALL"), source="parts.pdf", limits=ParseLimits(table_max_columns=3))


def docx_bytes(build: object) -> bytes:
    document = docx.Document()
    document.add_paragraph("Before the table.")
    build(document)  # type: ignore[operator]
    document.add_paragraph("After the table.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_table_first_row_is_the_header_merged_and_nested_cells_stay_aligned() -> None:
    def build(document: docx.document.Document) -> None:
        table = document.add_table(rows=4, cols=3)
        for r, row in enumerate([["Region", "Quarter", "Revenue"], ["North", "Q1", "10"],
                                 ["", "Q2", "12"], ["Total", "", "22"]]):
            for c, value in enumerate(row):
                table.cell(r, c).text = value
        table.cell(1, 0).merge(table.cell(2, 0))  # "North" spans two rows
        table.cell(3, 0).merge(table.cell(3, 1))  # "Total" spans two columns
        inner = table.cell(3, 2).add_table(rows=1, cols=2)
        inner.cell(0, 0).text, inner.cell(0, 1).text = "audited", "yes"

    doc = parse_document(docx_bytes(build), source="revenue.docx")
    assert paragraphs(doc.text) == [
        "Before the table.",
        "| Region | Quarter | Revenue |\n| --- | --- | --- |\n| North | Q1 | 10 |\n| North | Q2 | 12 |\n"
        "| Total |  | 22 audited, yes |",
        "After the table.",
    ]


def test_docx_one_column_layout_table_is_paragraphs() -> None:
    def build(document: docx.document.Document) -> None:
        table = document.add_table(rows=2, cols=1)
        table.cell(0, 0).text, table.cell(1, 0).text = "First boxed note.", "Second boxed note."

    doc = parse_document(docx_bytes(build), source="notes.docx")
    assert paragraphs(doc.text) == ["Before the table.", "First boxed note.", "Second boxed note.", "After the table."]


HTML_TABLE = """<html><body><h1>Prices</h1><p>Before.</p>
<table><caption>Fruit prices</caption>
<thead><tr><th>Fruit</th><th>Price</th><th>Origin</th></tr></thead>
<tbody><tr><td rowspan="2">Apple<br>green</td><td>1.20</td><td><p>Norway</p></td></tr>
<tr><td>1.30</td><td>Sweden</td></tr>
<tr><td colspan="2">Pear</td><td><table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table></td></tr>
<tr><td>Kiwi | gold<td>2.00<td>New Zealand
</tbody></table>
<table><tr><td><p>Layout one.</p></td></tr><tr><td>Layout two.</td></tr></table>
<p>After.</p></body></html>"""


def test_html_table_header_spans_nesting_and_layout_tables() -> None:
    doc = parse_document(HTML_TABLE, source="prices.html")
    assert paragraphs(doc.text) == [
        "Prices", "Before.", "Fruit prices",
        "| Fruit | Price | Origin |\n| --- | --- | --- |\n| Apple green | 1.20 | Norway |\n"
        "| Apple green | 1.30 | Sweden |\n| Pear |  | a, b; c, d |\n| Kiwi \\| gold | 2.00 | New Zealand |",
        "Layout one.", "Layout two.", "After.",
    ]


def test_html_hostile_spans_and_rows_are_refused_naming_the_setting() -> None:
    wide = "<table><tr><td colspan='99999'>x</td><td>y</td></tr></table>"
    with pytest.raises(LimitExceeded, match=r"limits.table_max_columns"):
        parse_document(wide, source="wide.html")
    long = "<table>" + "<tr><td>a</td><td>b</td></tr>" * 30 + "</table>"
    with pytest.raises(LimitExceeded, match=r"31|30 rows; the limit is 20 \(limits.table_max_rows\)"):
        parse_document(long, source="long.html", limits=ParseLimits(table_max_rows=20))


def test_markdown_table_keeps_its_shape() -> None:
    doc = parse_document("# T\n\nText.\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n", source="t.md")
    assert paragraphs(doc.text) == ["T", "Text.", "| a | b |\n| --- | --- |\n| 1 | 2 |"]


def test_table_settings_reach_the_parser(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from freki.engine.config import parse_limits
    from freki.settings import FrekiSettings

    settings = FrekiSettings(data_dir=tmp_path, limits={"table_max_rows": 7, "table_max_columns": 9,
                                                        "pdf_table_pages": 3})  # type: ignore[arg-type]
    limits = parse_limits(settings)
    assert (limits.table_max_rows, limits.table_max_columns, limits.pdf_table_pages) == (7, 9, 3)
    with pytest.raises(LimitExceeded, match=r"table of 13 rows; the limit is 7 \(limits.table_max_rows\)"):
        parse_document(table_pdf("ALL"), source="parts.pdf", limits=limits)


def test_pdf_two_column_prose_is_not_a_table() -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=10)
    pdf.add_page()
    left = " ".join(f"Left column sentence number {i} talks about the harbour and its ships." for i in range(25))
    right = " ".join(f"Right column sentence number {i} talks about the mountain and its snow." for i in range(25))
    with pdf.text_columns(ncols=2, gutter=10) as columns:
        columns.write(left)
        columns.new_column()
        columns.write(right)
    doc = parse_document(bytes(pdf.output()), source="paper.pdf")
    assert "|" not in doc.text
    assert "Left column sentence number 3 talks about the harbour" in doc.text
    assert "Right column sentence number 3 talks about the mountain" in doc.text
