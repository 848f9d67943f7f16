"""The answer text read from a grounded reply's JSON as it is written, piece by piece."""

from __future__ import annotations

import json

import pytest

from geri.answering.answer_text import AnswerTextExtractor, DraftText

REPLY = {"answered": True, "citations": [{"source": 1, "sentence": 2}],
         "answer": 'Port "9427" \\ café 😀\n[1]', "summary": "answer: not this", "key_details": ["answer"],
         "confidence": 0.8}


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_the_answer_string_is_decoded_whatever_the_piece_boundaries(size: int, ascii_only: bool) -> None:
    """Escapes (\\", \\\\, \\n, \\u00e9 and a surrogate pair) split across pieces decode as one character."""
    text = json.dumps(REPLY, ensure_ascii=ascii_only, separators=(",", ":"))
    extractor = AnswerTextExtractor()
    got = "".join(extractor.feed(p) for p in pieces(text, size))
    assert got == REPLY["answer"] and extractor.done


def test_only_the_top_level_answer_counts() -> None:
    """A nested "answer" key, a string value "answer", and text after the answer closed are not the answer."""
    text = '{"citations":[{"answer":"nested"}],"summary":"answer","answer":"yes","key_details":["answer"]}'
    assert AnswerTextExtractor().feed(text) == "yes"
    assert AnswerTextExtractor().feed('{"answered":false,"reason":"the answer is not there"}') == ""


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert AnswerTextExtractor().feed('{"answer":"a\\ud83db\\udc00"}') == "a\ufffdb\ufffd"


def test_drafts_show_the_answer_trimmed_and_the_check_adds_its_markers() -> None:
    draft = DraftText()
    shown = [draft.feed(p) for p in pieces('{"answered":true,"citations":[],"answer":"  Port 9427.  ","x":1}', 4)]
    assert "".join(shown) == "Port 9427."  # leading and trailing blanks held back, as the check strips them
    assert draft.finish("Port 9427. [1]") == (" [1]", False)


def test_an_answer_the_check_replaced_is_revised() -> None:
    draft = DraftText()
    draft.feed('{"answer":"Tuesdays in Oslo"}')
    assert draft.finish("The relay listens on port 9427. [1]") == ("", True)
    assert draft.finish("") == ("", True)  # withdrawn (abstention)


def test_after_a_reset_nothing_more_is_shown() -> None:
    draft = DraftText()
    assert draft.feed('{"answer":"Po') == "Po"
    draft.reset()
    assert draft.feed('rt"}{"answer":"again"}') == ""
    assert draft.finish("Port 9427. [1]") == ("rt 9427. [1]", False)
