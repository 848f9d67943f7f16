"""PPTX, XLSX, ODS, ODT and EPUB parsing on real files written at test time
(tests/freki/ingest/office_files_support.py)."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from freki.ingest.parsing import CorruptDocument, LimitExceeded, ParseLimits, parse_document
from freki.ingest.parsing.tables import is_table
from tests.freki.ingest.office_files_support import build_epub, build_ods, build_odt, build_pptx, build_xlsx

DECK = [
    {"title": "Revenue plan", "body": ["Grow sales by ten percent.", "Open the Bergen office."],
     "notes": "Mention the hiring freeze."},
    {"body": ["A loose text box on a slide without a title."],
     "table": [["Region", "Sales"], ["North", "10"], ["South", "12"]]},
]


def test_pptx_one_section_per_slide_with_title_text_table_and_notes() -> None:
    doc = parse_document(build_pptx(DECK, title="Plan 2026"), source="deck.pptx")
    assert doc.content_type == "pptx"
    assert doc.title == "Plan 2026"
    first, second = doc.sections
    assert (first.slide, first.heading, first.heading_path) == (1, "Revenue plan", ("Revenue plan",))
    assert first.text == ("Revenue plan\n\nGrow sales by ten percent.\nOpen the Bergen office.\n\n"
                          "Notes: Mention the hiring freeze.")
    assert (second.slide, second.heading) == (2, "Slide 2")
    table = second.text.split("\n\n")[-1]
    assert is_table(table)
    assert table.splitlines()[0] == "| Region | Sales |"
    assert "| South | 12 |" in table


def test_pptx_grouped_shapes_are_read_in_reading_order() -> None:
    import io

    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    lower = slide.shapes.add_textbox(Inches(1), Inches(4), Inches(4), Inches(1))
    lower.text_frame.text = "Second, lower on the slide."
    group = slide.shapes.add_group_shape()
    inner = group.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    inner.text_frame.text = "First, inside a group at the top."
    out = io.BytesIO()
    deck.save(out)
    doc = parse_document(out.getvalue(), source="grouped.pptx")
    assert doc.sections[0].text == "Slide 1\n\nFirst, inside a group at the top.\n\nSecond, lower on the slide."


def test_pptx_over_the_slide_limit_is_refused_naming_the_setting() -> None:
    data = build_pptx([{"body": [f"slide {n}"]} for n in range(4)])
    with pytest.raises(LimitExceeded, match=r"4 slides; the limit is 3 \(limits.pptx_max_slides\)") as caught:
        parse_document(data, source="big.pptx", limits=ParseLimits(pptx_max_slides=3))
    assert caught.value.setting == "limits.pptx_max_slides"


def test_xlsx_one_section_per_visible_sheet_as_markdown_table() -> None:
    data = build_xlsx({"Sales": [["Region", "Sales"], ["North", 10.0], ["South", 12.5]],
                       "Staff": [["Name"], ["Ann"]], "Lookup": [["secret", 1]]}, hidden=["Lookup"])
    doc = parse_document(data, source="book.xlsx")
    assert [(s.sheet, s.heading) for s in doc.sections] == [("Sales", "Sales"), ("Staff", "Staff")]
    assert doc.sections[0].text == "Sales\n\n| Region | Sales |\n| --- | --- |\n| North | 10 |\n| South | 12.5 |"
    assert doc.metadata["hidden_sheets"] == ["Lookup"]
    assert "secret" not in doc.text


def _with_cached_formula(data: bytes) -> bytes:
    """Give the formula in Sales!B3 the cached value a spreadsheet program would have stored."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                body = re.sub(rb"<f>B2\*2</f>(<v></v>|<v/>)?", b"<f>B2*2</f><v>20</v>", body)
            target.writestr(item, body)
    return out.getvalue()


def test_xlsx_formulas_give_their_cached_values() -> None:
    data = _with_cached_formula(build_xlsx({"Sales": [["Region", "Sales"], ["North", 10], ["Twice", "=B2*2"]]}))
    doc = parse_document(data, source="book.xlsx")
    assert "| Twice | 20 |" in doc.text
    assert "B2" not in doc.text


def test_xlsx_cells_are_counted_while_streaming_not_from_the_declared_range() -> None:
    rows = [[f"r{r}c{c}" for c in range(10)] for r in range(50)]  # 500 cells
    data = build_xlsx({"Big": rows})
    assert parse_document(data, source="ok.xlsx", limits=ParseLimits(spreadsheet_max_cells=500)).sections
    with pytest.raises(LimitExceeded, match=r"limits.spreadsheet_max_cells") as caught:
        parse_document(data, source="big.xlsx", limits=ParseLimits(spreadsheet_max_cells=499))
    assert caught.value.setting == "limits.spreadsheet_max_cells"


def _declaring(data: bytes, dimension: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                body = re.sub(rb'<dimension ref="[^"]*"/>', b'<dimension ref="' + dimension + b'"/>', body)
            target.writestr(item, body)
    return out.getvalue()


def test_xlsx_a_lying_dimension_neither_hides_nor_invents_cells() -> None:
    small = _declaring(build_xlsx({"S": [["a", "b"], ["c", "d"]]}), b"A1:XFD1048576")
    doc = parse_document(small, source="lies.xlsx", limits=ParseLimits(spreadsheet_max_cells=10))
    assert doc.sections[0].text == "S\n\n| a | b |\n| --- | --- |\n| c | d |"
    big = _declaring(build_xlsx({"S": [[n] for n in range(100)]}), b"A1:A1")
    with pytest.raises(LimitExceeded, match="limits.spreadsheet_max_cells"):
        parse_document(big, source="hides.xlsx", limits=ParseLimits(spreadsheet_max_cells=50))


def test_xlsx_a_million_empty_rows_between_two_values_are_refused() -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "top"
    book.active["A1000000"] = "bottom"
    out = io.BytesIO()
    book.save(out)
    with pytest.raises(LimitExceeded, match="limits.spreadsheet_max_cells"):
        parse_document(out.getvalue(), source="sparse.xlsx")


def test_ods_sheets_and_repeated_cells() -> None:
    doc = parse_document(build_ods({"Sales": [["Region", "Sales"], ["North", 10]], "Empty": []}), source="b.ods")
    assert doc.content_type == "ods"
    assert [s.sheet for s in doc.sections] == ["Sales"]
    assert doc.sections[0].text == "Sales\n\n| Region | Sales |\n| --- | --- |\n| North | 10 |"


def _ods_with_content(content: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("content.xml", content)
    return out.getvalue()


ODS_NS = (b'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          b'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          b'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')


def test_ods_trailing_empty_repeats_are_free_but_repeated_values_count() -> None:
    # What every spreadsheet program writes: a sheet padded to its full size with repeated empty cells/rows.
    padded = (b"<office:document-content " + ODS_NS + b"><office:body><office:spreadsheet>"
              b'<table:table table:name="T"><table:table-row><table:table-cell><text:p>x</text:p>'
              b'</table:table-cell><table:table-cell table:number-columns-repeated="16383"/></table:table-row>'
              b'<table:table-row table:number-rows-repeated="1048575"><table:table-cell '
              b'table:number-columns-repeated="16384"/></table:table-row></table:table>'
              b"</office:spreadsheet></office:body></office:document-content>")
    assert parse_document(_ods_with_content(padded), source="padded.ods").sections[0].sheet == "T"
    repeated = padded.replace(b'<table:table-cell table:number-columns-repeated="16383"/>',
                              b'<table:table-cell table:number-columns-repeated="16383"><text:p>y</text:p>'
                              b"</table:table-cell>")
    with pytest.raises(LimitExceeded, match="limits.spreadsheet_max_cells"):
        parse_document(_ods_with_content(repeated), source="repeated.ods",
                       limits=ParseLimits(spreadsheet_max_cells=1000))


def test_ods_hidden_sheets_are_listed_not_indexed() -> None:
    content = (b"<office:document-content " + ODS_NS + b' xmlns:style="urn:oasis:names:tc:opendocument:xmlns:'
               b'style:1.0"><office:automatic-styles><style:style style:name="ta2" style:family="table">'
               b'<style:table-properties table:display="false"/></style:style></office:automatic-styles>'
               b'<office:body><office:spreadsheet><table:table table:name="Shown"><table:table-row>'
               b"<table:table-cell><text:p>visible value</text:p></table:table-cell></table:table-row></table:table>"
               b'<table:table table:name="Lookup" table:style-name="ta2"><table:table-row><table:table-cell>'
               b"<text:p>hidden value</text:p></table:table-cell></table:table-row></table:table>"
               b"</office:spreadsheet></office:body></office:document-content>")
    doc = parse_document(_ods_with_content(content), source="h.ods")
    assert [s.sheet for s in doc.sections] == ["Shown"]
    assert doc.metadata["hidden_sheets"] == ["Lookup"] and "hidden value" not in doc.text


def test_odt_headings_paragraphs_lists_tables_and_metadata() -> None:
    data = build_odt([("h1", "Introduction"), ("p", "Freki indexes OpenDocument files."),
                      ("list", ["first item", "second item"]), ("h2", "Figures"),
                      ("table", [["Year", "Revenue"], ["2025", "10"]])], title="Annual report", author="Ann Author")
    doc = parse_document(data, source="report.odt")
    assert (doc.content_type, doc.title, doc.metadata["author"]) == ("odt", "Annual report", "Ann Author")
    intro, figures = doc.sections
    assert intro.text == "Introduction\n\nFreki indexes OpenDocument files.\n\n- first item\n- second item"
    assert figures.heading_path == ("Introduction", "Figures")
    assert figures.text.endswith("| Year | Revenue |\n| --- | --- |\n| 2025 | 10 |")


def test_epub_chapters_in_spine_order_with_headings_and_metadata() -> None:
    data = build_epub([("The Beginning", "<h1>The Beginning</h1><p>It was a dark night.</p><h2>Later</h2>"
                        "<p>Then came the dawn.</p>"), ("Interlude", "<p>No heading in this chapter.</p>")],
                      title="A Tale", author="Ann Author", language="no")
    doc = parse_document(data, source="tale.epub")
    assert (doc.content_type, doc.title) == ("epub", "A Tale")
    assert (doc.metadata["author"], doc.metadata["language"]) == ("Ann Author", "no")
    assert [s.heading_path for s in doc.sections] == [("The Beginning",), ("The Beginning", "Later"), ("Interlude",)]
    assert doc.sections[2].text == "Interlude\n\nNo heading in this chapter."


def test_xlsx_with_malformed_sheet_xml_is_corrupt() -> None:
    source = zipfile.ZipFile(io.BytesIO(build_xlsx({"S": [["a", "b"], ["c", "d"]]})))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            target.writestr(item, body[: len(body) // 2] if item.filename == "xl/worksheets/sheet1.xml" else body)
    with pytest.raises(CorruptDocument, match="XLSX is corrupt"):
        parse_document(out.getvalue(), source="broken.xlsx")


def test_epub2_chapter_titles_come_from_the_ncx() -> None:
    """An EPUB 2 book has no navigation document: the NCX names the chapters."""
    source = zipfile.ZipFile(io.BytesIO(build_epub([("Prologue", "<p>Before it all began.</p>")])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            body = source.read(item)
            if item.filename == "EPUB/content.opf":
                body = re.sub(rb'<item href="nav.xhtml"[^>]*/>|<itemref idref="nav"/>', b"", body)
            if item.filename != "EPUB/nav.xhtml":
                target.writestr(item, body)
    doc = parse_document(out.getvalue(), source="old.epub")
    assert [(s.heading, s.text) for s in doc.sections] == [("Prologue", "Prologue\n\nBefore it all began.")]


@pytest.mark.parametrize(("name", "data"), [
    ("deck.pptx", build_pptx(DECK)), ("book.xlsx", build_xlsx({"S": [["a"]]})), ("b.ods", build_ods({"S": [["a"]]})),
    ("r.odt", build_odt([("p", "text")])), ("t.epub", build_epub([("One", "<p>x</p>")])),
])
def test_truncated_packages_are_corrupt(name: str, data: bytes) -> None:
    with pytest.raises(CorruptDocument):
        parse_document(data[: len(data) // 2], source=name)


def test_slides_a_deck_declares_count_against_the_limit_before_any_is_resolved() -> None:
    from tests.freki.api.hostile_documents_support import declared_slides_pptx

    with pytest.raises(LimitExceeded, match=r"100,001 slides; the limit is 1,000 \(limits.pptx_max_slides\)"):
        parse_document(declared_slides_pptx(100_000), source="declared.pptx")
