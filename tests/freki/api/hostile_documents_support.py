"""A corpus of hostile documents, built in memory (shared by the attack tests and scripts/bench/hostile_rss.py).

Each entry: (name, IndexDocument fields, the status it must get, a phrase its message must contain).
"""

from __future__ import annotations

import io
import os
import zipfile
from typing import Any

import grpc

CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
    'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName='
    '"/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.'
    'document.main+xml"/></Types>'
)
RELS = (
    '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/'
    '2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/'
    '2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>'
)
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx(document_xml: bytes | None = None, *, bomb_mib: int = 0) -> bytes:
    """A minimal .docx; ``bomb_mib`` makes word/document.xml inflate to that many MiB of whitespace."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES)
        archive.writestr("_rels/.rels", RELS)
        if bomb_mib:
            with archive.open("word/document.xml", "w", force_zip64=True) as member:
                member.write(f'<?xml version="1.0"?><w:document {W}><w:body>'.encode())
                block = b" " * (1 << 20)
                for _ in range(bomb_mib):
                    member.write(block)
                member.write(b"</w:body></w:document>")
        else:
            archive.writestr("word/document.xml", document_xml or b"")
    return buffer.getvalue()


def billion_laughs_docx() -> bytes:
    """DOCX whose document.xml defines nested entities (10 levels x 10 = 10^10 'lol's if expanded)."""
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, 10)
    ]
    xml = (f'<?xml version="1.0"?><!DOCTYPE lolz [{"".join(entities)}]><w:document {W}><w:body><w:p><w:r><w:t>'
           "&lol9;</w:t></w:r></w:p></w:body></w:document>")
    return docx(xml.encode())


ALIAS_BOMB = "\n".join([
    "---",
    "a0: &a0 [x, x, x, x, x, x, x, x, x, x]",
    *(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 7)),
    "---",
    "# Notes",
    "",
    "A short note.",
]) + "\n"


def sparse_xlsx() -> bytes:
    """A workbook with a value in row 1 and one in row 1,000,000 (a million stored-empty rows between)."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"], book.active["A1000000"] = "top", "bottom"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def locked_pptx() -> bytes:
    """A password-protected deck: an OLE file holding the encrypted package."""
    from msoffcrypto.format.ooxml import OOXMLFile

    from tests.freki.ingest.office_files_support import build_pptx

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(build_pptx([{"title": "Secret", "body": ["plans"]}]))).encrypt("s3cret", out)
    return out.getvalue()


def declared_slides_pptx(slides: int) -> bytes:
    """A one-slide deck whose presentation.xml lists ``slides`` slides (the extra ones point at no part)."""
    from tests.freki.ingest.office_files_support import build_pptx

    deck = zipfile.ZipFile(io.BytesIO(build_pptx([{"title": "Declared", "body": ["one real slide"]}])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in deck.infolist():
            data = deck.read(item.filename)
            if item.filename == "ppt/presentation.xml":
                ids = "".join(f'<p:sldId id="{256 + i}" r:id="rIdX{i}"/>' for i in range(slides))
                data = data.replace(b"</p:sldIdLst>", ids.encode() + b"</p:sldIdLst>")
            archive.writestr(item, data)
    return out.getvalue()


def many_page_pdf(pages: int) -> bytes:
    """A PDF of ``pages`` blank pages, written directly (one small object per page, so 100,000 cost 16 MB)."""
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Count %d /Kids [%s] >>" % (pages, kids)]
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def nested_eml(depth: int = 3_000) -> bytes:
    """An e-mail whose multiparts nest ``depth`` deep."""
    head = b"From: a@example.com\r\nSubject: deep\r\nMIME-Version: 1.0\r\n"
    opening = b"".join(b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i) for i in range(depth))
    closing = b"".join(b"--b%d--\r\n" % i for i in reversed(range(depth)))
    return head + opening + b"Content-Type: text/plain\r\n\r\nhello\r\n" + closing


def tiff_frames(frames: int) -> bytes:
    """A multi-page TIFF of ``frames`` tiny blank pages (each one a page to OCR)."""
    from PIL import Image

    page = Image.new("L", (16, 16), 255)
    out = io.BytesIO()
    page.save(out, "TIFF", save_all=True, append_images=[page] * (frames - 1))
    return out.getvalue()


def cases() -> list[tuple[str, dict[str, Any], grpc.StatusCode, str]]:
    """The corpus; every entry must be refused with its status and a message containing its phrase."""
    from tests.freki.ingest.scanned_documents_support import png_header_only

    nested_html = "<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>"
    smime = (b"From: a@example.com\r\nSubject: s\r\nMIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime; "
             b"smime-type=enveloped-data\r\n\r\nMIAGCSqGSIb3DQEHA6CAMIACAQAx\r\n")
    return [
        ("sparse.xlsx", {"content_bytes": sparse_xlsx()}, grpc.StatusCode.RESOURCE_EXHAUSTED,
         "limits.spreadsheet_max_cells"),
        ("100k-pages.pdf", {"content_bytes": many_page_pdf(100_000)}, grpc.StatusCode.RESOURCE_EXHAUSTED,
         "limits.pdf_max_pages"),
        ("declared-slides.pptx", {"content_bytes": declared_slides_pptx(100_000)},
         grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.pptx_max_slides"),
        ("bomb.png", {"content_bytes": png_header_only(100_000, 100_000)}, grpc.StatusCode.RESOURCE_EXHAUSTED,
         "limits.ocr_max_pixels"),
        ("frames.tif", {"content_bytes": tiff_frames(2_000)}, grpc.StatusCode.RESOURCE_EXHAUSTED,
         "limits.ocr_max_pages"),
        ("locked.pptx", {"content_bytes": locked_pptx()}, grpc.StatusCode.INVALID_ARGUMENT, "password-protected"),
        ("nested.eml", {"content_bytes": nested_eml()}, grpc.StatusCode.INVALID_ARGUMENT, "nested too deeply"),
        ("smime.eml", {"content_bytes": smime}, grpc.StatusCode.INVALID_ARGUMENT, "encrypted (S/MIME or PGP)"),
        ("alias-bomb.md", {"content": ALIAS_BOMB}, grpc.StatusCode.INVALID_ARGUMENT, "anchor"),
        ("billion-laughs.docx", {"content_bytes": billion_laughs_docx()}, grpc.StatusCode.INVALID_ARGUMENT, "DOCX"),
        ("zip-bomb.docx", {"content_bytes": docx(bomb_mib=160)}, grpc.StatusCode.RESOURCE_EXHAUSTED,
         "limits.zip_max"),
        ("nested.html", {"content": nested_html}, grpc.StatusCode.INVALID_ARGUMENT, "limits.html_max_depth"),
        ("wide-table.html", {"content": "<table><tr><td colspan=1000000000>x</td><td>y</td></tr></table>"},
         grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.table_max_columns"),
        ("long-table.html", {"content": "<table>" + "<tr><td>a</td><td>b</td></tr>" * 20_001 + "</table>"},
         grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.table_max_rows"),
        ("huge.txt", {"content_bytes": b"All work and no play. " * (50 * 1024 * 1024 // 22)},
         grpc.StatusCode.RESOURCE_EXHAUSTED, "limits.max_text_chars"),
        ("bad-utf8.txt", {"content_bytes": bytes(range(128, 256)) * 64}, grpc.StatusCode.INVALID_ARGUMENT,
         "not valid UTF-8"),
        ("junk.md", {"content_bytes": os.urandom(4096) + b"\x00"}, grpc.StatusCode.INVALID_ARGUMENT, "binary|UTF-8"),
        ("frontmatter-keys.md", {"content": "---\n" + "".join(f"k{i}: v\n" for i in range(100)) + "---\nbody"},
         grpc.StatusCode.INVALID_ARGUMENT, "limits.metadata_keys"),
        ("big-metadata.txt", {"content": "small", "metadata": {f"k{i}": "v" * 1000 for i in range(20)}},
         grpc.StatusCode.INVALID_ARGUMENT, "limits.metadata_bytes"),
    ]
