"""RFC 822 e-mail (.eml): headers, the body part and the attachments, handed to ``mail`` to assemble.

The MIME structure is read with the stdlib's ``compat32`` policy and only the top-level header block with
``policy.default``: the modern policy parses every header of every part into objects, which is slow per
part and lets a message of 20,000 tiny parts run past ``limits.parse_timeout_s``
(docs/decisions/0101-office-email-ebook-formats.md).
"""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
import quopri
from collections.abc import Iterator
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import Message
from email.parser import BytesHeaderParser
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

# Whole-message encryption (RFC 8551 S/MIME, RFC 3156 PGP/MIME); S/MIME opaque signing shares the type.
_ENCRYPTED = frozenset({"application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/encrypted"})


def parse_eml(
    data: bytes, *, source: str, limits: ParseLimits, parse_part: PartParser, depth: int = 0,
) -> ParsedDocument:
    """Parse an RFC 822 (.eml) message.

    Raises:
        LimitExceeded: The message is nested deeper than ``limits.mail_max_depth``.
        CorruptDocument: The message has no headers.
        EncryptedDocument: The message is S/MIME- or PGP-encrypted.
        EmptyDocument: Neither the body nor any attachment holds text.
    """
    check_depth(depth, limits, source)
    headers = BytesHeaderParser(policy=email.policy.default).parsebytes(data)
    if not headers.keys():
        raise CorruptDocument(f"{describe_source(source)} has no e-mail headers", source=source)
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    if message.get_content_type() in _ENCRYPTED:
        raise EncryptedDocument(
            f"e-mail {describe_source(source)} is encrypted (S/MIME or PGP); index a decrypted copy", source=source,
        )
    mail = mime_mail(message, _headers(headers, message))
    return mail_document(mail, source=source, limits=limits, parse_part=parse_part, depth=depth)


def mime_mail(message: Message, metadata: Metadata) -> Mail:
    """The body and attachments of a parsed MIME message, with its header ``metadata``."""
    body = _body_part(message)
    mail = Mail(metadata=metadata, attachments=list(_attachments(message, body)))
    if body is not None:
        if body.get_content_type() == "text/plain":
            mail.plain = _text(body)
        else:
            mail.html = _text(body)
    return mail


def _headers(headers: Any, raw: Message) -> Metadata:
    metadata: Metadata = {}
    for header, key in (("from", "from"), ("subject", "subject"), ("message-id", "message_id")):
        value = header_line(str(_header(headers, raw, header) or ""))
        if value:
            metadata[key] = value.strip("<>") if key == "message_id" else value
    for header in ("to", "cc"):
        addresses = _addresses(_header(headers, raw, header))
        if addresses:
            metadata[header] = addresses
    date = _header(headers, raw, "date")
    stamp = getattr(date, "datetime", None)
    if stamp is not None:
        metadata["date"] = stamp.isoformat()
    elif date:
        metadata["date"] = header_line(str(date))
    return metadata


def _header(headers: Any, raw: Message, name: str) -> Any:
    """A header as ``policy.default`` parses it, or its raw text where the stdlib's parser fails on it."""
    try:
        return headers.get(name)
    except (IndexError, ValueError, TypeError, AttributeError, HeaderParseError):
        value = raw.get(name)
        return None if value is None else decoded_header(str(value))


def decoded_header(value: str) -> str:
    """RFC 2047 encoded words decoded, or the text as it is when they are malformed."""
    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError, UnicodeError, HeaderParseError):
        return value


def _addresses(header: Any) -> list[str]:
    if header is None:
        return []
    try:
        return [header_line(str(address)) for address in header.addresses if str(address).strip()]
    except (AttributeError, ValueError, IndexError):
        return [part for part in (header_line(p) for p in str(header).split(",")) if part]


def _is_attachment(part: Message) -> bool:
    return part.get_content_disposition() == "attachment" or bool(part.get_filename())


def _body_part(message: Message) -> Message | None:
    """The first inline text/plain part, else the first inline text/html part (not inside attached e-mails)."""
    found: dict[str, Message] = {}
    stack = [message]
    while stack:
        part = stack.pop()
        content_type = part.get_content_type()
        if content_type == "message/rfc822" and part is not message or _is_attachment(part):
            continue
        if part.is_multipart():
            stack.extend(reversed([p for p in part.get_payload() if isinstance(p, Message)]))
        elif content_type in ("text/plain", "text/html"):
            found.setdefault(content_type, part)
    return found.get("text/plain") or found.get("text/html")


def _text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, "replace")
    except LookupError:  # a charset Python does not know
        return payload.decode("utf-8", "replace")


def _filename(part: Message) -> str:
    return header_line(decoded_header(part.get_filename() or ""))


def _transfer_decoded(part: Message, inner: Message) -> bytes:
    """The attached e-mail's bytes; RFC 2046 allows no transfer encoding on message/rfc822, yet mailers send
    it base64 or quoted-printable, which the stdlib then reads as a message without headers."""
    encoding = str(part.get("content-transfer-encoding", "")).strip().lower()
    payload = inner.get_payload()
    if encoding not in ("base64", "quoted-printable") or inner.keys() or not isinstance(payload, str):
        return inner.as_bytes()
    raw = payload.encode("ascii", "replace")
    try:
        return base64.b64decode(raw) if encoding == "base64" else quopri.decodestring(raw)
    except binascii.Error:
        return inner.as_bytes()  # not really base64: the mail parser reports what it finds


def _attachments(message: Message, body: Message | None) -> Iterator[Attachment]:
    """Attachments in MIME order: files, and e-mails forwarded as attachments (``message/rfc822``)."""
    stack = [message]
    while stack:
        part = stack.pop()
        if part is body:
            continue
        content_type = part.get_content_type()
        if content_type == "message/rfc822" and part is not message:
            inner = part.get_payload(0) if isinstance(part.get_payload(), list) else None
            if isinstance(inner, Message):
                data = _transfer_decoded(part, inner)
                subject = header_line(decoded_header(str(inner.get("subject", "") or "")))
                yield Attachment(name=_filename(part) or f"{subject or 'message'}.eml", data=data,
                                 content_type="message/rfc822")
        elif part.is_multipart():
            stack.extend(reversed([p for p in part.get_payload() if isinstance(p, Message)]))
        elif _is_attachment(part):
            payload = part.get_payload(decode=True)
            yield Attachment(name=_filename(part) or f"attachment.{part.get_content_subtype()}",
                             data=payload if isinstance(payload, bytes) else b"", content_type=content_type)
