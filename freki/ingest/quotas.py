"""Limits on what one document may add to the index: metadata size and chunk count.

Metadata is checked the same way wherever it comes from: the request's ``metadata`` (by the API, before any
work) and the document's own (YAML frontmatter, PDF/DOCX properties) merged with it (by the indexer, after
parsing), so a file cannot smuggle in what a request may not send. Every refusal names its setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from freki.ingest.parsing.errors import LimitExceeded
from freki.store.metadata import Metadata
from wolf_service.errors import InvalidArgument

METADATA_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")


def describe(value: str, limit: int = 40) -> str:
    """A value quoted for an error message, never longer than ``limit`` characters."""
    return repr(value if len(value) <= limit else value[:limit] + "…")


@dataclass(frozen=True)
class MetadataLimits:
    """``limits.metadata_keys``, ``limits.metadata_value_chars``, ``limits.metadata_bytes``."""

    max_keys: int = 64
    max_value_chars: int = 8192
    max_bytes: int = 16384


def check_metadata(metadata: Metadata, limits: MetadataLimits, field: str = "metadata") -> None:
    """Refuse metadata with malformed keys or over a limit (INVALID_ARGUMENT naming the limit).

    A list value counts each element against ``limits.metadata_value_chars`` and all of them, one byte more
    each (so a million empty strings are no way around it), against ``limits.metadata_bytes``.
    """
    if len(metadata) > limits.max_keys:
        raise InvalidArgument(
            f"{field} has {len(metadata):,} keys; the limit is {limits.max_keys:,} (limits.metadata_keys)"
        )
    total = 0
    for key, value in metadata.items():
        if not METADATA_KEY.fullmatch(key):
            raise InvalidArgument(
                f"{field} key {describe(key)} must start with a letter or '_' and contain only "
                "letters, digits, '_', '.', '-' (max 128)"
            )
        total += len(key.encode("utf-8", "surrogatepass"))
        for item in value if isinstance(value, list) else [value]:
            if len(item) > limits.max_value_chars:
                raise InvalidArgument(
                    f"{field}[{key!r}] is {len(item):,} characters; the limit is {limits.max_value_chars:,} "
                    "(limits.metadata_value_chars)"
                )
            total += len(item.encode("utf-8", "surrogatepass")) + (1 if isinstance(value, list) else 0)
    if total > limits.max_bytes:
        raise InvalidArgument(
            f"{field} is {total:,} bytes; the limit is {limits.max_bytes:,} (limits.metadata_bytes)"
        )


def check_chunk_count(count: int, limit: int, document_id: str, *, estimated: bool = False) -> None:
    """Refuse a document that makes (or, ``estimated``, must make at least) more than ``limit`` chunks."""
    if count > limit:
        how = "at least " if estimated else ""
        raise LimitExceeded(
            f"document {describe(document_id, 80)} makes {how}{count:,} chunks; the limit is {limit:,} "
            "(limits.max_chunks_per_document)", setting="limits.max_chunks_per_document",
        )
