"""Selected document metadata in the context blocks the model sees (seeds 002 and 004: title, type, tags, breed).

Metadata is the document author's text, not the operator's: it may carry instructions ("ignore the question
and ..."), fake block headers (``[Document 9: ...]``) or line breaks that would start a line of its own in the
prompt. So only the keys the operator lists in ``context_metadata.keys`` are shown, in that order, on one
``Metadata:`` line per document, each value:

* with its whitespace (newlines, tabs, Unicode line and paragraph separators) collapsed to one space, and
  control and format characters (bidirectional overrides, zero-width joiners) removed;
* with square brackets turned into parentheses, so no value can read as a document header or a citation;
* cut to ``max_value_chars`` (``…`` marks the cut), and the whole line to ``max_chars``;
* JSON-quoted (``title: "Golden Retriever"``), so a quote inside a value cannot end it.

The system prompt keeps saying that the documents are context, not instructions; this only makes sure the
metadata cannot leave the line it is given.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator

_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}$")
_BRACKETS = str.maketrans("[]", "()")
_INVISIBLE = ("Cc", "Cf", "Cs", "Co", "Cn")  # control, format (bidi overrides, zero-width), unassigned


class ContextMetadataSettings(BaseModel):
    """Which metadata of each context document the prompt shows (``geri/context_metadata.py``)."""

    model_config = ConfigDict(extra="forbid")

    keys: list[str] = Field(default_factory=list, max_length=16, description=(
        "Metadata keys shown per context document, in this order (e.g. title, document_type, tags, breed); "
        "empty shows none."))
    max_value_chars: int = Field(default=120, ge=8, le=1000, description="Characters of one shown value.")
    max_chars: int = Field(default=400, ge=16, le=4000, description="Characters of a document's Metadata line.")

    @field_validator("keys")
    @classmethod
    def _plain_keys(cls, keys: list[str]) -> list[str]:
        bad = [k for k in keys if not _KEY.match(k)]
        if bad:
            raise ValueError(f"context_metadata.keys are metadata names of letters, digits, '_', '.', '-' "
                             f"(at most 64 characters); not {bad[:3]}")
        if len(set(keys)) != len(keys):
            raise ValueError(f"context_metadata.keys lists a key twice: {keys}")
        return keys


def one_line(value: str) -> str:
    """``value`` with whitespace runs (line breaks included) as one space, without control/format characters."""
    kept = "".join(ch for ch in value if ch.isspace() or unicodedata.category(ch) not in _INVISIBLE)
    return " ".join(kept.split())


def clean_value(value: str, max_chars: int) -> str:
    """``value`` on one line without control/format characters or brackets, at most ``max_chars`` long."""
    text = one_line(value).translate(_BRACKETS)
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def shown_metadata(metadata: Mapping[str, str], settings: ContextMetadataSettings) -> tuple[tuple[str, str], ...]:
    """The configured keys present in ``metadata`` with non-blank values, cleaned, in the settings' order."""
    pairs = []
    for key in settings.keys:
        value = clean_value(metadata.get(key, ""), settings.max_value_chars)
        if value:
            pairs.append((key, value))
    return tuple(pairs)


def metadata_line(pairs: tuple[tuple[str, str], ...], max_chars: int) -> str:
    """``Metadata: title: "…"; tags: "…"``, whole entries only, at most ``max_chars`` after the label."""
    shown: list[str] = []
    used = 0
    for key, value in pairs:
        entry = f"{key}: {json.dumps(value, ensure_ascii=False)}"
        if used + len(entry) > max_chars:
            break
        shown.append(entry)
        used += len(entry) + 2
    return f"Metadata: {'; '.join(shown)}" if shown else ""
