"""Real office, e-mail and e-book files built at test time with the writing side of real libraries.

python-pptx, openpyxl, odfpy, ebooklib, the stdlib ``email`` package and aspose-email-foss (an MIT-licensed
pure-Python MSG writer) write them; Freki reads them with its own parsers. Used by the parser tests, the
end-to-end and watcher tests, and ``scripts/eval/formats.py``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import UTC
from email.message import EmailMessage

Attachments = Sequence[tuple[str, bytes, str]]  # (file name, bytes, MIME type)


def build_pptx(slides: Sequence[dict[str, object]], *, title: str = "") -> bytes:
    """A deck; each slide dict may hold "title", "body" (list of lines), "table" (rows), "notes"."""
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    for spec in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1 if spec.get("title") else 6])
        if spec.get("title"):
            slide.shapes.title.text = str(spec["title"])
            body = slide.placeholders[1].text_frame
            lines = list(spec.get("body", []))  # type: ignore[call-overload]
            body.text = lines[0] if lines else ""
            for line in lines[1:]:
                body.add_paragraph().text = line
        elif spec.get("body"):
            box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(6), Inches(2))
            box.text_frame.text = "\n".join(spec["body"])  # type: ignore[arg-type]
        rows = spec.get("table")
        if rows:
            rows = list(rows)  # type: ignore[call-overload]
            shape = slide.shapes.add_table(len(rows), len(rows[0]), Inches(1), Inches(5), Inches(6), Inches(1))
            for r, row in enumerate(rows):
                for c, value in enumerate(row):
                    shape.table.cell(r, c).text = str(value)
        if spec.get("notes"):
            slide.notes_slide.notes_text_frame.text = str(spec["notes"])
    if title:
        deck.core_properties.title = title
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def build_xlsx(sheets: dict[str, Sequence[Sequence[object]]], *, hidden: Sequence[str] = ()) -> bytes:
    """A workbook with one sheet per entry (rows of values; a str starting with "=" is a formula)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
        if name in hidden:
            sheet.sheet_state = "hidden"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def build_ods(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    """An OpenDocument spreadsheet written by odfpy."""
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    doc = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            table_row = TableRow()
            for value in row:
                if isinstance(value, (int, float)):
                    cell = TableCell(valuetype="float", value=value)
                else:
                    cell = TableCell(valuetype="string")
                cell.addElement(P(text=str(value)))
                table_row.addElement(cell)
            table.addElement(table_row)
        doc.spreadsheet.addElement(table)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def build_odt(blocks: Sequence[tuple[str, object]], *, title: str = "", author: str = "") -> bytes:
    """An OpenDocument text: blocks are ("h1"/"h2", text), ("p", text), ("list", [items]), ("table", rows)."""
    from odf import dc
    from odf.opendocument import OpenDocumentText
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, P

    doc = OpenDocumentText()
    for kind, value in blocks:
        if kind.startswith("h"):
            doc.text.addElement(H(outlinelevel=int(kind[1:]), text=str(value)))
        elif kind == "p":
            doc.text.addElement(P(text=str(value)))
        elif kind == "list":
            listing = List()
            for item in value:  # type: ignore[attr-defined]
                entry = ListItem()
                entry.addElement(P(text=str(item)))
                listing.addElement(entry)
            doc.text.addElement(listing)
        elif kind == "table":
            rows = list(value)  # type: ignore[call-overload]
            table = Table()
            table.addElement(TableColumn(numbercolumnsrepeated=len(rows[0])))
            for row in rows:
                table_row = TableRow()
                for cell_value in row:
                    cell = TableCell()
                    cell.addElement(P(text=str(cell_value)))
                    table_row.addElement(cell)
                table.addElement(table_row)
            doc.text.addElement(table)
    if title:
        doc.meta.addElement(dc.Title(text=title))
    if author:
        doc.meta.addElement(dc.Creator(text=author))
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


def build_epub(chapters: Sequence[tuple[str, str]], *, title: str = "A Book", author: str = "Ann Author",
               language: str = "en") -> bytes:
    """An EPUB 3 whose chapters are (title, XHTML body) in spine order."""
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("freki-test-book")
    book.set_title(title)
    book.set_language(language)
    book.add_author(author)
    items = []
    for number, (heading, body) in enumerate(chapters, start=1):
        item = epub.EpubHtml(title=heading, file_name=f"chap_{number}.xhtml", lang=language)
        item.content = f"<html><head><title>{heading}</title></head><body>{body}</body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def build_eml(body: str, *, subject: str = "Quarterly numbers", html: str = "", attachments: Attachments = (),
              messages: Sequence[EmailMessage] = ()) -> bytes:
    """An e-mail from Ann to Bob (cc Carl) with a plain (or only an HTML) body, files and attached e-mails."""
    message = build_message(body, subject=subject, html=html, attachments=attachments)
    for inner in messages:
        message.add_attachment(inner)
    return message.as_bytes()


def build_message(body: str, *, subject: str, html: str = "", attachments: Attachments = ()) -> EmailMessage:
    """The EmailMessage of :func:`build_eml`."""
    message = EmailMessage()
    message["From"] = "Ann Example <ann@example.com>"
    message["To"] = "Bob Example <bob@example.com>, dan@example.com"
    message["Cc"] = "carl@example.com"
    message["Subject"] = subject
    message["Date"] = "Tue, 03 Mar 2026 10:15:00 +0000"
    message["Message-ID"] = "<q1-numbers@example.com>"
    if body:
        message.set_content(body)
        if html:
            message.add_alternative(html, subtype="html")
    else:
        message.set_content(html, subtype="html")
    for name, data, mime in attachments:
        maintype, subtype = mime.split("/", 1)
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message


def build_msg(body: str, *, subject: str = "Quarterly numbers", attachments: Attachments = (),
              embedded: Sequence[object] = ()) -> bytes:
    """An Outlook .msg written by aspose-email-foss; ``embedded`` holds MapiMessages attached as messages."""
    from datetime import datetime

    from aspose.email_foss import msg

    message = msg_message(body, subject=subject)
    message.set_property(msg.PropertyId.MESSAGE_DELIVERY_TIME, datetime(2026, 3, 3, 10, 15, tzinfo=UTC))
    message.add_recipient("bob@example.com", display_name="Bob Example")
    for name, data, mime in attachments:
        message.add_attachment(name, data, mime_type=mime)
    for inner in embedded:
        message.add_embedded_message_attachment(inner, filename=f"{inner.subject}.msg")  # type: ignore[attr-defined]
    return bytes(message.to_bytes())


def msg_message(body: str, *, subject: str) -> object:
    """A MapiMessage from Ann (to embed in another message, or to save)."""
    from aspose.email_foss import msg

    message = msg.MapiMessage.create(subject, body)
    message.set_property(msg.PropertyId.SENDER_NAME, "Ann Example")
    message.set_property(msg.PropertyId.SENDER_EMAIL_ADDRESS, "ann@example.com")
    return message
