"""Lexical analyzers: how the text of one language becomes the terms BM25 indexes and queries.

Every analyzer splits text the same way (runs of letters/digits, identifiers joined by ``- _ . /`` kept whole
*and* as their parts) and differs in what it does to a word:

* ``english`` (name ``porter-crc32-v1``): Lucene's English stop words plus question words, Porter stems.
  Its terms are the ones every chunk indexed before analyzers had languages carries; a chunk without a
  recorded analyzer was analyzed by it.
* ``snowball:<lang>``: the language's Snowball stemmer (PyStemmer) and stop words from the ``stop-words``
  package (Snowball's own lists for the European languages). German also folds umlauts after stemming
  (``ä``→``a``, ``ß``→``ss``, as Lucene's GermanNormalizationFilter), so "Groesse"-less spellings of short
  words meet their stemmed forms, and may add the parts of a compound (``compounds.py``).
* ``cjk``: Chinese, Japanese and Korean are written without spaces: each run of CJK characters becomes
  its overlapping character bigrams (Lucene's CJKAnalyzer), a lone character itself; other words as
  ``plain``.
* ``plain``: a language without a stemmer (or a script no analyzer knows): lower-cased words, no stop
  words, no stems.

Text without any letter or digit (emoji, punctuation) has no terms. An analyzer's ``name`` is recorded with
each chunk and must change whenever its terms would (a re-index then keeps passage and query consistent).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from stop_words import StopWordError, get_stop_words

from freki.embed.stemming import algorithms, stem

# Words or identifiers: runs of letters/digits, optionally joined by - _ . / (a "compound").
_TOKEN_RE = re.compile(r"\w+(?:[-_./]\w+)*", re.UNICODE)
_PART_RE = re.compile(r"[-_./]")
_MAX_TOKEN_CHARS = 64
ENGLISH_ANALYZER = "porter-crc32-v1"

# English stop words: Lucene's classic list plus common question words, which carry no topic
# ("what causes X?" must not favour passages that say "what" a lot).
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t don isn aren wasn weren doesn didn won wouldn shouldn couldn
    """.split()
)

# ISO 639-1 code -> PyStemmer's Snowball algorithm.
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian", "nn": "norwegian",
    "fa": "persian", "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian",
    "st": "sesotho", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}
CJK_LANGUAGES = frozenset({"zh", "ja", "ko"})
_CJK_RUN_RE = re.compile(r"[\u2e80-\u2fff\u3040-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                         r"\uf900-\ufaff\U00020000-\U0002fa1f]+")
_GERMAN_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})


@dataclass(frozen=True)
class Analyzer:
    """Turns text into indexed terms for one language. ``name`` identifies the terms it produces."""

    name: str
    language: str
    word_terms: Callable[[str], list[str]] = field(repr=False, compare=False)
    stop_words: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def content_words(self, text: str) -> str:
        """``text`` lower-cased without this language's stop words (for analyzing it in another language)."""
        return " ".join(m.group() for m in _TOKEN_RE.finditer(text.lower()) if m.group() not in self.stop_words)

    def terms(self, text: str) -> list[str]:
        """Indexed terms of ``text`` in order: lower-cased, stop words removed, stemmed, identifiers expanded."""
        terms: list[str] = []
        for match in _TOKEN_RE.finditer(text.lower()):
            token = match.group()[:_MAX_TOKEN_CHARS].strip("_")
            if not token:
                continue
            if _PART_RE.search(token):
                # Keep the identifier whole ("e-1042", "os.path.join") and also index its parts.
                terms.append(token)
                for part in _PART_RE.split(token):
                    terms.extend(self.word_terms(part))
            else:
                terms.extend(self.word_terms(token))
        return terms


def _stemmed_words(stop: frozenset[str], algorithm: str,
                   finish: Callable[[str], Iterable[str]] | None = None) -> Callable[[str], list[str]]:
    def word_terms(word: str) -> list[str]:
        word = word.strip("_")
        if not word or word in stop:
            return []
        if len(word) == 1 and not word.isdigit():
            return []  # stray letters ("e.g." -> "e", "g") carry no meaning
        stemmed = stem(word, algorithm)
        return list(finish(stemmed)) if finish else [stemmed]
    return word_terms


def _plain_words(word: str) -> list[str]:
    word = word.strip("_")
    return [word] if word and (len(word) > 1 or word.isdigit()) else []


def _cjk_words(word: str) -> list[str]:
    out: list[str] = []
    last = 0
    for run in _CJK_RUN_RE.finditer(word):
        out.extend(_plain_words(word[last:run.start()]))
        chars = run.group()
        out.extend([chars] if len(chars) == 1 else [chars[i:i + 2] for i in range(len(chars) - 1)])
        last = run.end()
    out.extend(_plain_words(word[last:]))
    return out


def stop_words(language: str) -> frozenset[str]:
    """The ``stop-words`` package's list for ``language`` (lower-cased), empty when it has none."""
    try:
        return frozenset(w.lower() for w in get_stop_words(language))
    except StopWordError:
        return frozenset()


ENGLISH = Analyzer(ENGLISH_ANALYZER, "en", _stemmed_words(ENGLISH_STOP_WORDS, "porter"), ENGLISH_STOP_WORDS)
PLAIN = Analyzer("plain-v1", "", _plain_words)


@lru_cache(maxsize=64)
def analyzer_for(language: str, *, german_compounds: bool = False) -> Analyzer:
    """The analyzer of an ISO 639-1 ``language``: English for "en", Snowball where it has a stemmer,
    CJK bigrams for zh/ja/ko, else ``PLAIN`` (any other language, or "" for unknown)."""
    if language == "en":
        return ENGLISH
    if language in CJK_LANGUAGES:
        return Analyzer("cjk-bigram-v1", language, _cjk_words)
    algorithm = SNOWBALL.get(language)
    if algorithm is None or algorithm not in algorithms():
        return PLAIN
    stop = stop_words(language)
    if language == "de":
        stop = frozenset(w.translate(_GERMAN_FOLD) for w in stop) | stop
        if german_compounds:
            from freki.embed.compounds import german_compound_terms
            return Analyzer("snowball-german-fold-split-v1", language,
                            german_compound_terms(_stemmed_words(stop, algorithm, _fold)), stop)
        return Analyzer("snowball-german-fold-v1", language, _stemmed_words(stop, algorithm, _fold), stop)
    return Analyzer(f"snowball-{algorithm}-v1", language, _stemmed_words(stop, algorithm), stop)


def _fold(term: str) -> tuple[str]:
    return (term.translate(_GERMAN_FOLD),)
