"""A folder of mixed-format documents for the ingestion benchmark: SciFact abstracts (../shared/eval/scifact) written
as txt, md, html, pdf (a text layer), docx, pptx, xlsx, eml, png (a scanned page) or image-only PDF pages.
"""

from __future__ import annotations

import io
import json
import textwrap
from collections.abc import Callable
from pathlib import Path

from scripts.common import SCIFACT_DIR

CORPUS = SCIFACT_DIR / "corpus.jsonl"


def _lines(text: str) -> list[str]:
    return textwrap.wrap(text, 90) or [""]


def _pages(lines: list[str], pages: int) -> list[list[str]]:
    pages = max(1, min(pages, len(lines)))
    size = -(-len(lines) // pages)
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def make_txt(title: str, text: str, pages: int) -> tuple[bytes, int]:
    return f"{title}\n\n{text}\n".encode(), 0


def make_md(title: str, text: str, pages: int) -> tuple[bytes, int]:
    return f"# {title}\n\n## Abstract\n\n{text}\n".encode(), 0


def make_html(title: str, text: str, pages: int) -> tuple[bytes, int]:
    from html import escape
    body = "".join(f"<p>{escape(s)}.</p>" for s in text.split(". ") if s)
    return (f"<!doctype html><html><head><title>{escape(title)}</title></head><body><h1>{escape(title)}</h1>"
            f"{body}</body></html>").encode(), 0


def make_pdf(title: str, text: str, pages: int) -> tuple[bytes, int]:
    """A PDF with a text layer: Helvetica, one line per text operator."""
    from pypdf import PdfWriter
    from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

    writer = PdfWriter()
    font = writer._add_object(DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                                                NameObject("/Subtype"): NameObject("/Type1"),
                                                NameObject("/BaseFont"): NameObject("/Helvetica")}))
    chunks = _pages([title, ""] + _lines(text), pages)
    for lines in chunks:
        page = writer.add_blank_page(612, 792)
        fonts = DictionaryObject({NameObject("/F1"): font})
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): fonts})
        escaped = (x.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for x in lines)
        ops = "BT /F1 11 Tf 14 TL 72 740 Td " + " ".join(f"({x}) Tj T*" for x in escaped) + " ET"
        stream = DecodedStreamObject()
        stream.set_data(ops.encode("latin-1", "replace"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue(), len(chunks)


def _scan_pages(title: str, text: str, pages: int) -> list:  # type: ignore[type-arg]
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=26)
    images = []
    for lines in _pages([title, ""] + _lines(text), pages):
        image = Image.new("L", (1275, 1650), 255)  # US letter at 150 dpi
        draw = ImageDraw.Draw(image)
        for n, line in enumerate(lines):
            draw.text((110, 120 + n * 40), line, fill=0, font=font)
        images.append(image)
    return images


def make_scanned(title: str, text: str, pages: int) -> tuple[bytes, int]:
    """An image-only PDF (no text layer): each page a 150-dpi greyscale scan of the text."""
    images = _scan_pages(title, text, pages)
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=150.0, save_all=True, append_images=images[1:])
    return buffer.getvalue(), len(images)


def make_png(title: str, text: str, pages: int) -> tuple[bytes, int]:
    """One scanned page as a PNG image (the first page of ``make_scanned``'s rendering)."""
    image = _scan_pages(title, text, 1)[0]
    buffer = io.BytesIO()
    image.save(buffer, "PNG", dpi=(150, 150))
    return buffer.getvalue(), 1


def make_eml(title: str, text: str, pages: int) -> tuple[bytes, int]:
    from email.message import EmailMessage

    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "lab@example.org", "team@example.org", title[:200]
    message.set_content(text)
    return message.as_bytes(), 0


def make_docx(title: str, text: str, pages: int) -> tuple[bytes, int]:
    import docx

    document = docx.Document()
    document.add_heading(title, level=1)
    for sentence in text.split(". "):
        document.add_paragraph(sentence)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue(), 0


def make_pptx(title: str, text: str, pages: int) -> tuple[bytes, int]:
    import pptx

    deck = pptx.Presentation()
    for lines in _pages(_lines(text), pages):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title[:120]
        slide.placeholders[1].text = "\n".join(lines)
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue(), 0


def make_xlsx(title: str, text: str, pages: int) -> tuple[bytes, int]:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["title", "sentence"])
    for sentence in text.split(". "):
        sheet.append([title[:200], sentence])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue(), 0


MAKERS: dict[str, Callable[[str, str, int], tuple[bytes, int]]] = {
    "txt": make_txt, "md": make_md, "html": make_html, "pdf": make_pdf, "docx": make_docx,
    "pptx": make_pptx, "xlsx": make_xlsx, "eml": make_eml, "png": make_png, "scanned": make_scanned,
}
EXTENSIONS = {"scanned": "pdf"}
OCR_FORMATS = ("scanned", "png")


def write_corpus(folder: Path, count: int, formats: list[str], pdf_pages: int) -> dict[str, dict[str, int]]:
    """``count`` documents in ``folder``; returns per file name its format and page count."""
    files: dict[str, dict[str, int]] = {}
    with CORPUS.open(encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if n >= count:
                break
            row = json.loads(line)
            fmt = formats[n % len(formats)]
            data, pages = MAKERS[fmt](row["title"], row["text"], pdf_pages)
            name = f"{row['_id']}-{fmt}.{EXTENSIONS.get(fmt, fmt)}"
            (folder / name).write_bytes(data)
            files[name] = {"format": formats.index(fmt), "pages": pages}
    return files
