"""Type detection and the text, markdown and HTML parsers."""

from __future__ import annotations

import codecs

import grpc
import pytest

from freki.ingest.parsing import (
    CorruptDocument,
    DocumentError,
    DocumentTooLarge,
    UnsupportedFormat,
    detect_content_type,
    parse_document,
)

# --- detection ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("text/plain; charset=utf-8", "text"),
        ("TEXT/MARKDOWN", "markdown"),
        ("md", "markdown"),
        ("application/xhtml+xml", "html"),
        ("application/pdf", "pdf"),
        ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
    ],
)
def test_declared_type_wins(declared: str, expected: str) -> None:
    assert detect_content_type("# looks like markdown", source="x.html", content_type=declared) == expected


def test_unknown_declared_type_is_rejected_with_the_supported_list() -> None:
    with pytest.raises(UnsupportedFormat, match=r"'image/gif' of 'cat\.gif' is not supported; use one of"):
        detect_content_type(b"GIF89a", source="cat.gif", content_type="image/gif")


@pytest.mark.parametrize(
    ("source", "expected"),
    [("notes.MD", "markdown"), ("a/b/page.htm", "html"), ("r.pdf", "pdf"), ("w.docx", "docx"), ("x.txt", "text")],
)
def test_extension_is_used_when_no_type_is_declared(source: str, expected: str) -> None:
    assert detect_content_type("plain words", source=source) == expected


def test_known_unsupported_extension_names_the_format() -> None:
    with pytest.raises(UnsupportedFormat, match="'deck.ppt' is a legacy PowerPoint .ppt file"):
        detect_content_type(b"\xd0\xcf\x11\xe0", source="deck.ppt")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"%PDF-1.7\n...", "pdf"),
        ("<!DOCTYPE html><html><body>x</body></html>", "html"),
        ("---\ntitle: x\n---\nbody", "markdown"),
        ("intro\n\n## Usage\nrun it", "markdown"),
        ("just some words.\nmore words.", "text"),
    ],
)
def test_content_is_sniffed_without_type_or_extension(data: str | bytes, expected: str) -> None:
    assert detect_content_type(data, source="upload") == expected


def test_zip_that_is_not_docx_is_unsupported() -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data.csv", "a,b")
    with pytest.raises(UnsupportedFormat, match="zip archive but not a .docx, .pptx, .xlsx"):
        parse_document(buffer.getvalue(), source="upload.bin")


def test_errors_carry_invalid_argument() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document(b"\x00\x01\x02binary", source="blob")
    assert caught.value.grpc_code is grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.source == "blob"


def test_too_large_documents_are_rejected_before_parsing() -> None:
    with pytest.raises(DocumentTooLarge, match=r"'big.txt' is 11 bytes, over the 10-byte limit"):
        parse_document("x" * 11, source="big.txt", max_bytes=10)
    assert parse_document("x" * 10, source="ok.txt", max_bytes=10).text == "x" * 10


def test_binary_formats_sent_as_text_are_rejected() -> None:
    with pytest.raises(UnsupportedFormat, match="PDF document 'a.pdf' was sent as text"):
        parse_document("%PDF-1.4 ...", source="a.pdf")


# --- plain text -----------------------------------------------------------------------------------------


def test_text_decodes_utf8_with_bom_and_normalises_newlines() -> None:
    doc = parse_document(codecs.BOM_UTF8 + "Grüße.\r\nZweite Zeile.".encode(), source="a.txt")
    assert doc.text == "Grüße. Zweite Zeile."
    assert doc.content_type == "text"
    assert doc.title == "a"  # falls back to the file name


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_text_decodes_utf16_and_utf32_with_bom(encoding: str) -> None:
    data = "Ünïcödé text.".encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    assert parse_document(data, source="u.txt").text == "Ünïcödé text."


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Il était une fois, à Paris, un garçon très sage. Ça va?", "latin-1"),
        ("Grüße aus Köln, schöne Straße — “zitiert” für 5 €.", "cp1252"),
        ("café au lait", "latin-1"),
        ("Привет мир, это тест кодировки.", "cp1251"),
        ("これは日本語のテキストです。文字コードの判定。", "shift_jis"),
    ],
)
def test_legacy_encodings_are_detected(text: str, encoding: str) -> None:
    assert parse_document(text.encode(encoding), source="legacy.txt").text == text


def test_text_no_encoding_fits_names_the_byte_and_offset() -> None:
    with pytest.raises(CorruptDocument, match=r"not valid UTF-8 text \(byte 0x80 at offset 0\) and no other"):
        parse_document(bytes(range(128, 256)) * 4, source="l1.txt")


def test_nul_bytes_mean_binary() -> None:
    with pytest.raises(CorruptDocument, match=r"'x.txt' looks binary, not text: control character '\\x00'"):
        parse_document(b"abc\x00def", source="x.txt")


def test_text_unwraps_prose_but_keeps_list_items_and_paragraphs() -> None:
    doc = parse_document(
        "First line of a wrapped\nsentence that contin-\nues here.\n\nShopping:\n- eggs\n- milk\n", source="t.txt"
    )
    assert doc.sections[0].text == (
        "First line of a wrapped sentence that continues here.\n\nShopping:\n- eggs\n- milk"
    )


def test_empty_text_has_no_sections() -> None:
    doc = parse_document("  \n\n ", source="empty.txt")
    assert doc.sections == [] and doc.text == ""


# --- markdown -------------------------------------------------------------------------------------------

MARKDOWN = """---
title: Install Guide
tags: [linux, setup]
version: 2
published: 2024-05-01
draft: false
owner:
  team: infra
---
Welcome to **Wolfpack**. See [the docs](https://example.com) and `wolf --help`.

# Install

Download it.

## Linux

1. Run `apt install wolf`.
2. Start the *service*.

```bash
# not a heading
wolf serve

wolf status
```

## macOS
Use brew.

Troubleshooting
===============

| Error | Fix |
|-------|-----|
| E1    | retry |
"""


def test_markdown_frontmatter_becomes_metadata() -> None:
    doc = parse_document(MARKDOWN, source="guide.md")
    assert doc.metadata == {
        "title": "Install Guide",
        "tags": ["linux", "setup"],  # a list stays a list: filters match its elements
        "version": "2",
        "published": "2024-05-01",
        "draft": "false",
        "owner.team": "infra",
    }
    assert doc.title == "Install Guide"
    assert "title:" not in doc.text and "---" not in doc.text


def test_markdown_headings_give_sections_with_paths() -> None:
    doc = parse_document(MARKDOWN, source="guide.md")
    assert [(s.heading, s.heading_path) for s in doc.sections] == [
        ("", ()),
        ("Install", ("Install",)),
        ("Linux", ("Install", "Linux")),
        ("macOS", ("Install", "macOS")),
        ("Troubleshooting", ("Troubleshooting",)),
    ]


def test_markdown_syntax_is_stripped_but_code_is_kept() -> None:
    doc = parse_document(MARKDOWN, source="guide.md")
    intro, _, linux, _, trouble = doc.sections
    assert intro.text == "Welcome to Wolfpack. See the docs and wolf --help."
    assert linux.text == (
        "Linux\n\n1. Run apt install wolf.\n2. Start the service.\n\n# not a heading\nwolf serve\nwolf status"
    )
    assert trouble.text == "Troubleshooting\n\nError | Fix\nE1 | retry"


def test_markdown_title_falls_back_to_first_top_heading() -> None:
    doc = parse_document("intro\n\n## Minor\ntext\n\n# Major\nmore", content_type="markdown")
    assert doc.title == "Major"


def test_malformed_frontmatter_names_the_line() -> None:
    bad = "---\ntitle: ok\ntags: [a, b\nauthor: me\n---\nbody"
    with pytest.raises(CorruptDocument, match=r"invalid YAML frontmatter in 'bad.md' at line \d+"):
        parse_document(bad, source="bad.md")


def test_frontmatter_must_be_a_mapping() -> None:
    with pytest.raises(CorruptDocument, match=r"must be a mapping .*got list"):
        parse_document("---\n- a\n- b\n---\nbody", source="list.md")


def test_unclosed_frontmatter_is_treated_as_content() -> None:
    doc = parse_document("---\nnot frontmatter\n", source="rule.md")
    assert doc.metadata == {} and doc.text == "not frontmatter"


# --- html -----------------------------------------------------------------------------------------------

HTML = """<!doctype html>
<html lang="en"><head><title>Wolf &amp; Pack</title>
<meta name="author" content="Ann"><style>body { color: red }</style>
<script>var secret = "do not index";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<h1>Guide</h1>
<p>Hello <b>world</b>,
   wrapped line.</p>
<div hidden>hidden text</div>
<h2>Steps <small>(v2)</small></h2>
<ul><li>First step</li><li>Second step</li></ul>
<table><tr><th>Key</th><th>Value</th></tr><tr><td>port</td><td>50051</td></tr></table>
<pre>line one
  indented two</pre>
<script>more()</script>
</body></html>"""


def test_html_title_metadata_and_visible_text() -> None:
    doc = parse_document(HTML.encode(), source="page.html")
    assert doc.title == "Wolf & Pack"
    assert doc.metadata == {"language": "en", "author": "Ann"}
    for invisible in ("secret", "Home", "About", "hidden text", "color", "more()"):
        assert invisible not in doc.text


def test_html_headings_split_sections() -> None:
    doc = parse_document(HTML, content_type="text/html")
    assert [s.heading_path for s in doc.sections] == [("Guide",), ("Guide", "Steps (v2)")]
    assert doc.sections[0].text == "Guide\n\nHello world, wrapped line."
    assert doc.sections[1].text == (
        "Steps (v2)\n\nFirst step\nSecond step\n\nKey | Value\nport | 50051\n\nline one\n  indented two"
    )


def test_html_declared_charset_is_used_when_not_utf8() -> None:
    data = '<html><head><meta charset="iso-8859-1"></head><body><p>Café</p></body></html>'.encode("latin-1")
    assert parse_document(data, source="old.html").text == "Café"
