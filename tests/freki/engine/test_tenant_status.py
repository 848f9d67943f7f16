"""What GetIndexStatus shows a key that is not the operator's: the disk's level, never its path or bytes, and
its own quarantined chunks, never another tenant's."""

from __future__ import annotations

from dataclasses import replace

from freki.engine.status import EngineStatus, tenant_view
from freki.store.disk import DiskState
from freki.store.integrity import QuarantinedChunk

MIB = 1024 * 1024
OURS = QuarantinedChunk(chunk_id="c1", collection="chunks", reason="checksum", tenant_id="a", document_id="d1")
QUARANTINED_TWO = "2 chunk(s) failed their integrity check and are quarantined (not served); see quarantined_chunks"


def status_on(disk: DiskState, *, ours: tuple[QuarantinedChunk, ...] = (OURS,), everywhere: int = 2) -> EngineStatus:
    return EngineStatus(document_count=1, chunk_count=2, embedding_model="m", embedding_dimension=3,
                        store_backend="edge", collection="c", disk=disk, quarantined=ours,
                        quarantined_count=everywhere)


FULL = DiskState(path="/srv/freki-data", free_bytes=300 * MIB, total_bytes=10_000 * MIB, level="refuse",
                 refuse_at=512 * MIB, warn_at=2048 * MIB)
OK = DiskState(path="/d", free_bytes=9_000 * MIB, total_bytes=10_000 * MIB, level="ok", refuse_at=1, warn_at=2)


def test_a_full_disk_is_said_by_its_level_alone_and_the_other_reasons_stay() -> None:
    operator, tenant = status_on(FULL), tenant_view(status_on(FULL))
    assert "/srv/freki-data" in operator.health[1][0] and "300" in operator.health[1][0]
    assert operator.health == ("degraded", (operator.health[1][0], QUARANTINED_TWO))
    assert tenant.health == ("degraded", ("writes refused: the data dir's disk is below the refuse level",
                                          QUARANTINED_TWO.replace("2", "1", 1)))
    assert tenant.disk == DiskState(path="", free_bytes=0, total_bytes=0, level="refuse", refuse_at=0, warn_at=0)


def test_another_tenants_quarantined_chunks_neither_show_nor_degrade_a_tenant() -> None:
    operator = status_on(OK, ours=(), everywhere=2)
    assert operator.health == ("degraded", (QUARANTINED_TWO,))
    assert tenant_view(operator).health == ("ok", ())


def test_a_store_that_does_not_answer_is_said_to_both() -> None:
    status = replace(status_on(OK), store_problem="the store does not answer: connection refused")
    assert status.health[0] == tenant_view(status).health[0] == "unavailable"
    assert tenant_view(status).health[1][0] == "the store does not answer: connection refused"
