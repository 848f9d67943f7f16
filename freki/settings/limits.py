"""What one document or request may cost: the ``limits`` settings block (docs/operations.md, "Limits")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

MIB = 1024 * 1024


class LimitsSettings(BaseModel):
    """What one document may cost (docs/operations.md, "Limits"); each refusal names its setting."""

    # Parser sandbox (freki/ingest/sandbox.py): worker processes, their memory cap and wall-clock limit.
    parse_timeout_s: float = Field(30.0, gt=0.0, le=3600.0)
    # IndexDocuments: documents of one stream in work at once (parsing one while embedding another).
    batch_parallel: int = Field(2, ge=1, le=64)
    # IndexDocumentRequest.access_groups: groups one document may name (docs/decisions/0261).
    max_access_groups: int = Field(32, ge=1, le=1024)
    # Embed RPC: texts per request and characters per text.
    embed_max_texts: int = Field(64, ge=1, le=2048)
    embed_max_chars: int = Field(8192, ge=16, le=1_000_000)
    parse_memory_mb: int = Field(1024, ge=256, le=65536)
    # Parser processes at once; "auto" (or 0) = min(cores, available memory / parse_memory_mb, 8), logged at start
    # (freki/engine/pool_size.py).
    parse_workers: Annotated[int, Field(ge=0, le=64)] | Literal["auto"] = "auto"
    parse_worker_documents: int = Field(200, ge=1)
    # What parsing may produce, and checks before parsing.
    max_text_chars: int = Field(5_000_000, ge=1)
    max_chunks_per_document: int = Field(10_000, ge=1)
    zip_max_members: int = Field(2_000, ge=1)
    zip_max_inflated_bytes: int = Field(128 * MIB, ge=1)
    zip_max_ratio: float = Field(100.0, gt=1.0)
    yaml_max_bytes: int = Field(64 * 1024, ge=1)
    yaml_max_depth: int = Field(16, ge=1, le=1000)
    yaml_max_keys: int = Field(1_000, ge=1)
    html_max_depth: int = Field(512, ge=8, le=100_000)
    # One table (PDF, DOCX, HTML): more rows or columns refuse the document.
    table_max_rows: int = Field(10_000, ge=1)
    table_max_columns: int = Field(100, ge=2, le=10_000)
    # PDF pages that go through table detection (pdfplumber); later pages keep their plain text layer.
    pdf_table_pages: int = Field(50, ge=0)
    # Pages of one PDF, counted before any page is read.
    pdf_max_pages: int = Field(5_000, ge=1)
    # Document metadata (request metadata, and frontmatter/properties merged with it).
    metadata_keys: int = Field(64, ge=1)
    metadata_value_chars: int = Field(8192, ge=1)
    metadata_bytes: int = Field(16 * 1024, ge=1)
    # What one RetrieveContext may ask for: each query variant is one more query embedding and search; filters
    # and their values, and document ids, become one engine filter.
    max_query_variants: int = Field(8, ge=0, le=256)
    max_filters: int = Field(32, ge=1, le=1024)
    max_filter_values: int = Field(1024, ge=1, le=100_000)
    max_document_ids: int = Field(1024, ge=1, le=100_000)
    # Office formats, e-mail, e-books (docs/decisions/0101-office-email-ebook-formats.md): slides of a
    # presentation; stored cells of a spreadsheet, all sheets together; attachments of an e-mail parsed (the
    # rest are listed, not parsed), the bytes of one attachment, and how deep e-mails attached to e-mails
    # are parsed.
    pptx_max_slides: int = Field(1_000, ge=1)
    spreadsheet_max_cells: int = Field(200_000, ge=1)
    mail_max_attachments: int = Field(20, ge=0, le=10_000)
    mail_max_attachment_bytes: int = Field(25 * MIB, ge=1)
    mail_max_depth: int = Field(1, ge=0, le=8)
    # OCR
    # Scanned PDF pages and images (docs/decisions/0111-ocr-engine.md): pages recognised per document (0 = no
    # OCR), pixels per page or image (checked before decoding), render dpi, Tesseract seconds per page (the
    # parser sandbox grants each recognised page this much on top of parse_timeout_s), the mean word confidence
    # (0-100) under which a page is flagged in ocr_low_confidence_pages, and Tesseract's language packs.
    ocr_max_pages: int = Field(100, ge=0, le=1_000)
    ocr_max_pixels: int = Field(40_000_000, ge=10_000, le=1_000_000_000)
    ocr_dpi: int = Field(300, ge=72, le=1200)
    ocr_seconds_per_page: float = Field(60.0, gt=0.0, le=3600.0)
    ocr_min_confidence: float = Field(60.0, ge=0.0, le=100.0)
    ocr_languages: str = Field("deu+eng", pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$")
