"""PDF: the text layer of each page (via pypdf) as one section per page."""

from __future__ import annotations

import io
import logging
import re

from pypdf import PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, EmptyDocument, EncryptedDocument, describe_source
from freki.ingest.parsing.text import LIST_ITEM, clean_inline

_SENTENCE_END = re.compile(r"[.!?:;)\"”]$")


def parse_pdf(data: bytes, *, source: str = "") -> ParsedDocument:
    """Parse a PDF; sections are pages (1-based `page`), metadata from the document info.

    Raises:
        EncryptedDocument: The PDF needs a password.
        CorruptDocument: pypdf cannot read it.
        EmptyDocument: No page has a text layer (a scan needs OCR first).
    """
    name = describe_source(source)
    # pypdf logs every recoverable defect as a warning; parsing continues, so keep the logs quiet.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not _try_empty_password(reader):
            raise EncryptedDocument(
                f"PDF is encrypted: {name} needs a password; remove the protection before indexing",
                source=source,
            )
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
    except EncryptedDocument:
        raise
    except FileNotDecryptedError as exc:
        raise EncryptedDocument(f"PDF is encrypted: {name} ({exc})", source=source) from exc
    # pypdf raises many exception types on malformed input (PdfReadError, ValueError, KeyError,
    # TypeError, AssertionError...); any of them means the file cannot be read.
    except Exception as exc:
        detail = str(exc) or type(exc).__name__
        raise CorruptDocument(
            f"PDF is corrupt or truncated: {name} cannot be read ({detail})", source=source
        ) from exc
    sections = [
        Section(text="\n\n".join(_page_paragraphs(text)), page=number)
        for number, text in enumerate(pages, start=1)
    ]
    if not any(s.text.strip() for s in sections):
        raise EmptyDocument(
            f"PDF {name} has no extractable text on its {len(pages)} page(s); it is probably scanned "
            "images — run OCR on it first",
            source=source,
        )
    metadata: dict[str, str] = {"pages": str(len(pages))}
    if info is not None:
        for key, field in (("title", "/Title"), ("author", "/Author"), ("subject", "/Subject"),
                           ("keywords", "/Keywords"), ("creator", "/Creator")):
            value = info.get(field)
            if isinstance(value, str) and value.strip():
                metadata[key] = clean_inline(value)
    return build_document(sections, title=metadata.get("title", ""), content_type="pdf", metadata=metadata)


def _try_empty_password(reader: PdfReader) -> bool:
    # Many PDFs are "encrypted" only to restrict printing/copying, with an empty user password.
    try:
        return bool(reader.decrypt(""))
    except (DependencyError, NotImplementedError, PdfReadError):
        return False


def _page_paragraphs(text: str) -> list[str]:
    """Join the visual lines pypdf returns into paragraphs.

    A line ending a sentence that is clearly shorter than the page's full lines ends a paragraph;
    every other line break is wrapping.
    """
    lines = [clean_inline(line) for line in text.split("\n")]
    width = max((len(line) for line in lines), default=0)
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if not line:
            if paragraphs[-1]:
                paragraphs.append([])
            continue
        current = paragraphs[-1]
        if current and LIST_ITEM.match(line):
            paragraphs.append([line])
            continue
        current.append(line)
        if _SENTENCE_END.search(line) and len(line) < 0.75 * width:
            paragraphs.append([])
    result: list[str] = []
    for paragraph in paragraphs:
        if not paragraph:
            continue
        joined = paragraph[0]
        for line in paragraph[1:]:
            # A line-end hyphen before a lowercase letter is a word split by wrapping.
            if joined.endswith("-") and line[:1].islower() and joined[-2:-1].isalpha():
                joined = joined[:-1] + line
            else:
                joined = f"{joined} {line}"
        result.append(joined)
    return result
