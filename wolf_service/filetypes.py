"""Which files are documents: one table for Odin's ``index`` and Freki's watched folders and parsers.

What ``odin index`` sends, a watched folder indexes too, and the other way round: both skip the same
editor, backup and hidden files (:data:`DEFAULT_EXCLUDES`), both refuse the same known non-document
formats up front (:func:`unsupported_reason`), and both leave everything else to Freki, which detects the
type from the extension (:data:`EXTENSIONS`) or, for an unknown or missing one, from the bytes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from pathlib import PurePath, PurePosixPath

SUPPORTED = ("text", "markdown", "html", "pdf", "docx", "pptx", "xlsx", "ods", "odt", "epub", "eml", "msg", "image")

EXTENSIONS: dict[str, str] = {
    ".txt": "text", ".text": "text", ".log": "text", ".rst": "text",
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown", ".mdx": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".ods": "ods", ".odt": "odt", ".epub": "epub",
    ".eml": "eml", ".msg": "msg",
    # Images are OCR'd (freki/ingest/parsing/images.py).
    ".png": "image", ".jpg": "image", ".jpeg": "image", ".jpe": "image", ".tif": "image", ".tiff": "image",
    ".webp": "image", ".bmp": "image",
}
# Formats people commonly try; naming them gives a more useful error than "unrecognised".
KNOWN_UNSUPPORTED: dict[str, str] = {
    ".doc": "legacy Word .doc", ".xls": "legacy Excel .xls", ".ppt": "legacy PowerPoint .ppt",
    ".odp": "OpenDocument presentation", ".rtf": "RTF", ".mobi": "Kindle e-book",
    ".gif": "GIF image", ".zip": "zip archive",
}
# Hidden files and folders, editor swap and backup files, partial downloads, dependency folders.
DEFAULT_EXCLUDES: list[str] = [
    ".*", "*~", "#*#", "*.swp", "*.swx", "*.swo", "*.tmp", "*.temp", "*.part", "*.crdownload", "*.bak",
    "~$*", "4913", "__pycache__", "node_modules",
]


def type_for_name(name: str) -> str | None:
    """The document type its extension names, or None (unknown or no extension: the bytes decide)."""
    return EXTENSIONS.get(PurePath(name).suffix.lower()) if name else None


def unsupported_reason(name: str) -> str | None:
    """Why a file of this name is not a document Freki can index ("Excel"…), or None when it may be."""
    return KNOWN_UNSUPPORTED.get(PurePath(name).suffix.lower()) if name else None


def matches(rel: PurePosixPath, pattern: str) -> bool:
    """Whether a relative path matches a pattern.

    fnmatch's "*" crosses "/", so a pattern with a slash matches the whole relative path; one without
    matches any single component, which makes ".*" exclude ".git/x" and "a/.hidden" alike.
    """
    if "/" in pattern:
        return fnmatch.fnmatchcase(rel.as_posix(), pattern.strip("/"))
    return any(fnmatch.fnmatchcase(part, pattern) for part in rel.parts)


def excluded(rel: PurePosixPath, patterns: Iterable[str] = DEFAULT_EXCLUDES) -> bool:
    """Whether any part of a relative path is excluded by the patterns."""
    return any(matches(rel, pattern) for pattern in patterns)
