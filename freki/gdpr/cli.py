"""``python -m freki.gdpr export``: stream a data owner's export from a running Freki into a file, audited."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path

from wolf.v1 import freki_pb2

from freki.gdpr.export_file import export_to_file
from wolf_service.audit_log import AuditLog


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m freki.gdpr export --address H:P --tenant T --owner O --out FILE [--vectors]``."""
    parser = argparse.ArgumentParser(prog="python -m freki.gdpr", description="Export a data owner's data")
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="stream ExportOwnerData from a running Freki into a JSON-lines file")
    exp.add_argument("--address", default="127.0.0.1:50051")
    exp.add_argument("--tenant", default="")
    exp.add_argument("--owner", required=True)
    exp.add_argument("--out", required=True, type=Path)
    exp.add_argument("--vectors", action="store_true", help="include dense vectors")
    exp.add_argument("--api-key", default=os.environ.get("FREKI_API_KEY", ""))
    exp.add_argument("--audit-log", type=Path, help="also record the export in this audit log")
    exp.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    import grpc
    from wolf.v1 import freki_pb2_grpc

    request_id = f"export-{uuid.uuid4().hex[:12]}"
    metadata = [("authorization", f"Bearer {args.api_key}")] if args.api_key else []
    outcome, summary = "error", None
    try:
        with grpc.insecure_channel(args.address) as channel:
            stub = freki_pb2_grpc.FrekiServiceStub(channel)

            stream = stub.ExportOwnerData(
                freki_pb2.ExportOwnerDataRequest(request_id=request_id, tenant_id=args.tenant,
                                                 owner_id=args.owner, include_vectors=args.vectors),
                timeout=args.timeout, metadata=metadata,
            )
            summary = export_to_file(stream, args.out, tenant=args.tenant, owner_id=args.owner)
        outcome = "ok"
    except grpc.RpcError as exc:
        print(f"export failed: {exc.code().name}: {exc.details()}", file=sys.stderr)  # type: ignore[attr-defined]
        return 1
    finally:
        if args.audit_log:
            AuditLog(args.audit_log).record(
                actor=os.environ.get("USER", ""), action="gdpr.export_owner_file",
                target=f"tenant={args.tenant} owner={args.owner}", outcome=outcome, request_id=request_id,
                file=str(args.out), documents=summary.documents if summary else 0,
                chunks=summary.chunks if summary else 0,
            )
    print(f"exported {summary.documents} documents, {summary.chunks} chunks to {args.out}")
    return 0
