"""Which strings may be identifiers (document ids): any printable Unicode text within a byte limit.

Users name documents after files, URLs and headings: ``faq/design#why``, ``notes~1``, ``50% off?``,
``Übersicht 2026``, ``設計.md`` must all round-trip exactly. Refused are only characters that cannot be
shown or that change how text around them is shown: control characters (C0, C1, DEL), surrogates, line and
paragraph separators, and the bidirectional overrides and isolates used to make one string look like another
("Trojan Source"). An id must also have something visible in it (not only spaces).
"""

from __future__ import annotations

import unicodedata

MAX_ID_BYTES = 1024
# A request id names the call in every log line, the audit trail and error details, and comes back in the reply:
# both services refuse a longer one, and logs cut one to this length.
MAX_REQUEST_ID_CHARS = 256
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def id_problem(value: str, *, max_bytes: int = MAX_ID_BYTES) -> str | None:
    """What makes ``value`` unusable as an identifier, or None when it is fine."""
    if not value.strip():
        return "it is empty or only whitespace"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"it is {size:,} UTF-8 bytes, over the limit of {max_bytes:,}"
    for i, ch in enumerate(value):
        if unicodedata.category(ch) in _REFUSED_CATEGORIES or ch in _BIDI_CONTROLS:
            return f"character {i} is U+{ord(ch):04X} ({unicodedata.name(ch, 'a control character')}), not printable"
    return None


def printable_or(value: str, replacement: str = "_") -> str:
    """``value`` with every refused character replaced (for ids derived from file names)."""
    return "".join(replacement if (unicodedata.category(ch) in _REFUSED_CATEGORIES or ch in _BIDI_CONTROLS)
                   else ch for ch in value)
