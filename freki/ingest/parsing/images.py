"""Images (PNG, JPEG, TIFF incl. multi-page, WebP, BMP) as documents: each page or frame is OCR'd into a section.

An image is hostile input like any other: only the decoders of these formats are ever tried (Pillow would
otherwise also try formats such as EPS, which runs Ghostscript), and every frame's declared dimensions are
checked against ``ocr_max_pixels`` before a single pixel is decoded, so a decompression bomb is refused
by its header.
"""

from __future__ import annotations

import io
import re
import warnings
from typing import Any

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, EmptyDocument, LimitExceeded, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.ocr import OcrPage, OcrProgress, check_page_count, check_pixels, ocr_metadata, recognise

# Pillow's format names of the image types Freki reads (wolf_service/filetypes.py maps extensions to "image").
IMAGE_FORMATS = ("PNG", "JPEG", "TIFF", "WEBP", "BMP")
# The declared size in Pillow's DecompressionBombError message.
_BOMB_PIXELS = re.compile(r"\((\d+) pixels\)")


def parse_image(
    data: bytes, *, source: str = "", limits: ParseLimits | None = None, on_progress: OcrProgress | None = None,
) -> ParsedDocument:
    """OCR an image; one section per page/frame (1-based ``page``), OCR figures in the metadata.

    Raises:
        CorruptDocument: Not a readable image of a supported format.
        LimitExceeded: Too many frames (``ocr_max_pages``), too many pixels (``ocr_max_pixels``), or a page
            took too long (``ocr_seconds_per_page``).
        EmptyDocument: OCR found no text on any page.
    """
    limits = limits or ParseLimits()
    name = describe_source(source)
    pil = _pillow()
    # Pillow itself refuses, when opening, an image declaring more than twice this; the explicit check of
    # each frame below refuses anything over it, with its dimensions, before decoding.
    pil.Image.MAX_IMAGE_PIXELS = limits.ocr_max_pixels
    try:
        with warnings.catch_warnings():  # over the limit but under Pillow's 2x: refused below, with its size
            warnings.simplefilter("ignore", pil.Image.DecompressionBombWarning)
            image = pil.Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except pil.Image.DecompressionBombError as exc:
        raise _bomb(exc, limits, source) from exc
    except (pil.UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise CorruptDocument(
            f"image {name} cannot be read as {', '.join(IMAGE_FORMATS)} ({str(exc) or type(exc).__name__})",
            source=source,
        ) from exc
    with image:
        frames = int(getattr(image, "n_frames", 1))
        check_page_count(frames, limits, source=source)
        read: dict[int, OcrPage] = {}
        for number in range(1, frames + 1):
            page = _decode_frame(pil, image, number, frames, limits, source)
            if on_progress is not None:
                on_progress(number)
            read[number] = recognise(page, limits, page=number, source=source)
        fmt = str(image.format or "")
    sections = [Section(text=page.text, page=number) for number, page in read.items()]
    if not any(s.text.strip() for s in sections):
        raise EmptyDocument(f"OCR found no text in image {name} ({frames} page(s))", source=source)
    metadata: dict[str, str | list[str]] = {"pages": str(frames), "image_format": fmt.lower()}
    metadata.update(ocr_metadata(read, limits))
    return build_document(sections, title="", content_type="image", metadata=metadata)


def _decode_frame(pil: Any, image: Any, number: int, frames: int, limits: ParseLimits, source: str) -> Any:
    """Frame ``number`` decoded to greyscale, after its declared size passed ``ocr_max_pixels``."""
    what = f"page {number} of {frames}" if frames > 1 else "the image"
    try:
        image.seek(number - 1)
        width, height = image.size
        check_pixels(width, height, limits, what=what, source=source)
        image.load()
        return image.convert("L")
    except LimitExceeded:
        raise
    except pil.Image.DecompressionBombError as exc:
        raise _bomb(exc, limits, source) from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise CorruptDocument(
            f"image {describe_source(source)}: {what} cannot be decoded ({str(exc) or type(exc).__name__})",
            source=source,
        ) from exc


def _bomb(exc: Exception, limits: ParseLimits, source: str) -> LimitExceeded:
    # Pillow's message names its own bar (twice MAX_IMAGE_PIXELS); only the declared size is worth repeating.
    declared = _BOMB_PIXELS.search(str(exc))
    size = f"{int(declared.group(1)):,} pixels" if declared else "more pixels than allowed"
    return LimitExceeded(
        f"document {describe_source(source)} declares {size}; the limit is {limits.ocr_max_pixels:,} "
        "(limits.ocr_max_pixels)", setting="limits.ocr_max_pixels", source=source,
    )


def _pillow() -> Any:
    import PIL
    import PIL.Image

    return PIL
