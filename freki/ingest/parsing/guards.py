"""Cheap checks that refuse obviously hostile input before (or while) it is parsed.

Each limit is a field of ``ParseLimits`` (the ``limits.*`` settings, see docs/operations.md) and each
refusal names its setting. They run inside the parser sandbox, which also caps the worker's memory and
time, so these checks are the first line (fast, exact messages) and the sandbox the second (anything a
check misses still cannot take the server down).
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from freki.ingest.parsing.errors import LimitExceeded, RefusedStructure, describe_source

MIB = 1024 * 1024


@dataclass(frozen=True)
class ParseLimits:
    """Limits applied while parsing one document (the ``limits`` settings block)."""

    max_text_chars: int = 5_000_000
    zip_max_members: int = 2_000
    zip_max_inflated_bytes: int = 128 * MIB
    zip_max_ratio: float = 100.0
    yaml_max_bytes: int = 64 * 1024
    yaml_max_depth: int = 16
    yaml_max_keys: int = 1_000
    html_max_depth: int = 512
    max_links: int = 1_000
    # Office formats, e-mail, e-books
    pptx_max_slides: int = 1_000
    spreadsheet_max_cells: int = 200_000
    mail_max_attachments: int = 20
    mail_max_attachment_bytes: int = 25 * MIB
    mail_max_depth: int = 1
    # OCR (scanned PDF pages and images: parsing/ocr.py): pages per document (0 = no OCR), pixels per page
    # or image (checked before decoding), render dpi, Tesseract seconds per page, the mean word confidence
    # under which a page is flagged, and Tesseract's languages.
    ocr_max_pages: int = 100
    ocr_max_pixels: int = 40_000_000
    ocr_dpi: int = 300
    ocr_seconds_per_page: float = 60.0
    ocr_min_confidence: float = 60.0
    ocr_languages: str = "deu+eng"
    # Tables: rows and columns of one table; PDF pages read by pdfplumber for tables.
    table_max_rows: int = 10_000
    table_max_columns: int = 100
    pdf_table_pages: int = 50
    # Pages of one PDF (counted by pdfium before pypdf reads any page).
    pdf_max_pages: int = 5_000


# A member's compression ratio is judged only past this size: tiny members (styles, rels) compress far.
_RATIO_GRACE_BYTES = MIB


def check_zip(data: bytes, limits: ParseLimits, *, source: str = "") -> None:
    """Refuse a zip (DOCX) whose central directory promises too many members or too many inflated bytes.

    Declared sizes are checked here without inflating anything; ``zipfile`` then never inflates a member
    past its declared size (it stops and reports a CRC error), so the declared total bounds the real one.
    A zip that cannot even be listed is left to the DOCX parser, which reports it as corrupt.
    """
    name = describe_source(source)
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):  # e.g. an unknown zip version
        return
    if len(members) > limits.zip_max_members:
        raise LimitExceeded(
            f"document {name} is a zip with {len(members):,} members; the limit is {limits.zip_max_members:,} "
            "(limits.zip_max_members)", setting="limits.zip_max_members", source=source,
        )
    total = 0
    for member in members:
        total += member.file_size
        if total > limits.zip_max_inflated_bytes:
            raise LimitExceeded(
                f"document {name} inflates to more than {limits.zip_max_inflated_bytes:,} bytes; the limit is "
                f"{limits.zip_max_inflated_bytes:,} (limits.zip_max_inflated_bytes)",
                setting="limits.zip_max_inflated_bytes", source=source,
            )
        if member.file_size > _RATIO_GRACE_BYTES:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > limits.zip_max_ratio:
                raise LimitExceeded(
                    f"document {name}: a zip member inflates {ratio:,.0f}-fold ({member.compress_size:,} -> "
                    f"{member.file_size:,} bytes); the limit is {limits.zip_max_ratio:g} (limits.zip_max_ratio)",
                    setting="limits.zip_max_ratio", source=source,
                )


def check_text_chars(text: str, limits: ParseLimits, *, source: str = "") -> None:
    """Refuse extracted text longer than ``max_text_chars``."""
    if len(text) > limits.max_text_chars:
        raise LimitExceeded(
            f"document {describe_source(source)} has {len(text):,} characters of text; the limit is "
            f"{limits.max_text_chars:,} (limits.max_text_chars)", setting="limits.max_text_chars", source=source,
        )


def check_plain_bytes(size: int, limits: ParseLimits, *, source: str = "") -> None:
    """Refuse plain text whose bytes alone prove it is over ``max_text_chars`` (UTF-8: <= 4 bytes a character),
    before anything is decoded."""
    if size > 4 * limits.max_text_chars:
        raise LimitExceeded(
            f"document {describe_source(source)} is {size:,} bytes of text, over {limits.max_text_chars:,} "
            "characters whatever its encoding (limits.max_text_chars)", setting="limits.max_text_chars",
            source=source,
        )


class DepthGuard:
    """Counts nesting while a parser walks a document; refuses it past ``limit`` levels."""

    def __init__(self, limit: int, what: str, setting: str, source: str) -> None:
        self.limit = limit
        self.depth = 0
        self._what = what
        self._setting = setting
        self._source = source

    def enter(self) -> None:
        """One level deeper."""
        self.depth += 1
        if self.depth > self.limit:
            raise RefusedStructure(
                f"document {describe_source(self._source)}: {self._what} is nested deeper than {self.limit} "
                f"levels ({self._setting})", source=self._source,
            )

    def leave(self, levels: int = 1) -> None:
        """``levels`` levels up."""
        self.depth = max(0, self.depth - levels)
