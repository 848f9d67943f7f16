"""Outlook .msg details read from MAPI properties (written by aspose-email-foss): Internet headers before
properties, recipients by type, 8-bit strings in the message's code page, drafts without a date, S/MIME."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from freki.ingest.parsing import EncryptedDocument, parse_document
from tests.freki.ingest.office_files_support import msg_message


def _msg() -> object:
    return msg_message("Body text.", subject="Subj")


def test_internet_headers_come_before_the_properties() -> None:
    from aspose.email_foss.msg import RECIPIENT_TYPE_CC
    from aspose.email_foss.msg import PropertyTypeCode as T

    message = _msg()
    message.set_property(0x5D01, T.PTYP_STRING, "ann.smtp@example.com")  # type: ignore[attr-defined]
    message.set_property(0x1035, T.PTYP_STRING, "<prop-id@x.org>")  # type: ignore[attr-defined]
    message.add_recipient("to1@x.org", display_name="To One")  # type: ignore[attr-defined]
    message.add_recipient("cc1@x.org", display_name="Cc One", recipient_type=RECIPIENT_TYPE_CC)  # type: ignore[attr-defined]
    message.set_property(0x0039, T.PTYP_TIME, datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))  # type: ignore[attr-defined]
    doc = parse_document(bytes(message.to_bytes()), source="props.msg")  # type: ignore[attr-defined]
    assert doc.metadata["from"] == "Ann Example <ann.smtp@example.com>"
    assert (doc.metadata["to"], doc.metadata["cc"]) == (["To One <to1@x.org>"], ["Cc One <cc1@x.org>"])
    assert (doc.metadata["message_id"], doc.metadata["date"]) == ("prop-id@x.org", "2025-01-02T03:04:05+00:00")

    message.set_property(0x007D, T.PTYP_STRING, "From: Hdr Sender <h@x.org>\r\nTo: a@x.org, B <b@x.org>\r\n"  # type: ignore[attr-defined]
                         "Message-ID: <id1@x.org>\r\n\r\n")
    message.set_property(0x0E07, T.PTYP_INTEGER32, 8)  # type: ignore[attr-defined]  # an unsent draft
    doc = parse_document(bytes(message.to_bytes()), source="headers.msg")  # type: ignore[attr-defined]
    assert doc.metadata["from"] == "Hdr Sender <h@x.org>"
    assert (doc.metadata["to"], doc.metadata["cc"]) == (["a@x.org", "B <b@x.org>"], ["Cc One <cc1@x.org>"])
    assert doc.metadata["message_id"] == "id1@x.org" and "date" not in doc.metadata


def test_8_bit_strings_are_read_in_the_message_code_page() -> None:
    from aspose.email_foss.msg import MapiMessage
    from aspose.email_foss.msg import PropertyTypeCode as T

    message = MapiMessage.create("", "", unicode_strings=False)
    message.set_property(0x3FFD, T.PTYP_INTEGER32, 1251)
    message.set_property(0x1000, T.PTYP_STRING8, "Привет мир".encode("cp1251"))
    message.set_property(0x0037, T.PTYP_STRING8, "Тема".encode("cp1251"))
    doc = parse_document(bytes(message.to_bytes()), source="ansi.msg")
    assert (doc.title, doc.text) == ("Тема", "Привет мир")


def test_an_html_body_is_read_in_its_internet_code_page() -> None:
    from aspose.email_foss.msg import MapiMessage
    from aspose.email_foss.msg import PropertyTypeCode as T

    message = MapiMessage.create("Html only", "")
    message.set_property(0x3FDE, T.PTYP_INTEGER32, 1252)
    message.set_property(0x1013, T.PTYP_BINARY, "<p>Grüße aus Köln</p>".encode("cp1252"))
    assert parse_document(bytes(message.to_bytes()), source="html.msg").text == "Grüße aus Köln"


def test_encrypted_smime_is_refused_and_clear_signed_smime_is_read() -> None:
    from aspose.email_foss.msg import MapiMessage

    message = MapiMessage.create("Encrypted", "")
    message.message_class = "IPM.Note.SMIME"
    message.add_attachment("smime.p7m", b"0\x80\x06\t*\x86H\x86\xf7\r\x01\x07\x03" + b"\x00" * 40,
                           mime_type="application/pkcs7-mime")
    with pytest.raises(EncryptedDocument, match="'locked.msg' is encrypted"):
        parse_document(bytes(message.to_bytes()), source="locked.msg")

    message = MapiMessage.create("Signed", "")
    message.message_class = "IPM.Note.SMIME.MultipartSigned"
    mime = (b'Content-Type: multipart/signed; protocol="application/pkcs7-signature"; boundary="b1"\r\n\r\n'
            b"--b1\r\nContent-Type: text/plain\r\n\r\nSigned body text.\r\n--b1\r\n"
            b"Content-Type: text/plain\r\nContent-Disposition: attachment; filename=terms.txt\r\n\r\nThe terms.\r\n"
            b"--b1--\r\n")
    message.add_attachment("smime.p7m", mime, mime_type="multipart/signed")
    doc = parse_document(bytes(message.to_bytes()), source="signed.msg")
    assert doc.sections[0].text == "Signed body text."
    assert doc.metadata["attachments"] == ["terms.txt"]


ENCAPSULATED_HTML = (rb"{\rtf1\ansi\ansicpg1252\fromhtml1 \deff0{\fonttbl{\f0\fswiss Arial;}}{\*\htmltag64 <html>}"
                     rb"\htmlrtf {\htmlrtf0 {\*\htmltag84 <p>}Gr\'fc\'dfe aus K\'f6ln{\*\htmltag244 </p>}\htmlrtf\par"
                     rb"\htmlrtf0 {\*\htmltag84 <p>}Second paragraph{\*\htmltag244 </p>}}{\*\htmltag249 </html>}}")
NATIVE_RTF = rb"{\rtf1\ansi\ansicpg1252\deff0{\fonttbl{\f0 Calibri;}}\f0 Native \b RTF\b0  body\par}"


@pytest.mark.parametrize(("rtf", "text"), [(ENCAPSULATED_HTML, "Grüße aus Köln Second paragraph"),
                                           (NATIVE_RTF, "Native RTF body")])
def test_a_message_with_only_an_rtf_body_is_read_from_it(rtf: bytes, text: str) -> None:
    import compressed_rtf
    from aspose.email_foss.msg import MapiMessage
    from aspose.email_foss.msg import PropertyTypeCode as T

    message = MapiMessage.create("Rtf only", "")
    message.set_property(0x1009, T.PTYP_BINARY, compressed_rtf.compress(rtf, compressed=True))
    assert parse_document(bytes(message.to_bytes()), source="rtf.msg").text == text


def test_a_damaged_rtf_body_loses_the_body_not_the_attachments() -> None:
    import compressed_rtf
    from aspose.email_foss.msg import MapiMessage
    from aspose.email_foss.msg import PropertyTypeCode as T

    damaged = bytearray(compressed_rtf.compress(NATIVE_RTF, compressed=True))
    damaged[-1] ^= 0xFF  # the checksum no longer matches
    message = MapiMessage.create("Rtf only", "")
    message.set_property(0x1009, T.PTYP_BINARY, bytes(damaged))
    message.add_attachment("notes.txt", b"The attached notes.", mime_type="text/plain")
    doc = parse_document(bytes(message.to_bytes()), source="rtf.msg")
    assert doc.text == "Attachment: notes.txt\n\nThe attached notes."
