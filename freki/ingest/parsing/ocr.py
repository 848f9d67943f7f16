"""Optical character recognition of one page image with Tesseract (Debian's ``tesseract-ocr``, via pytesseract).

Why Tesseract and not RapidOCR: docs/decisions/0111-ocr-engine.md. Tesseract runs as a child process of the
parser worker, so it inherits the worker's address-space cap; ``ocr_seconds_per_page`` bounds each call.
pytesseract and Pillow are imported on first use: the worker imports every parser at start and must start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from freki.ingest.parsing.errors import LimitExceeded, UnsupportedFormat, describe_source
from freki.ingest.parsing.guards import ParseLimits

if TYPE_CHECKING:
    from PIL.Image import Image

# Called with the 1-based number of the page about to be recognised; the sandbox's worker turns it into a
# progress frame, which gives the document ``ocr_seconds_per_page`` more time (freki/ingest/sandbox.py).
OcrProgress = Callable[[int], None]


@dataclass(frozen=True)
class OcrPage:
    """What OCR read on one page: text in reading order and the mean word confidence (0-100)."""

    text: str
    confidence: float
    words: int


def check_pixels(width: int, height: int, limits: ParseLimits, *, what: str, source: str) -> None:
    """Refuse an image whose declared dimensions exceed ``ocr_max_pixels`` (checked before decoding)."""
    if width * height > limits.ocr_max_pixels:
        raise LimitExceeded(
            f"document {describe_source(source)}: {what} is {width:,} x {height:,} = {width * height:,} pixels; "
            f"the limit is {limits.ocr_max_pixels:,} (limits.ocr_max_pixels)",
            setting="limits.ocr_max_pixels", source=source,
        )


def check_page_count(pages: int, limits: ParseLimits, *, source: str) -> None:
    """Refuse a document with more pages to recognise than ``ocr_max_pages`` (0 turns OCR off)."""
    if pages > limits.ocr_max_pages:
        raise LimitExceeded(
            f"document {describe_source(source)} has {pages:,} page(s) without a text layer to recognise; "
            f"the limit is {limits.ocr_max_pages:,} (limits.ocr_max_pages; 0 turns OCR off)",
            setting="limits.ocr_max_pages", source=source,
        )


def recognise(image: Image, limits: ParseLimits, *, page: int, source: str) -> OcrPage:
    """Read the text on one page image.

    Raises:
        LimitExceeded: Tesseract took longer than ``ocr_seconds_per_page`` (it is stopped).
        UnsupportedFormat: Tesseract or a language in ``ocr_languages`` is not installed.
    """
    pytesseract = _pytesseract()
    try:
        data = pytesseract.image_to_data(
            image, lang=limits.ocr_languages, output_type=pytesseract.Output.DICT,
            timeout=limits.ocr_seconds_per_page,
        )
    except pytesseract.TesseractNotFoundError as exc:
        raise UnsupportedFormat(
            f"cannot OCR document {describe_source(source)}: the tesseract program is not installed on the server "
            "(Debian: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu; `make install` does it)",
            source=source,
        ) from exc
    except pytesseract.TesseractError as exc:
        raise UnsupportedFormat(
            f"OCR failed on page {page} of {describe_source(source)}: {str(exc.message).strip()[:300]} "
            f"(languages {limits.ocr_languages!r}, limits.ocr_languages)", source=source,
        ) from exc
    except RuntimeError as exc:  # pytesseract's only signal for its timeout; it has killed tesseract
        raise LimitExceeded(
            f"OCR of page {page} of {describe_source(source)} took longer than {limits.ocr_seconds_per_page:g} s; "
            "it was stopped (limits.ocr_seconds_per_page)", setting="limits.ocr_seconds_per_page", source=source,
        ) from exc
    return _page_from_data(data)


def _page_from_data(data: dict[str, list[Any]]) -> OcrPage:
    """Tesseract's word table in reading order: words joined into lines, lines into paragraphs."""
    paragraphs: dict[tuple[int, int, int], dict[int, list[str]]] = {}
    confidences: list[float] = []
    for index, word in enumerate(data["text"]):
        word = str(word).strip()
        confidence = float(data["conf"][index])
        if not word or confidence < 0:
            continue
        confidences.append(confidence)
        key = (int(data["page_num"][index]), int(data["block_num"][index]), int(data["par_num"][index]))
        paragraphs.setdefault(key, {}).setdefault(int(data["line_num"][index]), []).append(word)
    text = "\n\n".join(
        _join_lines([" ".join(words) for _, words in sorted(lines.items())]) for _, lines in sorted(paragraphs.items())
    )
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrPage(text=text, confidence=mean, words=len(confidences))


def _join_lines(lines: list[str]) -> str:
    """One paragraph from its printed lines; a line-end hyphen before a lowercase letter is a split word."""
    joined = ""
    for line in lines:
        if joined.endswith("-") and line[:1].islower() and joined[-2:-1].isalpha():
            joined = joined[:-1] + line
        else:
            joined = f"{joined} {line}" if joined else line
    return joined


def ocr_metadata(pages: dict[int, OcrPage], limits: ParseLimits) -> dict[str, str | list[str]]:
    """Document metadata saying which pages were recognised, which fell below ``ocr_min_confidence``, and the
    mean confidence of the pages that had text."""
    if not pages:
        return {}
    read = [p for p in pages.values() if p.words]
    low = [str(n) for n, p in sorted(pages.items()) if p.words and p.confidence < limits.ocr_min_confidence]
    metadata: dict[str, str | list[str]] = {"ocr_pages": [str(n) for n in sorted(pages)]}
    if read:
        metadata["ocr_confidence"] = f"{sum(p.confidence for p in read) / len(read):.1f}"
    if low:
        metadata["ocr_low_confidence_pages"] = low
    return metadata


def _pytesseract() -> Any:
    import pytesseract

    return pytesseract
