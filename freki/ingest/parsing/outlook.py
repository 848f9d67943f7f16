"""Outlook .msg files (OLE compound files) through extract-msg, assembled like an .eml by ``mail``.

extract-msg is imported when a message is parsed, not when the parser worker starts.
"""

from __future__ import annotations

from typing import Any

from freki.ingest.parsing.document import Metadata, ParsedDocument
from freki.ingest.parsing.errors import CorruptDocument, describe_source
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.mail import Attachment, Mail, PartParser, check_depth, mail_document
from freki.ingest.parsing.text import clean_inline


def parse_msg(
    data: bytes, *, source: str, limits: ParseLimits, parse_part: PartParser, depth: int = 0,
) -> ParsedDocument:
    """Parse an Outlook .msg message.

    Raises:
        LimitExceeded: The message is nested deeper than ``limits.mail_max_depth``.
        CorruptDocument: The file is not a readable Outlook message.
    """
    import extract_msg
    from extract_msg.exceptions import ExMsgBaseException

    check_depth(depth, limits, source)
    name = describe_source(source)
    try:
        message = extract_msg.openMsg(data, strict=False)
    except (ExMsgBaseException, OSError, ValueError, IndexError, KeyError, EOFError) as exc:
        raise CorruptDocument(f"MSG is corrupt or not an Outlook message: {name} ({exc})", source=source) from exc
    try:  # embedded messages are read from the open file, so the whole message is assembled before closing it
        return mail_document(_mail(message), source=source, limits=limits, parse_part=parse_part, depth=depth,
                             kind="msg")
    except (ExMsgBaseException, OSError, ValueError, IndexError, KeyError, EOFError) as exc:
        raise CorruptDocument(f"MSG is corrupt: {name} cannot be read ({exc})", source=source) from exc
    finally:
        message.close()


def _mail(message: Any) -> Mail:
    metadata: Metadata = {}
    for attribute, key in (("sender", "from"), ("subject", "subject"), ("messageId", "message_id")):
        value = clean_inline(str(getattr(message, attribute, "") or ""))
        if value:
            metadata[key] = value.strip("<>") if key == "message_id" else value
    for attribute in ("to", "cc"):
        value = str(getattr(message, attribute, "") or "")
        addresses = [clean_inline(part) for part in value.split(";") if part.strip()]
        if addresses:
            metadata[attribute] = addresses
    date = getattr(message, "date", None)
    if date is not None:
        metadata["date"] = date.isoformat() if hasattr(date, "isoformat") else clean_inline(str(date))
    html = getattr(message, "htmlBody", None) or b""
    mail = Mail(metadata=metadata, plain=str(getattr(message, "body", "") or ""),
                html=html.decode("utf-8", "replace") if isinstance(html, bytes) else str(html))
    for index, attachment in enumerate(getattr(message, "attachments", []) or [], start=1):
        mail.attachments.append(_attachment(attachment, index))
    return mail


def _attachment(attachment: Any, index: int) -> Attachment:
    name = str(getattr(attachment, "longFilename", None) or getattr(attachment, "name", None) or f"attachment-{index}")
    data = attachment.data
    if isinstance(data, bytes):
        return Attachment(name=name, data=data, content_type=str(getattr(attachment, "mimetype", "") or ""))
    if data is not None and hasattr(data, "attachments"):  # an Outlook message inside this one
        return Attachment(name=name, message=lambda: _mail(data))
    return Attachment(name=name)  # a link or an OLE object: no bytes to parse
