"""Known text rendered into images and scanned PDFs (Pillow, DejaVu Sans: Debian's fonts-dejavu-core)."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def text_image(lines: list[str], *, size: int = 40, blur: float = 0.0, width: int = 1600) -> Image.Image:
    """Black lines of text on white, as a scanner at ~300 dpi sees 10-pt print; ``blur`` degrades it."""
    font = ImageFont.truetype(str(FONT), size)
    image = Image.new("L", (width, 80 + len(lines) * size * 3 // 2), 255)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines):
        draw.text((40, 40 + row * size * 3 // 2), line, font=font, fill=0)
    return image.filter(ImageFilter.GaussianBlur(blur)) if blur else image


def blank_image(width: int = 1200, height: int = 800) -> Image.Image:
    """A white page."""
    return Image.new("L", (width, height), 255)


def encode(images: list[Image.Image], fmt: str, **options: object) -> bytes:
    """The images in one file of ``fmt`` (PNG, JPEG, TIFF, WEBP, BMP, PDF); several frames where it allows."""
    out = io.BytesIO()
    first, *rest = images if fmt != "PDF" else [i.convert("RGB") for i in images]
    if rest:
        first.save(out, format=fmt, save_all=True, append_images=rest, **options)
    else:
        first.save(out, format=fmt, **options)
    return out.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels but carries one tiny compressed row: a pixel bomb."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 1024))
            + chunk(b"IEND", b""))
