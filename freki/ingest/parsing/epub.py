"""EPUB: chapters in spine order through the HTML parser, headings as sections; Dublin Core metadata.

The package is read with ``zipfile`` and lxml: ``META-INF/container.xml`` names the OPF file, whose
manifest and spine give the chapters in reading order and whose metadata gives title, author and language;
chapter titles come from the EPUB 3 navigation document or the EPUB 2 NCX. Each chapter's XHTML goes
through ``freki.ingest.parsing.html``, so an e-book gets the same headings, skipped chrome and nesting limit
as a web page (docs/decisions/0101-office-email-ebook-formats.md says why not ebooklib).
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from freki.ingest.parsing.document import Metadata, ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, EncryptedDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.html import parse_html
from freki.ingest.parsing.text import clean_inline

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_XHTML = "{http://www.w3.org/1999/xhtml}"
_NCX = "{http://www.daisy.org/z3986/2005/ncx/}"
_EPUB_TYPE = "{http://www.idpf.org/2007/ops}type"
_DC_KEYS = (("title", "title"), ("creator", "author"), ("language", "language"), ("subject", "subject"),
            ("publisher", "publisher"), ("date", "date"))
_CHAPTER_TYPES = frozenset({"application/xhtml+xml", "text/html"})
# Encrypted members whose names say they are chapters (font obfuscation encrypts fonts only, and is harmless).
_ENCRYPTED_CHAPTER = re.compile(rb"""URI\s*=\s*["'][^"']+\.(?:x?html?|xml)["']""", re.IGNORECASE)


def parse_epub(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse an EPUB 2 or 3 e-book.

    Raises:
        EncryptedDocument: Chapters are DRM-encrypted.
        CorruptDocument: The file is not a readable EPUB package.
    """
    from lxml import etree

    name = describe_source(source)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            encryption = archive.read("META-INF/encryption.xml") if "META-INF/encryption.xml" in names else b""
            if _ENCRYPTED_CHAPTER.search(encryption):
                raise EncryptedDocument(
                    f"EPUB {name} is DRM-protected (its chapters are encrypted); index a DRM-free copy", source=source,
                )
            package = _Package(archive)
            sections: list[Section] = []
            for number, path in enumerate(package.chapters(), start=1):
                title = package.titles.get(path, "") or f"Chapter {number}"
                if path in names:
                    sections.extend(_chapter_sections(archive.read(path), path, title, source, limits))
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, ValueError, OSError, NotImplementedError) as exc:
        raise CorruptDocument(f"EPUB is corrupt or incomplete: {name} cannot be read ({exc})", source=source) from exc
    except etree.XMLSyntaxError as exc:
        raise CorruptDocument(f"EPUB is corrupt: {name} has malformed XML ({exc})", source=source) from exc
    return build_document(sections, title=str(package.metadata.get("title", "")), content_type="epub",
                          metadata=package.metadata)


class _Package:
    """The OPF package of an EPUB: metadata, manifest, spine and the table of contents' titles."""

    def __init__(self, archive: zipfile.ZipFile) -> None:
        container = _xml(archive.read("META-INF/container.xml"))
        rootfile = container.find(f".//{_CONTAINER}rootfile")
        if rootfile is None or not rootfile.get("full-path"):
            raise ValueError("META-INF/container.xml names no package (OPF) file")
        opf_path = rootfile.get("full-path")
        self._base = posixpath.dirname(opf_path)
        self._opf = _xml(archive.read(opf_path))
        # id -> (path in the zip, media type, properties)
        self._manifest = {
            item.get("id", ""): (self._path(item.get("href", "")), item.get("media-type", ""),
                                 item.get("properties", ""))
            for item in self._opf.iter(f"{_OPF}item")
        }
        self.metadata = self._dublin_core()
        self.titles = dict(self._toc_titles(archive))

    def chapters(self) -> Iterator[str]:
        """Paths of the spine's content documents in reading order (the navigation document left out)."""
        for itemref in self._opf.iter(f"{_OPF}itemref"):
            path, media_type, properties = self._manifest.get(itemref.get("idref", ""), ("", "", ""))
            if path and media_type in _CHAPTER_TYPES and "nav" not in properties.split():
                yield path

    def _path(self, href: str) -> str:
        return posixpath.normpath(posixpath.join(self._base, unquote(href.split("#", 1)[0])))

    def _dublin_core(self) -> Metadata:
        metadata: Metadata = {}
        for field, key in _DC_KEYS:
            values = [clean_inline(element.text or "") for element in self._opf.iter(f"{_DC}{field}")]
            values = [value for value in values if value]
            if values:
                metadata[key] = values[0] if len(values) == 1 or key != "author" else values
        return metadata

    def _toc_titles(self, archive: zipfile.ZipFile) -> Iterator[tuple[str, str]]:
        """(chapter path, title) from the EPUB 3 nav document, else the EPUB 2 NCX."""
        for path, media_type, properties in self._manifest.values():
            if "nav" in properties.split() and path in archive.namelist():
                nav = _xml(archive.read(path))
                base = posixpath.dirname(path)
                for toc in nav.iter(f"{_XHTML}nav"):
                    if toc.get(_EPUB_TYPE, "toc") == "toc":
                        for link in toc.iter(f"{_XHTML}a"):
                            yield _resolve(base, link.get("href", "")), clean_inline("".join(link.itertext()))
                return
            if media_type == "application/x-dtbncx+xml" and path in archive.namelist():
                ncx = _xml(archive.read(path))
                base = posixpath.dirname(path)
                for point in ncx.iter(f"{_NCX}navPoint"):
                    content, label = point.find(f"{_NCX}content"), point.find(f"{_NCX}navLabel/{_NCX}text")
                    if content is not None and label is not None:
                        yield _resolve(base, content.get("src", "")), clean_inline(label.text or "")


def _resolve(base: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(base, unquote(href.split("#", 1)[0])))


def _xml(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    return etree.fromstring(data, parser)


def _chapter_sections(data: bytes, path: str, title: str, source: str, limits: ParseLimits | None) -> list[Section]:
    """A chapter's sections; text before its first heading is headed by the chapter's title."""
    chapter = parse_html(data, source=f"{source}#{path}", limits=limits)
    return [section if section.heading else replace(section, text=f"{title}\n\n{section.text}", heading=title,
                                                    heading_path=(title,))
            for section in chapter.sections]
