"""grpc.health.v1 follows the store on a real Freki: NOT_SERVING while its data dir is gone, SERVING again once
it is back, and GetIndexStatus names the problem."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import freki_pb2, freki_pb2_grpc

from freki.api.server import build_server
from freki.engine import FrekiEngine
from odin_client import OdinClient, OdinSettings
from tests.freki.conftest import freki_settings

pytestmark = pytest.mark.integration
SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING


def wait_for(health: health_pb2_grpc.HealthStub, wanted: int, service: str = "") -> None:
    """Until the health service reports ``wanted`` (the probe runs every 0.1 s; 30 s is ample on a busy box)."""
    for _ in range(300):
        if health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status == wanted:
            return
        time.sleep(0.1)
    raise AssertionError(f"health never became {wanted}")


def test_health_is_not_serving_while_the_data_dir_is_gone(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    settings = freki_settings(data, disk={"store_probe_interval_s": 0.1})
    engine = FrekiEngine(settings, embedder=embedder)
    handle, engine = build_server(settings, engine=engine)
    moved = tmp_path / "moved"
    try:
        with grpc.insecure_channel(handle.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            freki = freki_pb2_grpc.FrekiServiceStub(channel)
            wait_for(health, SERVING)
            assert freki.GetIndexStatus(freki_pb2.GetIndexStatusRequest()).health == "ok"
            data.rename(moved)
            wait_for(health, NOT_SERVING)
            wait_for(health, NOT_SERVING, "wolf.v1.FrekiService")
            status = freki.GetIndexStatus(freki_pb2.GetIndexStatusRequest())
            assert status.health == "unavailable" and "data dir" in status.health_reasons[0]
            with OdinClient(OdinSettings(freki_target=handle.address)) as odin:  # `odin status`'s one view
                seen = odin.status()
            assert seen.health == "unavailable" and seen.health_reasons and seen.chunk_count == 0
            moved.rename(data)
            wait_for(health, SERVING)
            assert freki.GetIndexStatus(freki_pb2.GetIndexStatusRequest()).health == "ok"
    finally:
        if moved.exists():
            moved.rename(data)
        handle.stop(1.0)
        engine.close()
