"""Two Geri replicas behind one address keep a conversation whole (sessions.store "sqlite" on one file).

Odin round-robins over both (``load_balancing: round_robin``), so consecutive turns land on different
replicas; each must see every earlier turn. With the memory store the same conversation splits in two
(the control below), which is why docs/scaling.md asks for the shared store or sticky sessions.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from odin_client import OdinClient, OdinSettings
from tests.geri.geri_servers_support import embedded_backend, geri_settings, start_geri  # noqa: F401

pytestmark = pytest.mark.integration


def conversation(backend, sessions: dict[str, object]) -> list[int]:  # type: ignore[no-untyped-def]
    """Three turns through two replicas; the user turns each replica then holds."""
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(start_geri(geri_settings(sessions=sessions), backend)) for _ in (0, 1)]
        target = "ipv4:" + ",".join(h.address for h in handles)
        with OdinClient(OdinSettings(geri_target=target, load_balancing="round_robin")) as odin:
            for question in ("My dog is called Rex.", "He is three years old.", "What is his name?"):
                odin.generate(question, session_id="rex", owner_id="ann", max_tokens=4)
        counts = []
        for handle in handles:
            with OdinClient(OdinSettings(geri_target=handle.address)) as one:
                session = one.get_session("rex")
                counts.append(sum(t.role == "user" for t in session.turns) if session else 0)
        return counts


def test_a_conversation_continues_on_either_replica_with_the_shared_store(
    tmp_path: Path, embedded_backend,  # type: ignore[no-untyped-def]  # noqa: F811
) -> None:
    assert conversation(embedded_backend, {"store": "sqlite", "path": tmp_path / "sessions.sqlite"}) == [3, 3]


def test_with_per_replica_memory_the_conversation_splits(embedded_backend) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    counts = conversation(embedded_backend, {"store": "memory"})
    assert sum(counts) == 3 and max(counts) < 3
