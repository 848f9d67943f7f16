"""Known text rendered to page images (Pillow, DejaVu Serif 11 pt on Letter paper) for the OCR evaluations.

Shared by scripts/eval/ocr.py and scripts/eval/ocr_engines.py; the fonts come from Debian's
``fonts-dejavu-core`` (the ``eval-ocr`` Makefile target installs it).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
PAGE_INCHES = (8.5, 11.0)
MARGIN_INCHES = 1.0
POINTS = 11

GERMAN = (
    "Die Größe der Übersetzung hängt von der Länge des ursprünglichen Textes ab. Müller und Schäfer "
    "prüften im Frühjahr die Qualität der Straßenbeläge in Köln, Düsseldorf und München. Außerdem "
    "wurden fünfzehn Brücken über die Flüsse begutachtet; die Ergebnisse überraschten die Behörde. "
    "Der Bürgermeister äußerte sich zufrieden über die Gründlichkeit der Prüfer und kündigte an, dass "
    "im nächsten Jahr weitere Maßnahmen folgen würden. Öffentliche Gebäude, Schulen und Krankenhäuser "
    "sollen bevorzugt überprüft werden, während die Gehwege in den Außenbezirken später an die Reihe kommen."
)


def normalise(text: str) -> str:
    """Whitespace collapsed to single spaces: layout (line breaks) is not what the CER measures."""
    return re.sub(r"\s+", " ", text).strip()


def render_page(text: str, dpi: int, *, font_path: Path = FONT) -> Image.Image:
    """One greyscale page with ``text`` word-wrapped into the margins (text past the page is dropped)."""
    width, height = int(PAGE_INCHES[0] * dpi), int(PAGE_INCHES[1] * dpi)
    margin = int(MARGIN_INCHES * dpi)
    font = ImageFont.truetype(str(font_path), size=round(POINTS * dpi / 72))
    image = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(image)
    line_height = round(POINTS * 1.45 * dpi / 72)
    y = margin
    for line in wrap(text, font, width - 2 * margin):
        if y + line_height > height - margin:
            break
        draw.text((margin, y), line, font=font, fill=0)
        y += line_height
    return image


def render_pages(text: str, dpi: int, *, font_path: Path = FONT) -> list[Image.Image]:
    """``text`` word-wrapped onto as many greyscale pages as it needs."""
    width, height = int(PAGE_INCHES[0] * dpi), int(PAGE_INCHES[1] * dpi)
    margin = int(MARGIN_INCHES * dpi)
    font = ImageFont.truetype(str(font_path), size=round(POINTS * dpi / 72))
    line_height = round(POINTS * 1.45 * dpi / 72)
    rows = (height - 2 * margin) // line_height
    lines = wrap(text, font, width - 2 * margin)
    pages: list[Image.Image] = []
    for start in range(0, max(len(lines), 1), rows):
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(lines[start:start + rows]):
            draw.text((margin, margin + row * line_height), line, font=font, fill=0)
        pages.append(image)
    return pages


def wrap(text: str, font: ImageFont.FreeTypeFont, max_width: int) -> list[str]:
    """Greedy word wrap by the font's real advance widths."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and font.getlength(candidate) > max_width:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    return lines


def fitted_text(text: str, dpi: int = 300) -> str:
    """The part of ``text`` that fits on one page (what render_page draws), for a fair CER reference."""
    width, height = int(PAGE_INCHES[0] * dpi), int(PAGE_INCHES[1] * dpi)
    margin = int(MARGIN_INCHES * dpi)
    font = ImageFont.truetype(str(FONT), size=round(POINTS * dpi / 72))
    line_height = round(POINTS * 1.45 * dpi / 72)
    rows = (height - 2 * margin) // line_height
    return " ".join(wrap(text, font, width - 2 * margin)[:rows])


def image_file(images: list[Image.Image], fmt: str) -> bytes:
    """The pages as one image file (PNG for one page; TIFF holds several)."""
    out = io.BytesIO()
    first, *rest = images
    first.save(out, format=fmt, **({"save_all": True, "append_images": rest} if rest else {}))
    return out.getvalue()


def scanned_pdf(images: list[Image.Image], dpi: int) -> bytes:
    """A PDF of page images without any text layer, as a scanner writes it."""
    out = io.BytesIO()
    first, *rest = [image.convert("RGB") for image in images]
    first.save(out, format="PDF", resolution=float(dpi), save_all=True, append_images=rest)
    return out.getvalue()
