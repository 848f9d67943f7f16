"""Language tags as documents and callers write them, reduced to the ISO 639-1 code every service's
language-dependent rules use (Freki's analyzers, Geri's answer gate and scorers)."""

from __future__ import annotations

import re

_TAG_RE = re.compile(r"^([a-zA-Z]{2,3})(?:[-_].*)?$")

# ISO 639-2/3 codes of the languages with an analyzer, as DOCX properties and some tools write them.
_THREE_LETTER = {
    "eng": "en", "deu": "de", "ger": "de", "fra": "fr", "fre": "fr", "spa": "es", "ita": "it", "nld": "nl",
    "dut": "nl", "por": "pt", "rus": "ru", "pol": "pl", "swe": "sv", "dan": "da", "nor": "no", "nob": "nb",
    "fin": "fi", "tur": "tr", "ara": "ar", "ces": "cs", "cze": "cs", "hun": "hu", "ron": "ro", "rum": "ro",
    "ell": "el", "gre": "el", "zho": "zh", "chi": "zh", "jpn": "ja", "kor": "ko",
}


def normalize_language(tag: object) -> str:
    """The lower-case ISO 639-1 code of a BCP-47 tag ("de-DE" -> "de", "deu" -> "de"), "" when ``tag`` is
    not one."""
    if not isinstance(tag, str):
        return ""
    match = _TAG_RE.match(tag.strip())
    code = match.group(1).lower() if match else ""
    return _THREE_LETTER.get(code, code)
