"""What GetIndexStatus shows a key that is not the operator's: the disk's level, never its path or bytes."""

from __future__ import annotations

from freki.engine.health import health
from freki.engine.status import EngineStatus, tenant_view
from freki.store.disk import DiskState

MIB = 1024 * 1024


def status_on(disk: DiskState) -> EngineStatus:
    return EngineStatus(document_count=1, chunk_count=2, embedding_model="m", embedding_dimension=3,
                        store_backend="edge", collection="c", disk=disk, health=health(disk, quarantined=2))


def test_a_full_disk_is_said_by_its_level_alone_and_the_other_reasons_stay() -> None:
    full = DiskState(path="/srv/freki-data", free_bytes=300 * MIB, total_bytes=10_000 * MIB, level="refuse",
                     refuse_at=512 * MIB, warn_at=2048 * MIB)
    operator, tenant = status_on(full), tenant_view(status_on(full))
    assert "/srv/freki-data" in operator.health[1][0] and "300" in operator.health[1][0]
    assert tenant.health == ("degraded", ("writes refused: the data dir's disk is below the refuse level",
                                          operator.health[1][1]))
    assert tenant.disk == DiskState(path="", free_bytes=0, total_bytes=0, level="refuse", refuse_at=0, warn_at=0)


def test_a_healthy_disk_adds_no_reason() -> None:
    ok = DiskState(path="/d", free_bytes=9_000 * MIB, total_bytes=10_000 * MIB, level="ok", refuse_at=1, warn_at=2)
    quarantined = "2 chunk(s) failed their integrity check and are quarantined (not served); see quarantined_chunks"
    assert tenant_view(status_on(ok)).health == status_on(ok).health == ("degraded", (quarantined,))
