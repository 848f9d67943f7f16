"""E-mail, whatever its file format (``rfc822`` reads .eml, ``outlook`` .msg): headers as metadata, the body,
parsed attachments.

The body is the plain-text part when there is one, else the HTML part through the HTML parser. Each
attachment of a supported type is parsed like a document of its own (same limits) and its sections are
placed under the heading ``Attachment: <name>``, keeping their pages, slides and sheets. An attachment is
not parsed, and is listed in the ``attachments_skipped`` metadata with the reason, when it is of an
unsupported type or an archive, larger than ``limits.mail_max_attachment_bytes``, past the first
``limits.mail_max_attachments``, an e-mail nested deeper than ``limits.mail_max_depth``, or refused by its
own parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from freki.ingest.parsing.document import Metadata, ParsedDocument, Section, build_document
from freki.ingest.parsing.errors import (
    DocumentError,
    EmptyDocument,
    EncryptedDocument,
    LimitExceeded,
    UnsupportedFormat,
    describe_source,
)
from freki.ingest.parsing.guards import ParseLimits
from freki.ingest.parsing.html import parse_html
from freki.ingest.parsing.text import clean_inline, parse_text

# Parses one attachment: (bytes, file name, declared MIME type, nesting depth) -> document.
PartParser = Callable[[bytes, str, str, int], ParsedDocument]
# Header metadata is kept well inside the document metadata limits (limits.metadata_*), so that a message
# to a thousand recipients or with a 10 kB subject is indexed, not refused: values are cut, lists shortened.
_MAX_VALUE_CHARS = 300
_MAX_LIST_ITEMS = 25


@dataclass
class Attachment:
    """One attachment: its bytes, or (an Outlook message inside a message) a way to read it."""

    name: str
    data: bytes = b""
    content_type: str = ""
    message: Callable[[], Mail] | None = None
    size: int = 0


@dataclass
class Mail:
    """An e-mail reduced to what is indexed."""

    metadata: Metadata
    plain: str = ""
    html: str = ""
    attachments: list[Attachment] = field(default_factory=list)


# Control characters (CR and LF above all) that RFC 2047 encoded words or MSG properties carry into a header.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def header_line(text: str) -> str:
    """A header value as one line: an encoded CR/LF must not start a new header in what shows or forwards it."""
    return clean_inline(_CONTROL.sub(" ", text))


def check_depth(depth: int, limits: ParseLimits, source: str) -> None:
    """Refuse an e-mail attached to e-mails deeper than ``limits.mail_max_depth``."""
    if depth > limits.mail_max_depth:
        raise LimitExceeded(
            f"e-mail {describe_source(source)} is nested {depth} e-mails deep; the limit is "
            f"{limits.mail_max_depth} (limits.mail_max_depth)", setting="limits.mail_max_depth", source=source,
        )


def mail_document(
    mail: Mail, *, source: str, limits: ParseLimits, parse_part: PartParser, depth: int, kind: str = "eml",
) -> ParsedDocument:
    """The document of an e-mail: body sections, then each parsed attachment's sections under its name."""
    sections = _body_sections(mail, source, limits)
    metadata: Metadata = {key: _bounded(value) for key, value in mail.metadata.items()}
    parsed: list[str] = []
    skipped: list[str] = []
    for index, attachment in enumerate(mail.attachments):
        if index >= limits.mail_max_attachments:
            skipped.append(f"{len(mail.attachments) - index} more attachments: over limits.mail_max_attachments "
                           f"({limits.mail_max_attachments})")
            break
        try:
            document = _attachment_document(attachment, source, limits, parse_part, depth)
        except DocumentError as exc:
            skipped.append(f"{attachment.name}: {_reason(exc, attachment)}")
            continue
        parsed.append(attachment.name)
        sections.extend(_under(document.sections, f"Attachment: {attachment.name}"))
    if parsed:
        metadata["attachments"] = _bounded(parsed)
    if skipped:
        metadata["attachments_skipped"] = _bounded(skipped)
    if not any(section.text.strip() for section in sections):
        raise EmptyDocument(f"e-mail {describe_source(source)} has no text in its body or attachments", source=source)
    return build_document(sections, title=str(metadata.get("subject", "")), content_type=kind, metadata=metadata)


def _bounded(value: str | list[str]) -> str | list[str]:
    """A metadata value cut to ``_MAX_VALUE_CHARS`` (each list item) and ``_MAX_LIST_ITEMS`` items."""
    if isinstance(value, str):
        return value if len(value) <= _MAX_VALUE_CHARS else value[: _MAX_VALUE_CHARS - 1] + "…"
    items = [str(_bounded(item)) for item in value[:_MAX_LIST_ITEMS]]
    if len(value) > _MAX_LIST_ITEMS:
        items.append(f"… and {len(value) - _MAX_LIST_ITEMS} more")
    return items


def _attachment_document(
    attachment: Attachment, source: str, limits: ParseLimits, parse_part: PartParser, depth: int,
) -> ParsedDocument:
    size = attachment.size or len(attachment.data)
    if size > limits.mail_max_attachment_bytes:
        raise LimitExceeded(f"{size:,} bytes", setting="limits.mail_max_attachment_bytes")
    if attachment.message is not None:
        check_depth(depth + 1, limits, attachment.name)
        return mail_document(attachment.message(), source=attachment.name, limits=limits, parse_part=parse_part,
                             depth=depth + 1)
    return parse_part(attachment.data, attachment.name, attachment.content_type, depth + 1)


def _reason(exc: DocumentError, attachment: Attachment) -> str:
    """Why an attachment was not parsed, in a few words that name the limit."""
    if isinstance(exc, LimitExceeded):
        return f"over {exc.setting or 'a limit'}"
    if isinstance(exc, UnsupportedFormat):
        archive = attachment.data.startswith(b"PK\x03\x04") or attachment.name.lower().endswith(".zip")
        return "an archive, not unpacked" if archive else "not a supported document type"
    if isinstance(exc, EncryptedDocument):
        return "password protected"
    if isinstance(exc, EmptyDocument):
        return "no text"
    return "cannot be parsed (corrupt or refused)"


def _under(sections: list[Section], label: str) -> Iterator[Section]:
    for number, section in enumerate(sections):
        text = f"{label}\n\n{section.text}" if number == 0 else section.text
        yield replace(section, text=text, heading=section.heading or label,
                      heading_path=(label, *section.heading_path))


def _body_sections(mail: Mail, source: str, limits: ParseLimits) -> list[Section]:
    if mail.plain.strip():
        return list(parse_text(mail.plain, source=source).sections)
    if mail.html.strip():
        return list(parse_html(mail.html, source=source, limits=limits).sections)
    return []
