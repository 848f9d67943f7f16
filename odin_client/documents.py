"""Turn paths given to ``index`` into documents to send: walk folders, pick a content type.

Content types come from the file extension. Text formats travel as ``content``; binary formats
(pdf, docx) as ``content_bytes``, which Freki parses. Folders are walked recursively in sorted order
(so progress and results are reproducible), skipping hidden entries and unknown extensions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from odin_client.errors import InvalidRequest

TEXT_TYPES: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".html": "html",
    ".htm": "html",
}
BINARY_TYPES: dict[str, str] = {".pdf": "pdf", ".docx": "docx"}


@dataclass(frozen=True)
class DocumentFile:
    """A file to index and how to send it."""

    path: Path
    source: str
    content_type: str

    @property
    def is_binary(self) -> bool:
        """True when sent as content_bytes."""
        return self.content_type in BINARY_TYPES.values()


def content_type_for(path: Path) -> str | None:
    """Content type for a file name, or None when the extension is not supported."""
    suffix = path.suffix.lower()
    return TEXT_TYPES.get(suffix) or BINARY_TYPES.get(suffix)


def _source_name(path: Path) -> str:
    # Relative to the working directory when possible: stable across machines for the same checkout.
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def discover(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[DocumentFile], list[tuple[Path, str]]]:
    """Expand files and folders into documents to index.

    Args:
        paths: Files or folders. A named file with an unknown extension is still sent, as text.

    Returns:
        (documents, skipped) where ``skipped`` lists (path, reason) for files found in folders
        that cannot be indexed.

    Raises:
        InvalidRequest: a path does not exist.
    """
    found: list[DocumentFile] = []
    skipped: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InvalidRequest(f"{path} does not exist; pass files or folders to index")
        if path.is_dir():
            candidates = sorted(
                p for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            explicit = False
        else:
            candidates, explicit = [path], True
        for file in candidates:
            key = file.resolve()
            if key in seen:
                continue
            seen.add(key)
            ctype = content_type_for(file)
            if ctype is None:
                if not explicit:
                    skipped.append((file, f"unsupported extension {file.suffix or '(none)'}"))
                    continue
                ctype = "text"
            found.append(DocumentFile(path=file, source=_source_name(file), content_type=ctype))
    return found, skipped


def read_document(doc: DocumentFile) -> tuple[str, bytes]:
    """Read a file as (text, b"") or (b"" for binary) — exactly one is non-empty.

    Raises:
        InvalidRequest: the file cannot be read, or a text file is not UTF-8.
    """
    try:
        data = doc.path.read_bytes()
    except OSError as exc:
        raise InvalidRequest(f"cannot read {doc.path}: {exc.strerror}") from exc
    if doc.is_binary:
        return "", data
    try:
        return data.decode("utf-8"), b""
    except UnicodeDecodeError as exc:
        raise InvalidRequest(
            f"{doc.path} is not UTF-8 text (byte {exc.start}); convert it or give it a .pdf/.docx extension"
        ) from exc
