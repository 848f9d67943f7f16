"""PPTX: one section per slide (its title, text frames in reading order, tables, speaker notes).

python-pptx is imported when a presentation is parsed, not when the parser worker starts.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from freki.ingest.parsing.document import ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import CorruptDocument, LimitExceeded, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.tables import markdown_table
from freki.ingest.parsing.text import clean_inline, office_properties

# Shapes whose tops differ by less than this (EMU; 1 cm = 360,000) count as one row when ordering a slide.
_ROW_TOLERANCE_EMU = 180_000


def parse_pptx(data: bytes, *, source: str = "", limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse a PowerPoint .pptx presentation.

    Raises:
        LimitExceeded: More slides than ``limits.pptx_max_slides``.
        CorruptDocument: The file is not a readable .pptx package.
    """
    import pptx
    from pptx.exc import PackageNotFoundError

    limits = limits or ParseLimits()
    name = describe_source(source)
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        # Count the slide list presentation.xml declares: python-pptx resolves every entry's part as soon as
        # ``slides`` is read, so a deck declaring 100,000 slides would be walked (or fail) before the check.
        declared = presentation.part._element.sldIdLst
        count = len(declared) if declared is not None else 0
        if count > limits.pptx_max_slides:
            raise LimitExceeded(
                f"presentation {name} has {count:,} slides; the limit is {limits.pptx_max_slides:,} "
                "(limits.pptx_max_slides)", setting="limits.pptx_max_slides", source=source,
            )
        slides = presentation.slides
        sections = [_slide_section(number, slide) for number, slide in enumerate(slides, start=1)]
        metadata = office_properties(presentation.core_properties)
    except (zipfile.BadZipFile, zlib.error, EOFError, PackageNotFoundError, KeyError, ValueError, OSError,
            NotImplementedError) as exc:
        raise CorruptDocument(f"PPTX is corrupt or truncated: {name} cannot be read ({exc})", source=source) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("lxml"):
            raise CorruptDocument(f"PPTX is corrupt: {name} has malformed XML ({exc})", source=source) from exc
        raise
    titled = next((s.heading for s in sections if not s.heading.startswith("Slide ")), "")
    return build_document(sections, title=str(metadata.get("title") or titled), content_type="pptx",
                          metadata=metadata)


def _slide_section(number: int, slide: Any) -> Section:
    title_shape = slide.shapes.title
    title = _line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    heading = title or f"Slide {number}"
    paragraphs = [heading]
    for shape in _reading_order(slide.shapes):
        if title_shape is not None and shape.shape_id == title_shape.shape_id:
            continue
        paragraphs.extend(_shape_paragraphs(shape))
    if slide.has_notes_slide:
        notes = slide.notes_slide.notes_text_frame
        text = " ".join(_line(p.text) for p in notes.paragraphs if p.text.strip()) if notes is not None else ""
        if text:
            paragraphs.append(f"Notes: {text}")
    return Section(text="\n\n".join(paragraphs), heading=heading, heading_path=(heading,), slide=number)


def _reading_order(shapes: Any) -> list[Any]:
    """Shapes top to bottom, left to right (XML order is z-order, not reading order)."""
    def key(shape: Any) -> tuple[int, int]:
        top, left = shape.top or 0, shape.left or 0
        return (top // _ROW_TOLERANCE_EMU, left)
    return sorted(shapes, key=key)


def _shape_paragraphs(shape: Any) -> Iterator[str]:
    from pptx.shapes.group import GroupShape

    # isinstance, not shape_type: python-pptx raises on shape types it does not recognise.
    if isinstance(shape, GroupShape):
        for inner in _reading_order(shape.shapes):
            yield from _shape_paragraphs(inner)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        table = markdown_table([[cell.text for cell in row.cells] for row in shape.table.rows])
        if table:
            yield table
        return
    if not shape.has_text_frame:
        return
    # Each paragraph of a text frame (a bullet, mostly) keeps its own line.
    lines = [_line(paragraph.text) for paragraph in shape.text_frame.paragraphs]
    text = "\n".join(line for line in lines if line)
    if text:
        yield text


def _line(text: str) -> str:
    """One line of slide text (python-pptx gives a soft line break as a vertical tab)."""
    return clean_inline(text.replace("\v", " "))
