"""TLS and mTLS on a real Freki with openssl-made certificates, and the container health probe."""

from __future__ import annotations

import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from wolf.v1 import freki_pb2

from tests.wolf_service.conftest import freki_stub
from wolf_service.healthcheck import check
from wolf_service.tls import channel_credentials

pytestmark = pytest.mark.integration


def status_call(channel: grpc.Channel) -> freki_pb2.IndexStatus:
    return freki_stub(channel).GetIndexStatus(freki_pb2.GetIndexStatusRequest(), timeout=10)


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wolf_service.healthcheck", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def test_tls_server_refuses_plaintext_and_serves_tls(start_freki, certs) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"tls": {"cert_file": certs["server"], "key_file": certs["server.key"]}})
    address = f"localhost:{handle.port}"
    with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as err:
        status_call(channel)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    with grpc.secure_channel(address, channel_credentials(certs["ca"])) as channel:
        assert status_call(channel).embedding_model
    # A client that trusts another CA refuses the server.
    with grpc.secure_channel(address, channel_credentials(certs["rogue"])) as channel, \
            pytest.raises(grpc.RpcError):
        status_call(channel)
    assert check(address, "wolf.v1.FrekiService", ca=certs["ca"]) == "SERVING"


def test_mtls_requires_a_client_certificate_from_the_ca(start_freki, certs) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki(security={"tls": {
        "cert_file": certs["server"], "key_file": certs["server.key"], "client_ca_file": certs["ca"]}})
    address = f"localhost:{handle.port}"
    with grpc.secure_channel(address, channel_credentials(certs["ca"])) as channel, \
            pytest.raises(grpc.RpcError) as err:
        status_call(channel)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    with grpc.secure_channel(address, channel_credentials(certs["ca"], certs["client"], certs["client.key"])) \
            as channel:
        assert status_call(channel).embedding_dimension == 384
    # Health probes pass the client certificate too.
    ok = probe(address, "--service", "wolf.v1.FrekiService", "--ca", str(certs["ca"]),
               "--cert", str(certs["client"]), "--key", str(certs["client.key"]))
    assert ok.returncode == 0 and ok.stdout.strip() == "SERVING", ok.stderr


def test_tls_settings_must_be_complete(tmp_path, certs) -> None:  # type: ignore[no-untyped-def]
    from tests.wolf_service.conftest import ops_settings

    with pytest.raises(ValueError, match="both cert_file and key_file"):
        ops_settings(tmp_path, security={"tls": {"cert_file": certs["server"]}})
    with pytest.raises(ValueError, match="client_ca_file"):
        ops_settings(tmp_path, security={"tls": {"client_ca_file": certs["ca"]}})


def test_health_probe_exit_codes_follow_the_server(start_freki) -> None:  # type: ignore[no-untyped-def]
    handle = start_freki()
    ok = probe(handle.address, "--service", "wolf.v1.FrekiService")
    assert ok.returncode == 0 and ok.stdout.strip() == "SERVING", ok.stderr
    unknown = probe(handle.address, "--service", "wolf.v1.NoSuchService")
    assert unknown.returncode == 1 and "NOT_FOUND" in unknown.stderr
    # Draining: the server reports NOT_SERVING before it stops.
    handle.set_serving(False)
    draining = probe(handle.address)
    assert draining.returncode == 1 and draining.stdout.strip() == "NOT_SERVING"
    with grpc.insecure_channel(handle.address) as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
    handle.stop(0.5)
    gone = probe(handle.address, "--timeout", "2")
    assert gone.returncode == 1 and "UNAVAILABLE" in gone.stderr
