"""Sentence splitting used by the chunker: abbreviations, numbers, quotes, lists, line breaks."""

from __future__ import annotations

import pytest

from freki.ingest.sentences import LINE, PARAGRAPH, SPACE, Unit, join_units, section_units, split_line


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("One here. Two there! Three? Four.", ["One here.", "Two there!", "Three?", "Four."]),
        ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
        ("Use a tool, e.g. Wolf, or i.e. Pack. Next.", ["Use a tool, e.g. Wolf, or i.e. Pack.", "Next."]),
        ("The U.S. Army arrived. Then rain.", ["The U.S. Army arrived.", "Then rain."]),
        ("Pi is 3.14 and e is 2.72. Both are irrational.", ["Pi is 3.14 and e is 2.72.", "Both are irrational."]),
        ("It cost $4.50 in 2020. Prices rose.", ["It cost $4.50 in 2020.", "Prices rose."]),
        ("Wait... and then it stopped. Odd.", ["Wait... and then it stopped.", "Odd."]),
        ("It faded away... The end came.", ["It faded away...", "The end came."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ("(See the appendix.) Results follow.", ["(See the appendix.)", "Results follow."]),
        ("J. R. R. Tolkien wrote it. Fans agree.", ["J. R. R. Tolkien wrote it.", "Fans agree."]),
        ("See Fig. 3 and Jan. 5 notes. Done.", ["See Fig. 3 and Jan. 5 notes.", "Done."]),
        ("version 1.2.3 is out. Upgrade.", ["version 1.2.3 is out.", "Upgrade."]),
        ("東京は大きい。大阪も大きい。", ["東京は大きい。", "大阪も大きい。"]),
        ("no terminal punctuation", ["no terminal punctuation"]),
    ],
)
def test_split_line(line: str, expected: list[str]) -> None:
    assert split_line(line) == expected


def test_list_items_and_line_breaks_are_boundaries() -> None:
    units = section_units("Steps:\n1. Install it. Then run.\n2. Configure\n- a bullet\n\nNext paragraph here.")
    assert units == [
        Unit("Steps:", ""),
        Unit("1. Install it.", LINE),
        Unit("Then run.", SPACE),
        Unit("2. Configure", LINE),
        Unit("- a bullet", LINE),
        Unit("Next paragraph here.", PARAGRAPH),
    ]


def test_indented_code_lines_are_kept_whole() -> None:
    units = section_units("Example:\n    x = f(1.5). y = 2\n    return x")
    assert [u.text for u in units] == ["Example:", "    x = f(1.5). y = 2", "    return x"]


def test_join_units_restores_the_section_text() -> None:
    text = "Title\n\nFirst. Second.\n- item one\n- item two\n\nLast one."
    assert join_units(section_units(text)) == text
