"""Scanned PDF pages: pages without a text layer are rasterised (pypdfium2) and OCR'd (``ocr.py``).

``parse_pdf`` (``pdf.py``) reads the text layer; this module only looks at the pages it found (almost)
empty. In a PDF with no text at all every page is recognised; in a text PDF a page is recognised when it
has almost no text but an image covering much of it (a scanned page bound into a report). The
recognised text replaces the page's text layer, which is rendered into the image too.
"""

from __future__ import annotations

from typing import Any

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import EmptyDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.ocr import OcrPage, OcrProgress, check_page_count, ocr_metadata, recognise
from freki.ingest.parsing.pdf import parse_pdf

# A page with fewer characters in its text layer than this counts as having none (a page number, a stamp).
SCANNED_PAGE_MAX_CHARS = 40
# ...and is a scan when images cover at least this share of its area.
SCANNED_PAGE_MIN_IMAGE_SHARE = 0.5
# Page objects looked at per page when judging image coverage (bounds the cost of a hostile page).
_MAX_OBJECTS_PER_PAGE = 1_000


def parse_pdf_with_ocr(
    data: bytes, *, source: str = "", limits: ParseLimits | None = None, on_progress: OcrProgress | None = None,
) -> ParsedDocument:
    """Parse a PDF's text layer, then OCR the pages that have none (``ocr_max_pages`` = 0: no OCR).

    Raises:
        EmptyDocument: Neither the text layer nor OCR found any text.
        LimitExceeded: More pages to recognise than ``ocr_max_pages``, or a page over ``ocr_seconds_per_page``.
        Whatever ``parse_pdf`` raises for an encrypted or corrupt file.
    """
    limits = limits or ParseLimits()
    try:
        document: ParsedDocument | None = parse_pdf(data, source=source)
        no_text_layer: EmptyDocument | None = None
    except EmptyDocument as exc:
        document, no_text_layer = None, exc
    layer = {s.page: s for s in document.sections} if document is not None else {}
    if document is not None and all(len(s.text) >= SCANNED_PAGE_MAX_CHARS for s in layer.values()) \
            and str(len(layer)) == document.metadata.get("pages"):
        return document  # every page has a real text layer: nothing to recognise
    if limits.ocr_max_pages == 0:
        if no_text_layer is not None:
            raise no_text_layer
        assert document is not None
        return document
    pdfium = _pdfium()
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError:
        if no_text_layer is not None:
            raise no_text_layer from None
        assert document is not None
        return document  # pypdf read it; pdfium cannot rasterise it: keep the text layer
    try:
        scanned = [
            number for number in range(1, len(pdf) + 1)
            if len(layer[number].text if number in layer else "") < SCANNED_PAGE_MAX_CHARS
            and (document is None or _image_share(pdf[number - 1]) >= SCANNED_PAGE_MIN_IMAGE_SHARE)
        ]
        if not scanned and document is not None:
            return document
        check_page_count(len(scanned), limits, source=source)
        read: dict[int, OcrPage] = {}
        for number in scanned:
            if on_progress is not None:
                on_progress(number)
            read[number] = recognise(_render(pdf[number - 1], limits), limits, page=number, source=source)
        pages = len(pdf)
        title = _title(pdf) if document is None else document.title
    finally:
        pdf.close()
    sections = [s for s in (document.sections if document is not None else []) if s.page not in read]
    sections += [Section(text=page.text, page=number) for number, page in read.items()]
    sections.sort(key=lambda s: s.page or 0)
    if not any(s.text.strip() for s in sections):
        raise EmptyDocument(
            f"PDF {describe_source(source)} has no text layer and OCR found no text on its {pages} page(s)",
            source=source,
        )
    metadata: dict[str, str | list[str]] = dict(document.metadata) if document is not None else {"pages": str(pages)}
    if title and "title" not in metadata:
        metadata["title"] = title
    metadata.update(ocr_metadata(read, limits))
    return build_document(sections, title=str(metadata.get("title", "")), content_type="pdf", metadata=metadata)


def _image_share(page: Any) -> float:
    """Share of the page's area covered by image objects (overlaps may count twice; capped at 1)."""
    pdfium = _pdfium()
    width, height = page.get_size()
    area = max(width * height, 1.0)
    covered = 0.0
    for index, obj in enumerate(page.get_objects(max_depth=2)):
        if index >= _MAX_OBJECTS_PER_PAGE:
            break
        if obj.type == pdfium.raw.FPDF_PAGEOBJ_IMAGE:
            left, bottom, right, top = obj.get_bounds()
            covered += max(right - left, 0.0) * max(top - bottom, 0.0)
    return min(covered / area, 1.0)


def _render(page: Any, limits: ParseLimits) -> Any:
    """The page as a greyscale image at ``ocr_dpi``, scaled down where that would exceed ``ocr_max_pixels``."""
    width, height = page.get_size()  # PDF points, 72 to the inch
    scale = limits.ocr_dpi / 72
    pixels = width * scale * height * scale
    if pixels > limits.ocr_max_pixels:
        scale *= (limits.ocr_max_pixels / pixels) ** 0.5
    return page.render(scale=scale, grayscale=True).to_pil()


def _title(pdf: Any) -> str:
    try:
        return str(pdf.get_metadata_dict(skip_empty=True).get("Title", "")).strip()
    except Exception:  # metadata is optional; a broken info dictionary must not lose the recognised text
        return ""


def _pdfium() -> Any:
    import pypdfium2
    import pypdfium2.raw  # noqa: F401 - used as pypdfium2.raw

    return pypdfium2
