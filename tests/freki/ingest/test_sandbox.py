"""The parser sandbox: a worker over its time or memory limit, or past the caller's deadline, is killed; the
caller gets an error naming the limit; the next document gets a fresh worker."""

from __future__ import annotations

import time

import pytest

from freki.ingest.deadline import Deadline
from freki.ingest.parsing import LimitExceeded, ParseLimits
from freki.ingest.sandbox import ParserSandbox, SandboxConfig
from tests.freki.api.hostile_documents_support import docx
from wolf_service.errors import DeadlineExceeded

SLOW = "\n\n".join(f"* item *{i}* with `code {i}` and [a link](http://x/{i}) **bold {i}**" for i in range(200_000))


@pytest.fixture
def sandbox():  # type: ignore[no-untyped-def]
    made = ParserSandbox(SandboxConfig(timeout_s=0.5, memory_mb=300, workers=1,
                                       parse=ParseLimits(zip_max_inflated_bytes=2**31, zip_max_ratio=10**6)))
    try:
        yield made
    finally:
        made.close()


def test_a_parse_over_the_time_limit_is_killed_and_the_next_one_works(sandbox: ParserSandbox) -> None:
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match=r"longer than 0.5 s.*limits.parse_timeout_s"):
        sandbox.parse(SLOW, source="slow.md")
    assert time.monotonic() - started < 3 and sandbox.killed == 1
    assert sandbox.parse("# Fine\n\nok", source="next.md").text == "Fine\n\nok"


def test_a_parse_over_the_memory_limit_names_it() -> None:
    sandbox = ParserSandbox(SandboxConfig(timeout_s=30, memory_mb=300, workers=1,
                                          parse=ParseLimits(zip_max_inflated_bytes=2**31, zip_max_ratio=10**6)))
    try:
        with pytest.raises(LimitExceeded, match=r"300 MiB.*limits.parse_memory_mb"):
            sandbox.parse(docx(bomb_mib=200), source="bomb.docx")
        assert sandbox.parse(b"plain text", source="next.txt").text == "plain text"
    finally:
        sandbox.close()


def test_the_callers_deadline_kills_the_worker(sandbox: ParserSandbox) -> None:
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded, match="during parsing"):
        sandbox.parse(SLOW, source="slow.md", deadline=Deadline(0.2))
    assert time.monotonic() - started < 0.45, "stopped at the deadline, not at the time limit"
    assert sandbox.killed == 1
