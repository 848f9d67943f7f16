"""E-mail parsing: .eml (stdlib ``email``) and Outlook .msg (written and read by aspose-email-foss)."""

from __future__ import annotations

import pytest

from freki.ingest.parsing import EmptyDocument, EncryptedDocument, ParsedDocument, ParseLimits, parse_document
from tests.freki.ingest.office_files_support import (
    build_eml,
    build_message,
    build_msg,
    build_pptx,
    build_xlsx,
    msg_message,
)

PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def test_eml_headers_become_metadata_and_the_plain_body_is_preferred() -> None:
    data = build_eml("Hello Bob,\n\nthe quarterly numbers are in.", html="<p>HTML twin of the body</p>")
    doc = parse_document(data, source="q1.eml")
    assert (doc.content_type, doc.title) == ("eml", "Quarterly numbers")
    assert doc.metadata["from"] == "Ann Example <ann@example.com>"
    assert doc.metadata["to"] == ["Bob Example <bob@example.com>", "dan@example.com"]
    assert doc.metadata["cc"] == ["carl@example.com"]
    assert doc.metadata["date"] == "2026-03-03T10:15:00+00:00"
    assert doc.metadata["message_id"] == "q1-numbers@example.com"
    assert doc.text == "Hello Bob,\n\nthe quarterly numbers are in."


def test_eml_html_only_body_goes_through_the_html_parser() -> None:
    doc = parse_document(build_eml("", html="<h1>Status</h1><p>All green.</p><script>x()</script>"), source="s.eml")
    assert doc.sections[0].heading == "Status"
    assert doc.text == "Status\n\nAll green."


def test_eml_attachments_are_parsed_under_their_name_keeping_slides_and_sheets() -> None:
    deck = build_pptx([{"title": "Roadmap", "body": ["Ship the parser."]}])
    book = build_xlsx({"Budget": [["Item", "Cost"], ["Servers", 100]]})
    data = build_eml("See attached.", attachments=[
        ("roadmap.pptx", deck, PPTX_MIME), ("budget.xlsx", book, "application/octet-stream"),
        ("photos.zip", b"PK\x03\x04not really", "application/zip"), ("logo.png", b"\x89PNG\r\n", "image/png"),
    ])
    doc = parse_document(data, source="a.eml")
    body, slide, sheet = doc.sections
    assert body.text == "See attached."
    assert (slide.slide, slide.heading_path) == (1, ("Attachment: roadmap.pptx", "Roadmap"))
    assert slide.text.startswith("Attachment: roadmap.pptx\n\nRoadmap\n\nShip the parser.")
    assert (sheet.sheet, sheet.heading_path) == ("Budget", ("Attachment: budget.xlsx", "Budget"))
    assert doc.metadata["attachments"] == ["roadmap.pptx", "budget.xlsx"]
    assert doc.metadata["attachments_skipped"] == ["photos.zip: an archive, not unpacked",
                                                   "logo.png: cannot be parsed (corrupt or refused)"]


def test_eml_attachment_limits_are_named_and_the_rest_listed() -> None:
    small = [(f"note{n}.txt", f"note number {n}".encode(), "text/plain") for n in range(5)]
    big = ("big.txt", b"x " * 600, "text/plain")
    data = build_eml("Body.", attachments=[*small, big])
    doc = parse_document(data, source="m.eml", limits=ParseLimits(mail_max_attachments=3,
                                                                   mail_max_attachment_bytes=1000))
    assert doc.metadata["attachments"] == ["note0.txt", "note1.txt", "note2.txt"]
    assert doc.metadata["attachments_skipped"] == ["3 more attachments: over limits.mail_max_attachments (3)"]
    doc = parse_document(data, source="m.eml", limits=ParseLimits(mail_max_attachment_bytes=1000))
    assert doc.metadata["attachments_skipped"] == ["big.txt: over limits.mail_max_attachment_bytes"]


def test_eml_with_a_thousand_attachments_is_cut_at_the_limit() -> None:
    data = build_eml("Body.", attachments=[(f"a{n}.txt", b"tiny attachment", "text/plain") for n in range(1000)])
    doc = parse_document(data, source="many.eml")
    assert len(doc.metadata["attachments"]) == ParseLimits().mail_max_attachments
    assert doc.metadata["attachments_skipped"] == ["980 more attachments: over limits.mail_max_attachments (20)"]


def test_an_email_attached_to_an_email_is_parsed_one_level_deep_only() -> None:
    innermost = build_message("innermost body", subject="Innermost")
    inner = build_message("inner body", subject="Inner")
    inner.add_attachment(innermost)
    doc = parse_document(build_eml("outer body", messages=[inner]), source="fwd.eml")
    assert [s.heading_path for s in doc.sections] == [(), ("Attachment: Inner.eml",)]
    assert "inner body" in doc.text and "innermost body" not in doc.text
    assert doc.metadata["attachments"] == ["Inner.eml"]
    # The skipped message is listed by the inner message, whose metadata is not carried up; the outer
    # message records what it parsed.
    deeper = parse_document(build_eml("outer body", messages=[inner]), source="fwd.eml",
                            limits=ParseLimits(mail_max_depth=2))
    assert "innermost body" in deeper.text
    flat = parse_document(build_eml("outer body", messages=[inner]), source="fwd.eml",
                          limits=ParseLimits(mail_max_depth=0))
    assert flat.metadata["attachments_skipped"] == ["Inner.eml: over limits.mail_max_depth"]


def test_eml_without_any_text_is_empty() -> None:
    with pytest.raises(EmptyDocument, match="no text in its body or attachments"):
        parse_document(build_eml("", html="<p> </p>"), source="blank.eml")


def test_msg_headers_body_and_attachments() -> None:
    data = build_msg("Hello Bob, the msg body.",
                     attachments=[("notes.txt", b"The attached notes.", "text/plain"),
                                  ("logo.png", b"\x89PNG\r\n", "image/png")],
                     embedded=[msg_message("inner message body", subject="Inner")])
    doc = parse_document(data, source="q1.msg")
    assert (doc.content_type, doc.title) == ("msg", "Quarterly numbers")
    assert doc.metadata["from"] == "Ann Example"
    assert doc.metadata["to"] == ["Bob Example <bob@example.com>"]
    assert doc.metadata["date"] == "2026-03-03T10:15:00+00:00"
    assert [s.heading_path for s in doc.sections] == [(), ("Attachment: notes.txt",), ("Attachment: Inner.msg",)]
    assert doc.sections[0].text == "Hello Bob, the msg body."
    assert doc.sections[2].text == "Attachment: Inner.msg\n\ninner message body"
    assert doc.metadata["attachments_skipped"] == ["logo.png: cannot be parsed (corrupt or refused)"]


def test_msg_nesting_and_attachment_count_limits() -> None:
    inner = msg_message("inner", subject="Inner")
    data = build_msg("outer", attachments=[("a.txt", b"first text", "text/plain"), ("b.txt", b"second", "text/plain")],
                     embedded=[inner])
    doc = parse_document(data, source="m.msg", limits=ParseLimits(mail_max_depth=0, mail_max_attachments=2))
    assert doc.metadata["attachments"] == ["a.txt", "b.txt"]
    assert doc.metadata["attachments_skipped"] == ["1 more attachments: over limits.mail_max_attachments (2)"]
    doc = parse_document(data, source="m.msg", limits=ParseLimits(mail_max_depth=0))
    assert doc.metadata["attachments_skipped"] == ["Inner.msg: over limits.mail_max_depth"]


def _no_attachments(data: bytes, name: str, content_type: str, depth: int) -> ParsedDocument:
    raise AssertionError("this message has no attachments")


def test_header_metadata_stays_inside_the_metadata_limits() -> None:
    from freki.ingest.parsing.mail import Mail, mail_document

    mail = Mail(metadata={"subject": "S" * 10_000, "to": [f"user{n}@example.com" for n in range(1000)]},
                plain="Body of a mass mailing.")
    doc = mail_document(mail, source="mass.eml", limits=ParseLimits(), parse_part=_no_attachments, depth=0)
    assert len(doc.metadata["subject"]) == 300
    assert doc.metadata["to"][-1] == "… and 975 more" and len(doc.metadata["to"]) == 26


def test_a_message_that_is_only_an_attached_file_keeps_it() -> None:
    data = (b"From: ann@example.com\r\nSubject: scan\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n"
            b"Content-Disposition: attachment; filename=\"minutes.txt\"\r\n\r\nMinutes of the board meeting.\r\n")
    doc = parse_document(data, source="only.eml")
    assert doc.metadata["attachments"] == ["minutes.txt"]
    assert doc.sections[0].text == "Attachment: minutes.txt\n\nMinutes of the board meeting."


@pytest.mark.parametrize("content_type", ["application/pkcs7-mime; smime-type=enveloped-data",
                                          'multipart/encrypted; protocol="application/pgp-encrypted"'])
def test_encrypted_mail_is_an_encrypted_document(content_type: str) -> None:
    data = (f"From: ann@example.com\r\nTo: bob@example.com\r\nSubject: secret\r\nMIME-Version: 1.0\r\n"
            f"Content-Type: {content_type}\r\n\r\nMIAGCSqGSIb3DQEHA6CAMIACAQAx\r\n").encode()
    with pytest.raises(EncryptedDocument, match="'locked.eml' is encrypted"):
        parse_document(data, source="locked.eml")


def test_line_breaks_smuggled_into_headers_by_encoded_words_do_not_reach_the_metadata() -> None:
    data = (b"From: =?utf-8?q?Ann=0D=0AX-Admin:_yes?= <a@example.com>\r\nSubject: hi =?utf-8?q?x=0D=0ABcc:_evil"
            b"@example.com?=\r\nTo: b@example.com\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
            b"Content-Type: text/plain\r\n\r\nHello there.\r\n--b\r\nContent-Type: text/plain\r\nContent-Disposition:"
            b" attachment; filename=\"=?utf-8?q?a=0Ab.txt?=\"\r\n\r\nattached words\r\n--b--\r\n")
    doc = parse_document(data, source="inject.eml")
    assert doc.metadata["subject"] == "hi x Bcc: evil@example.com"
    assert doc.title == "hi x Bcc: evil@example.com"
    assert "\n" not in str(doc.metadata["from"]) and "\r" not in str(doc.metadata["from"])
    assert doc.metadata["attachments"] == ["a b.txt"]


@pytest.mark.parametrize("encoding", ["base64", "quoted-printable"])
def test_an_attached_email_in_a_transfer_encoding_is_read_like_any_attached_email(encoding: str) -> None:
    import base64
    import quopri

    inner = build_eml("The lighthouse keeper logs forty ships each winter.", subject="inner")
    body = base64.encodebytes(inner) if encoding == "base64" else quopri.encodestring(inner)
    data = (b"From: a@example.com\r\nSubject: outer\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b"
            b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nOuter body.\r\n--b\r\nContent-Type: message/rfc822\r\n"
            b"Content-Transfer-Encoding: " + encoding.encode() + b"\r\nContent-Disposition: attachment; "
            b"filename=fwd.eml\r\n\r\n" + body + b"\r\n--b--\r\n")
    doc = parse_document(data, source="outer.eml")
    assert "attachments_skipped" not in doc.metadata, doc.metadata
    assert any("forty ships" in s.text for s in doc.sections)
