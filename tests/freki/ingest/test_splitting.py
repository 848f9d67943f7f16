"""Cutting oversize text to fit: pieces fit, nothing is lost, huge input stays cheap and stops when told."""

from __future__ import annotations

import pytest

from freki.ingest.splitting import split_to_fit
from wolf_service.errors import DeadlineExceeded


def at_most(chars: int, seen: list[int]):  # type: ignore[no-untyped-def]
    def fits(text: str) -> bool:
        seen.append(len(text))
        return len(text) <= chars
    return fits


@pytest.mark.parametrize("text", ["word " * 1000, "x" * 100_003, "short", "a b " + "y" * 5000 + " c d"])
def test_pieces_fit_and_keep_every_word_and_character(text: str) -> None:
    seen: list[int] = []
    pieces = split_to_fit(text, at_most(700, seen), max_words=180)
    assert pieces and all(len(p) <= 700 for p in pieces)
    assert "".join(pieces).replace(" ", "") == text.replace(" ", "")


def test_a_huge_word_is_never_measured_whole() -> None:
    seen: list[int] = []
    pieces = split_to_fit("a" * 4_900_000, at_most(700, seen), max_words=180)
    assert len(pieces) == 7000 and max(seen) <= 256 * 180


def test_the_check_stops_the_work_between_pieces() -> None:
    calls = 0

    def check(stage: str) -> None:
        nonlocal calls
        calls += 1
        if calls > 5:
            raise DeadlineExceeded(f"the deadline passed during {stage}; nothing was written")

    with pytest.raises(DeadlineExceeded, match="oversize word"):
        split_to_fit("a" * 4_900_000, at_most(700, []), max_words=180, check=check)
