"""Unit tests: reasoning split (``<think>`` tags, also split across chunks) and stop sequences."""

from __future__ import annotations

import pytest

from geri.backends.stop_strings import StopScanner
from geri.reasoning import ThinkSplitter, split_thinking

OUTPUT = "<think>The user asks for a port.\nIt is 50051.</think>\n\nThe port is 50051."


def run_chunks(chunks: list[str]) -> tuple[str, str, list[str]]:
    splitter = ThinkSplitter()
    pieces = [p for c in chunks for p in splitter.feed(c)] + splitter.flush()
    text = "".join(p.content for p in pieces if p.kind == "text")
    thinking = "".join(p.content for p in pieces if p.kind == "thinking")
    return text, thinking, [p.kind for p in pieces]


def test_split_whole_output() -> None:
    assert split_thinking(OUTPUT) == ("The port is 50051.", "The user asks for a port.\nIt is 50051.")


def test_no_tags_is_all_text() -> None:
    assert split_thinking("Just an answer <b>bold</b> < 3") == ("Just an answer <b>bold</b> < 3", "")


@pytest.mark.parametrize("cut", range(1, len(OUTPUT)))
def test_every_two_chunk_split_gives_the_same_result(cut: int) -> None:
    text, thinking, _ = run_chunks([OUTPUT[:cut], OUTPUT[cut:]])
    assert (text, thinking) == split_thinking(OUTPUT)


def test_one_character_chunks() -> None:
    text, thinking, kinds = run_chunks(list(OUTPUT))
    assert (text, thinking) == split_thinking(OUTPUT)
    # Thinking is released while it streams (piece by piece, not only at the end), then the answer.
    assert kinds.count("thinking") > 10
    assert kinds.index("text") > max(i for i, k in enumerate(kinds) if k == "thinking")


def test_partial_tag_is_held_back_until_decided() -> None:
    splitter = ThinkSplitter()
    released = splitter.feed("Hello <thi")
    assert "".join(p.content for p in released) == "Hello "
    released = splitter.feed("s is not a tag")
    assert "".join(p.content for p in released) == "<this is not a tag"


def test_unterminated_think_stays_thinking() -> None:
    # A model cut off by max_tokens while still reasoning has produced no answer yet.
    assert split_thinking("<think>still reasoning about") == ("", "still reasoning about")


def test_unfinished_tag_at_end_is_text() -> None:
    assert split_thinking("answer <thin") == ("answer <thin", "")


def test_text_before_and_after_multiple_blocks() -> None:
    assert split_thinking("A<think>x</think>B<think>y</think> C") == ("AB C", "xy")


@pytest.mark.parametrize(
    ("chunks", "expected", "stopped"),
    [
        (["Hello wor", "ld. END more"], "Hello world. ", True),
        (["Hello E", "N", "D"], "Hello ", True),
        (["Hello E", "nd"], "Hello End", False),
        (["no stop here"], "no stop here", False),
    ],
)
def test_stop_scanner(chunks: list[str], expected: str, stopped: bool) -> None:
    scanner = StopScanner(["END", "\n\n\n"])
    out, hit = "", False
    for chunk in chunks:
        text, hit = scanner.feed(chunk)
        out += text
        if hit:
            break
    if not hit:
        out += scanner.flush()
    assert (out, hit) == (expected, stopped)


def test_stop_scanner_without_stops_passes_through() -> None:
    assert StopScanner([]).feed("END") == ("END", False)
