"""Stems for the lexical sparse encoder: Snowball stemmers from PyStemmer, Porter (1980) for English.

Lexical search must match "indexing" with "indexed" and "indexes", or a query phrased in a different
inflection than the passage scores nothing. English uses Porter's algorithm, the stemmer most BM25
baselines use (Lucene's ``PorterStemFilter``, BEIR's Anserini runs); other languages use their Snowball
stemmer (``"german"``, ``"french"``, ...: ``Stemmer.algorithms()``). Stems are hashed into sparse-vector
indices that live in the index on disk, so a stemmer, once used for a language, must not change without a
re-index (the analyzer's name, recorded per chunk, says which one was used). PyStemmer runs Snowball's C code.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import Stemmer

_local = threading.local()  # a PyStemmer object must not be shared between threads


def _stemmer(algorithm: str) -> Stemmer.Stemmer:
    stemmers: dict[str, Stemmer.Stemmer] | None = getattr(_local, "stemmers", None)
    if stemmers is None:
        stemmers = _local.stemmers = {}
    stemmer = stemmers.get(algorithm)
    if stemmer is None:
        stemmer = stemmers[algorithm] = Stemmer.Stemmer(algorithm, 0)  # our lru_cache below is shared by threads
    return stemmer


def algorithms() -> frozenset[str]:
    """The Snowball algorithms PyStemmer offers (``"porter"``, ``"english"``, ``"german"``, ...)."""
    return frozenset(Stemmer.algorithms())


@lru_cache(maxsize=400_000)
def stem(word: str, algorithm: str = "porter") -> str:
    """The stem of a lower-case word; words of one or two letters are returned as they are."""
    if len(word) <= 2 or not word.isalpha():
        # Numbers, codes and mixed tokens ("e1234", "x86") are identifiers: stemming would only corrupt them.
        return word
    return str(_stemmer(algorithm).stemWord(word))
