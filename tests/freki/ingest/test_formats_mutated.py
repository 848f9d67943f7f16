"""Damaged files of every new format are refused with a DocumentError, never a parser crash: a seeded run
of random byte flips and truncations over each real sample (it found stdlib header-parser IndexErrors and
zip NotImplementedErrors that crashed the parsers)."""

from __future__ import annotations

import random

import pytest

from freki.ingest.parsing import DocumentError, parse_document
from tests.freki.ingest.test_detect_formats import SAMPLES


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_mutated_files_are_parsed_or_refused_cleanly(kind: str) -> None:
    rng = random.Random(f"formats-{kind}")
    sample = SAMPLES[kind]()
    for _ in range(150):
        data = bytearray(sample)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        try:
            parse_document(bytes(data), source=f"damaged.{kind}")
        except (DocumentError, RecursionError):
            pass  # RecursionError: the worker reports it as a corrupt document
