"""The new formats parse inside the real parser sandbox (worker process, 1 GiB address-space cap), and their
refusals cross the process boundary with the setting they name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from freki.ingest.parsing import LimitExceeded, ParseLimits
from freki.ingest.sandbox import ParserSandbox, SandboxConfig
from tests.freki.ingest.office_files_support import build_xlsx
from tests.freki.ingest.test_detect_formats import SAMPLES


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ParserSandbox]:
    box = ParserSandbox(SandboxConfig(workers=1, parse=ParseLimits(spreadsheet_max_cells=1_000)))
    try:
        yield box
    finally:
        box.close()


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_every_format_parses_in_the_worker_under_its_memory_cap(sandbox: ParserSandbox, kind: str) -> None:
    document = sandbox.parse(SAMPLES[kind](), source="upload")
    assert document.content_type == kind and document.text.strip()
    if kind in ("xlsx", "ods"):
        assert document.sections[0].sheet == "Sniffed"
    if kind == "pptx":
        assert document.sections[0].slide == 1


def test_a_realistic_workbook_parses_and_an_oversized_one_is_refused_naming_the_limit(sandbox: ParserSandbox) -> None:
    fits = build_xlsx({"Data": [[f"r{r}c{c}" for c in range(10)] for r in range(100)]})
    assert "r99c9" in sandbox.parse(fits, source="fits.xlsx").text
    too_big = build_xlsx({"Data": [[f"r{r}c{c}" for c in range(10)] for r in range(101)]})
    with pytest.raises(LimitExceeded, match="limits.spreadsheet_max_cells") as caught:
        sandbox.parse(too_big, source="big.xlsx")
    assert caught.value.setting == "limits.spreadsheet_max_cells"
    assert sandbox.killed == 0, "a refusal is an answer, not a dead worker"
