"""EPUB: chapters in spine order through the HTML parser, headings as sections; Dublin Core metadata.

ebooklib reads the package (container, OPF manifest and spine); each chapter's XHTML goes through
``freki.ingest.parsing.html``, so an e-book gets the same headings, skipped chrome and nesting limit as a
web page.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from freki.ingest.parsing.document import Metadata, ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, DocumentError, EncryptedDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.html import parse_html
from freki.ingest.parsing.text import clean_inline

_DC_KEYS = (("title", "title"), ("creator", "author"), ("language", "language"), ("subject", "subject"),
            ("publisher", "publisher"), ("date", "date"))
# Encrypted members whose names say they are chapters (font obfuscation encrypts fonts only, and is harmless).
_ENCRYPTED_CHAPTER = re.compile(rb"""URI\s*=\s*["'][^"']+\.(?:x?html?|xml)["']""", re.IGNORECASE)


def parse_epub(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse an EPUB 2 or 3 e-book.

    Raises:
        EncryptedDocument: Chapters are DRM-encrypted.
        CorruptDocument: The file is not a readable EPUB package.
    """
    import ebooklib
    from ebooklib import epub

    name = describe_source(source)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if "META-INF/encryption.xml" in archive.namelist():
                if _ENCRYPTED_CHAPTER.search(archive.read("META-INF/encryption.xml")):
                    raise EncryptedDocument(
                        f"EPUB {name} is DRM-protected (its chapters are encrypted); index a DRM-free copy",
                        source=source,
                    )
        book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": True})
        chapters = [book.get_item_with_id(idref) for idref, _linear in book.spine]
        chapters = [item for item in chapters if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT]
        titles = dict(_toc_titles(book.toc))
        sections: list[Section] = []
        for number, item in enumerate(chapters, start=1):
            title = titles.get(item.get_name(), "") or f"Chapter {number}"
            sections.extend(_chapter_sections(item, title, source, limits))
        metadata = _metadata(book)
    except DocumentError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, ValueError, OSError, epub.EpubException) as exc:
        raise CorruptDocument(f"EPUB is corrupt or incomplete: {name} cannot be read ({exc})", source=source) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("lxml"):
            raise CorruptDocument(f"EPUB is corrupt: {name} has malformed XML ({exc})", source=source) from exc
        raise
    return build_document(sections, title=str(metadata.get("title", "")), content_type="epub", metadata=metadata)


def _toc_titles(entries: Any) -> Iterator[tuple[str, str]]:
    """(file name, title) of every table-of-contents entry, nested sections included."""
    for entry in entries or ():
        if isinstance(entry, tuple) and len(entry) == 2:
            yield from _toc_titles([entry[0]])
            yield from _toc_titles(entry[1])
            continue
        href = str(getattr(entry, "href", "") or getattr(entry, "file_name", "") or "").split("#", 1)[0]
        title = clean_inline(str(getattr(entry, "title", "") or ""))
        if href and title:
            yield href, title


def _chapter_sections(item: Any, title: str, source: str, limits: ParseLimits | None) -> list[Section]:
    """A chapter's sections; text before its first heading is headed by the chapter's title."""
    chapter = parse_html(item.get_content(), source=f"{source}#{item.get_name()}", limits=limits)
    return [section if section.heading else replace(section, text=f"{title}\n\n{section.text}", heading=title,
                                                    heading_path=(title,))
            for section in chapter.sections]


def _metadata(book: Any) -> Metadata:
    metadata: Metadata = {}
    for field, key in _DC_KEYS:
        values = [clean_inline(str(value)) for value, _attrs in book.get_metadata("DC", field) if value]
        values = [value for value in values if value]
        if values:
            metadata[key] = values[0] if len(values) == 1 or key != "author" else values
    return metadata
