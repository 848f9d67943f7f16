"""Container health probe: exit 0 when a gRPC server reports SERVING, 1 otherwise.

Used by docker-compose ``healthcheck`` (no extra binary needed in the image)::

    python -m wolf_service.healthcheck 127.0.0.1:50051 --service wolf.v1.FrekiService

With TLS, pass ``--ca`` (and ``--cert``/``--key`` when the server requires client
certificates). Health checks never need an API key.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from wolf_service.tls import channel_credentials


def check(
    address: str, service: str = "", *, timeout_s: float = 3.0, ca: Path | None = None,
    cert: Path | None = None, key: Path | None = None, tls: bool = False, server_name: str | None = None,
) -> str:
    """Return the serving status name (``SERVING``, ``NOT_SERVING``…) of ``service`` at ``address``.

    Raises:
        grpc.RpcError: the server is unreachable or does not know ``service``.
    """
    options = [("grpc.ssl_target_name_override", server_name)] if server_name else []
    if tls or ca or cert:
        channel = grpc.secure_channel(address, channel_credentials(ca, cert, key), options=options)
    else:
        channel = grpc.insecure_channel(address)
    with channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s)
    return str(health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; prints the status and exits 0 only when SERVING."""
    parser = argparse.ArgumentParser(prog="python -m wolf_service.healthcheck", description=__doc__.split("\n")[0])
    parser.add_argument("address", help="host:port of the gRPC server")
    parser.add_argument("--service", default="", help="service name; empty = the whole server")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds")
    parser.add_argument("--tls", action="store_true", help="use TLS with the system roots")
    parser.add_argument("--ca", type=Path, help="CA file that signed the server certificate (implies TLS)")
    parser.add_argument("--cert", type=Path, help="client certificate (mTLS)")
    parser.add_argument("--key", type=Path, help="client key (mTLS)")
    parser.add_argument("--server-name", help="expected name in the server certificate, if not the host")
    args = parser.parse_args(argv)
    try:
        status = check(args.address, args.service, timeout_s=args.timeout, ca=args.ca, cert=args.cert,
                       key=args.key, tls=args.tls, server_name=args.server_name)
    except grpc.RpcError as exc:
        print(f"UNHEALTHY: {exc.code().name}: {exc.details()}", file=sys.stderr)  # type: ignore[attr-defined]
        return 1
    except ValueError as exc:  # unreadable certificate files
        print(f"UNHEALTHY: {exc}", file=sys.stderr)
        return 2
    print(status)
    return 0 if status == "SERVING" else 1


if __name__ == "__main__":
    sys.exit(main())
