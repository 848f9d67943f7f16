"""What OpenDocument files (.odt, .ods) share: namespaces, the encryption check, safe streaming XML, text."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import IO, Any

from freki.ingest.parsing.errors import EncryptedDocument, describe_source
from freki.ingest.parsing.text import clean_inline

TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"


def check_not_encrypted(archive: zipfile.ZipFile, source: str) -> None:
    """Refuse a password-protected ODF file: its manifest gives members ``encryption-data``.

    Raises:
        EncryptedDocument: The manifest says a member is encrypted.
    """
    try:
        manifest = archive.read("META-INF/manifest.xml")
    except KeyError:
        return
    if b"encryption-data" in manifest:
        raise EncryptedDocument(
            f"{describe_source(source)} is a password-protected OpenDocument file; remove the password and "
            "index the saved copy", source=source,
        )


def iter_xml(stream: IO[bytes]) -> Iterator[tuple[str, Any]]:
    """(event, element) pairs of a streamed XML member; entities and the network stay off."""
    from lxml import etree

    yield from etree.iterparse(stream, events=("start", "end"), resolve_entities=False, no_network=True,
                               load_dtd=False, huge_tree=False)


def paragraph_text(element: Any) -> str:
    """The text of an ODF paragraph element: ``text:s`` as spaces, tabs and line breaks as one space."""
    parts: list[str] = []

    def walk(node: Any) -> None:
        if node.text:
            parts.append(node.text)
        for child in node:
            tag = child.tag
            if tag == f"{TEXT}s":
                parts.append(" " * _count(child.get(f"{TEXT}c")))
            elif tag in (f"{TEXT}tab", f"{TEXT}line-break"):
                parts.append(" ")
            elif tag != f"{TEXT}note":  # footnote bodies are not part of the sentence
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(element)
    return clean_inline("".join(parts))


def _count(value: str | None) -> int:
    try:
        return min(max(1, int(value or 1)), 64)
    except ValueError:
        return 1
