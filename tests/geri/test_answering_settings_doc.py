"""docs/geri.md's table of grounded-answer settings against the code: a caller tunes Geri from that table, so
every `answering.*` and `answer_cache.*` setting has a row whose default and range are the code's, and no
page names an `answering.*` setting that does not exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from annotated_types import Ge, Le
from pydantic import BaseModel

from geri.settings import AnswerCacheSettings, AnsweringSettings

ROOT = Path(__file__).resolve().parents[2]
BLOCKS: dict[str, type[BaseModel]] = {"answering": AnsweringSettings, "answer_cache": AnswerCacheSettings}
# A table row: | `answering.min_score` | 0.25 (0–1) | what it does |
# A setting named in prose: answering.min_score, not a file such as scripts/bench/answer_cache.py.
NAMED = re.compile(r"(?<![/\w])(answering|answer_cache)\.(\w+)\b(?!\.py)")
ROW = re.compile(r"^\| `(answering|answer_cache)\.(\w+)` \| ([^|(]+?)(?: \(([^)]*)\))? \|", re.M)


def table_rows() -> dict[str, tuple[str, str]]:
    """(default, range) as docs/geri.md writes them, by dotted setting name."""
    text = (ROOT / "docs" / "geri.md").read_text(encoding="utf-8")
    return {f"{block}.{name}": (default.strip(), bounds or "")
            for block, name, default, bounds in ROW.findall(text)}


def written(value: Any) -> str:
    """A default as the docs write it: 1024 → "1024", 900.0 → "900", True → "true", 0.25 → "0.25", "" → '""'."""
    if value == "":
        return '""'
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def bounds_of(model: type[BaseModel], name: str) -> tuple[float | None, float | None]:
    low = high = None
    for item in model.model_fields[name].metadata:
        if isinstance(item, Ge):
            low = item.ge
        elif isinstance(item, Le):
            high = item.le
    return low, high


@pytest.mark.parametrize("dotted", [f"{block}.{name}" for block, model in BLOCKS.items()
                                    for name in model.model_fields])
def test_every_setting_has_a_row_with_the_codes_default_and_range(dotted: str) -> None:
    rows = table_rows()
    assert dotted in rows, f"docs/geri.md's answering table has no row for {dotted}"
    block, name = dotted.split(".")
    model = BLOCKS[block]
    default, bounds = rows[dotted]
    assert default.replace(",", "") == written(model.model_fields[name].default), dotted
    low, high = bounds_of(model, name)
    if match := re.fullmatch(r"([\d.]+)–([\d.]+)", bounds):
        assert (float(match.group(1)), float(match.group(2))) == (low, high), dotted
    elif match := re.fullmatch(r"≥ ([\d.]+)", bounds):
        assert (float(match.group(1)), None) == (low, high), dotted


def test_no_page_names_an_answering_setting_that_does_not_exist() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {(page.name, m.group(1), m.group(2)) for page in pages
             for m in NAMED.finditer(page.read_text(encoding="utf-8"))}
    unknown = sorted((page, f"{block}.{name}") for page, block, name in named
                     if name not in BLOCKS[block].model_fields)
    assert not unknown, unknown
