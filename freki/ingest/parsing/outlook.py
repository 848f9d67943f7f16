"""Outlook .msg files (OLE compound files of MAPI properties, [MS-OXMSG]), assembled like an .eml by ``mail``.

The compound file is read with aspose-email-foss (MIT): GPL readers such as extract-msg would make the
GPL's terms apply to everyone who embeds Freki (docs/decisions/0102-msg-reader-licence.md). It is imported
when a message is parsed, not when the parser worker starts.

The body is ``PR_BODY``, else ``PR_HTML``, else the text of the compressed RTF body (compressed-rtf, MIT;
striprtf, BSD), which some writers store alone. Headers come from the message's copy of its Internet
headers (``PR_TRANSPORT_MESSAGE_HEADERS``) where it has one, else from the MAPI properties; the date is the
submit time of a sent message. A clear-signed S/MIME message keeps its body and attachments in one MIME
attachment, which is read like an .eml; an opaque S/MIME message (encrypted or opaque-signed) is refused
as encrypted.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import struct
from datetime import datetime
from email.message import Message
from email.parser import HeaderParser
from typing import Any

from freki.ingest.parsing.document import Metadata, ParsedDocument
from freki.ingest.parsing.errors import CorruptDocument, EncryptedDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.mail import (
    Attachment,
    Mail,
    PartParser,
    check_depth,
    header_line,
    mail_document,
)
from freki.ingest.parsing.rfc822 import decoded_header, mime_mail

# MAPI property ids ([MS-OXPROPS]) and types.
_SUBJECT, _SUBMIT_TIME, _HEADERS, _SENDER_NAME, _MESSAGE_FLAGS = 0x0037, 0x0039, 0x007D, 0x0C1A, 0x0E07
_BODY, _RTF, _HTML, _MESSAGE_ID, _SENDER_SMTP = 0x1000, 0x1009, 0x1013, 0x1035, 0x5D01
_STORE_SUPPORT_MASK, _INTERNET_CPID, _MESSAGE_CODEPAGE = 0x340D, 0x3FDE, 0x3FFD
_RECIPIENT_TYPE, _DISPLAY_NAME, _EMAIL_ADDRESS, _SMTP_ADDRESS = 0x0C15, 0x3001, 0x3003, 0x39FE
_UNICODE, _STRING8, _BINARY, _INTEGER32 = 0x001F, 0x001E, 0x0102, 0x0003
_UNSENT = 0x8  # PR_MESSAGE_FLAGS bit: a draft, whose submit time is not a sending date
_RECIPIENT_KINDS = {1: "to", 2: "cc"}
_ATTACH_BY_VALUE = 1
# Strings of a non-Unicode message without a code page are ISO-8859-15 ([MS-OXMSG] 2.1.2).
_DEFAULT_STRING8 = "iso-8859-15"
_HEADER_PREFIX = "Microsoft Mail Internet Headers Version 2.0"


def parse_msg(
    data: bytes, *, source: str, limits: ParseLimits, parse_part: PartParser, depth: int = 0,
) -> ParsedDocument:
    """Parse an Outlook .msg message.

    Raises:
        LimitExceeded: The message is nested deeper than ``limits.mail_max_depth``.
        CorruptDocument: The file is not a readable Outlook message.
        EncryptedDocument: The message is S/MIME-encrypted (or opaque-signed).
        EmptyDocument: Neither the body nor any attachment holds text.
    """
    from aspose.email_foss.cfb import CFBError, CFBReader
    from aspose.email_foss.msg import MapiMessage, MsgDocument, MsgError, MsgReader

    check_depth(depth, limits, source)
    name = describe_source(source)
    unreadable = (CFBError, MsgError, RecursionError, ValueError, IndexError, KeyError, EOFError, OverflowError,
                  struct.error)
    try:
        with MsgReader(CFBReader(data)) as reader:
            message = MapiMessage.from_msg_document(MsgDocument.from_reader(reader))
    except unreadable as exc:
        raise CorruptDocument(f"MSG is corrupt or not an Outlook message: {name} ({_why(exc)})",
                              source=source) from exc
    try:
        mail = _mail(message, source)
        return mail_document(mail, source=source, limits=limits, parse_part=parse_part, depth=depth, kind="msg")
    except unreadable as exc:
        raise CorruptDocument(f"MSG is corrupt: {name} cannot be read ({_why(exc)})", source=source) from exc


def _why(exc: BaseException) -> str:
    return "its storages are nested too deeply" if isinstance(exc, RecursionError) else str(exc)


class _Properties:
    """The MAPI properties of one message, recipient or attachment, read as [MS-OXMSG] stores them."""

    def __init__(self, collection: Any, streams: list[Any], encoding: str) -> None:
        self._collection = collection
        self._streams = {stream.name.upper(): stream.data for stream in streams}  # value streams with no entry
        self.encoding = encoding

    def raw(self, property_id: int, property_type: int) -> Any:
        prop = self._collection.get(property_id, property_type)
        if prop is not None:
            if property_type == _STRING8 and prop.raw_direct_stream is not None:
                return prop.raw_direct_stream
            return prop.value
        return self._streams.get(f"__SUBSTG1.0_{property_id:04X}{property_type:04X}")

    def text(self, property_id: int) -> str | None:
        """A string property, Unicode or in the message's code page; None when it is absent."""
        value = self.raw(property_id, _UNICODE)
        if isinstance(value, bytes):
            return value.decode("utf-16-le", "replace").rstrip("\x00")
        if isinstance(value, str):
            return value
        value = self.raw(property_id, _STRING8)
        if isinstance(value, bytes):
            return value.decode(self.encoding, "replace").rstrip("\x00")
        return value if isinstance(value, str) else None

    def integer(self, property_id: int, default: int = 0) -> int:
        value = self.raw(property_id, _INTEGER32)
        return value if isinstance(value, int) else default


def _codec(code_page: int | None) -> str | None:
    """The Python codec of a Windows code page, or None when Python has none."""
    if not isinstance(code_page, int) or code_page <= 0:
        return None
    name = {65001: "utf-8", 1200: "utf-16-le", 1201: "utf-16-be", 20127: "ascii"}.get(code_page, f"cp{code_page}")
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _properties(message: Any) -> _Properties:
    top = _Properties(message.properties, message.extra_streams, _DEFAULT_STRING8)
    unicode = bool(top.integer(_STORE_SUPPORT_MASK, 0x40000 if message.unicode_strings else 0) & 0x40000)
    encoding = _codec(top.integer(_MESSAGE_CODEPAGE)) or ("utf-8" if unicode else _DEFAULT_STRING8)
    return _Properties(message.properties, message.extra_streams, encoding)


def _mail(message: Any, source: str) -> Mail:
    props = _properties(message)
    message_class = (props.text(0x001A) or "").strip().lower()
    if message_class.startswith("ipm.note") and message_class.endswith(".smime"):
        raise EncryptedDocument(
            f"e-mail {describe_source(source)} is encrypted (S/MIME); index a decrypted copy", source=source,
        )
    metadata = _metadata(message, props)
    html = props.raw(_HTML, _BINARY)
    if isinstance(html, bytes):
        html_text = html.decode(_codec(props.integer(_INTERNET_CPID)) or "utf-8", "replace").rstrip("\x00")
    else:
        html_text = props.text(_HTML) or ""
    attachments = [_attachment(attachment, index, props) for index, attachment in
                   enumerate(message.attachments, start=1)]
    signed = _signed_content(message_class, message.attachments)
    if signed is not None:
        inner = mime_mail(signed, metadata)
        return Mail(metadata=metadata, plain=props.text(_BODY) or inner.plain, html=html_text or inner.html,
                    attachments=inner.attachments)
    plain = props.text(_BODY) or ("" if html_text.strip() else _rtf_text(props.raw(_RTF, _BINARY)))
    return Mail(metadata=metadata, plain=plain, html=html_text, attachments=attachments)


def _rtf_text(compressed: Any) -> str:
    """The text of a compressed RTF body ([MS-OXRTFCP]); empty when there is none or it cannot be read."""
    if not isinstance(compressed, bytes) or not compressed:
        return ""
    import compressed_rtf
    from striprtf.striprtf import rtf_to_text

    # A damaged RTF body loses the body, not the message: its attachments are still indexed.
    try:
        rtf = compressed_rtf.decompress(compressed)
    except Exception:  # noqa: BLE001 - compressed-rtf raises bare Exception for a bad header or checksum
        return ""
    try:
        return str(rtf_to_text(rtf.decode("latin-1"), errors="replace"))
    except (ValueError, LookupError, OverflowError, IndexError):
        return ""


def _signed_content(message_class: str, attachments: list[Any]) -> Message | None:
    """The MIME message of a clear-signed S/MIME message: its one attachment, ``multipart/signed``."""
    if not message_class.endswith(".smime.multipartsigned") or not attachments:
        return None
    data = attachments[0].data
    return email.message_from_bytes(data, policy=email.policy.compat32) if isinstance(data, bytes) and data else None


def _metadata(message: Any, props: _Properties) -> Metadata:
    headers = _headers(props.text(_HEADERS))
    fields: dict[str, str | None] = {
        "from": _header(headers, "from") or _sender(props),
        "subject": props.text(_SUBJECT),
        "message_id": _header(headers, "message-id") or props.text(_MESSAGE_ID),
    }
    metadata: Metadata = {}
    for key, raw in fields.items():
        value = header_line(raw or "")
        if value:
            metadata[key] = value.strip("<>") if key == "message_id" else value
    recipients = _recipients(message, props)
    for kind in ("to", "cc"):
        listed = _header(headers, kind)
        value = listed.replace(",", ";") if listed else "; ".join(recipients[kind])
        addresses = [header_line(part) for part in value.split(";") if part.strip()]
        if addresses:
            metadata[kind] = addresses
    sent = props.raw(_SUBMIT_TIME, 0x0040)
    if isinstance(sent, datetime) and not props.integer(_MESSAGE_FLAGS) & _UNSENT:
        metadata["date"] = sent.isoformat()
    return metadata


def _headers(text: str | None) -> Message | None:
    if not text:
        return None
    if text.startswith(_HEADER_PREFIX):
        text = text[len(_HEADER_PREFIX):].lstrip()
    return HeaderParser(policy=email.policy.compat32).parsestr(text)


def _header(headers: Message | None, name: str) -> str | None:
    value = headers.get(name) if headers is not None else None
    return decoded_header(str(value)) if value else None


def _sender(props: _Properties) -> str | None:
    name, address = props.text(_SENDER_NAME), props.text(_SENDER_SMTP)
    if name and address:
        return f"{name} <{address}>"
    return name or address


def _recipients(message: Any, props: _Properties) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"to": [], "cc": []}
    for recipient in message.recipients:
        fields = _Properties(recipient.properties, [], props.encoding)
        kind = _RECIPIENT_KINDS.get(fields.integer(_RECIPIENT_TYPE) & 0xF)
        name = fields.text(_DISPLAY_NAME)
        address = fields.text(_SMTP_ADDRESS) or fields.text(_EMAIL_ADDRESS)
        if kind is not None and (name or address):
            found[kind].append(f"{name} <{address}>" if name and address else str(name or address))
    return found


def _attachment(attachment: Any, index: int, props: _Properties) -> Attachment:
    fields = _Properties(attachment.properties, attachment.extra_streams, props.encoding)
    name = header_line(fields.text(0x3707) or fields.text(0x3704) or fields.text(0x3001) or "")
    name = name or f"attachment-{index}"
    inner = attachment.embedded_message
    if inner is not None:  # an Outlook message inside this one
        return Attachment(name=name, message=lambda: _mail(inner, name))
    if attachment.attach_method == _ATTACH_BY_VALUE and isinstance(attachment.data, bytes):
        return Attachment(name=name, data=attachment.data, content_type=fields.text(0x370E) or "")
    return Attachment(name=name)  # a link or an OLE object: no bytes to parse
