"""Turn paths given to ``index`` into documents to send: walk folders, name each file's type if known.

Which files count is decided by :mod:`wolf_service.filetypes`, the same table Freki's watched folders use:
hidden, editor and backup files are skipped (reported), known non-document formats (Excel, images…) are
skipped with the reason, and every other file goes to Freki as bytes — Freki detects the type from the
extension or, for an unknown or missing one, from the content, and detects legacy text encodings. What
``odin index`` indexes, a watched folder indexes too. Folders are walked in sorted order (reproducible
progress and results).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from odin_client.types.errors import InvalidRequest
from wolf_service import filetypes


@dataclass(frozen=True)
class DocumentFile:
    """A file to index: its path, the source name Freki records, and its type ("" = Freki detects it).

    ``content``, when given, is the document's bytes (a document held in memory, not a file): it is sent
    as it is and ``path`` only names the document in errors.
    """

    path: Path
    source: str
    content_type: str
    content: bytes | None = None


def content_type_for(path: Path) -> str:
    """The type a file's extension names, or "" when Freki should detect it from the content."""
    return filetypes.type_for_name(path.name) or ""


def _source_name(path: Path) -> str:
    # Relative to the working directory when possible: stable across machines for the same checkout.
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def _walk(root: Path, skipped: list[tuple[Path, str]]) -> list[Path]:
    """Files under ``root`` in sorted order; excluded folders are reported once and not entered."""
    files: list[Path] = []
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        kept = []
        for name in sorted(dirs):
            rel = _relative(here / name, root)
            if filetypes.excluded(rel):
                skipped.append((here / name, f"folder excluded (matches {_pattern(rel)!r})"))
            else:
                kept.append(name)
        dirs[:] = kept
        files.extend(here / name for name in sorted(names))
    return sorted(files)


def _relative(path: Path, root: Path) -> PurePosixPath:
    return PurePosixPath(path.relative_to(root).as_posix())


def _pattern(rel: PurePosixPath) -> str:
    return next(p for p in filetypes.DEFAULT_EXCLUDES if filetypes.matches(rel, p))


def discover(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[DocumentFile], list[tuple[Path, str]]]:
    """Expand files and folders into documents to index.

    Args:
        paths: Files or folders. A file named explicitly is always sent unless its format is known to be
            unsupported (a hidden or backup file named on the command line is what the user asked for).

    Returns:
        (documents, skipped): ``skipped`` lists (path, reason) for every file or folder left out.

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
        explicit = not path.is_dir()
        for file in [path] if explicit else _walk(path, skipped):
            key = file.resolve()
            if key in seen:
                continue
            seen.add(key)
            if not file.is_file():
                skipped.append((file, "not a regular file"))
                continue
            rel = None if explicit else _relative(file, path)
            if rel is not None and filetypes.excluded(rel):
                skipped.append((file, f"excluded (matches {_pattern(rel)!r})"))
                continue
            unsupported = filetypes.unsupported_reason(file.name)
            if unsupported is not None:
                skipped.append((file, f"{unsupported} file, not a supported document format"))
                continue
            found.append(DocumentFile(path=file, source=_source_name(file), content_type=content_type_for(file)))
    return found, skipped


def read_document(doc: DocumentFile) -> bytes:
    """A document's bytes, read from its file unless it has ``content`` (Freki parses them and detects the
    text encoding).

    Raises:
        InvalidRequest: the file cannot be read.
    """
    if doc.content is not None:
        return doc.content
    try:
        return doc.path.read_bytes()
    except OSError as exc:
        raise InvalidRequest(f"cannot read {doc.path}: {exc.strerror}") from exc
