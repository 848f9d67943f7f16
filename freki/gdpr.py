"""GDPR: erase a data owner's (or one document's) data everywhere Freki keeps it; export it portably.

Where a document's data lives, and how erasure reaches it:

* chunks (text, dense + sparse vectors, metadata) in the chunk collection — deleted by filter;
* its record (hash, source, metadata) in the registry collection — deleted;
* sentence vectors cached for chunking — dropped (``SentenceVectorCache.forget``);
* the folder watcher — if the file is still in a watched folder it would be indexed again at the next
  change or start, so the watcher keeps a hash-only marker and skips the unchanged file
  (``freki.watch_state``), and its in-memory status forgets the document.

Not touched, on purpose: the query-embedding LRU cache holds vectors of *queries* keyed by query text,
nothing derived from indexed documents, and it is bounded and in memory only.

Auditing: the gRPC audit interceptor (``freki.operations.AUDITED``) records who called DeleteDocument,
DeleteOwnerData and ExportOwnerData, when, and the counts; the export tool below records the file it
wrote. Neither stores content.

Export format (JSON lines, one object per line): a header ``{"type": "export", ...}``, then for each
document ``{"type": "document", "document": {...DocumentInfo}}`` followed by its chunks
``{"type": "chunk", "chunk": {...ExportedChunk}}``; vectors only when asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from google.protobuf.json_format import MessageToDict
from wolf.v1 import freki_pb2

from freki import convert
from freki.documents import DocumentRecord
from freki.engine import FrekiEngine
from freki.watch_state import FILE_NAME as STATE_FILE
from freki.watch_state import WatchState, erasure_marks
from wolf_service.audit import AuditLog

if TYPE_CHECKING:
    from freki.watch import Watcher

EXPORT_FORMAT = "wolfpack-freki-export/1"


@dataclass(frozen=True)
class Erasure:
    """What an erasure removed."""

    documents: int
    chunks: int


def erase_owner(engine: FrekiEngine, tenant: str, owner_id: str, *, watcher: Watcher | None = None) -> Erasure:
    """Erase every document of ``owner_id`` in ``tenant`` (see the module docstring for what that covers)."""
    with _paused(watcher):
        records = list(engine.registry.iterate(tenant, owner_id=owner_id))
        # Markers first: a crash after this leaves data to erase again, never erased data to resurrect.
        _keep_out_of_watch(engine, watcher, records)
        documents, chunks = engine.delete_owner(tenant, owner_id, records)
    return Erasure(documents=documents, chunks=chunks)


def erase_document(engine: FrekiEngine, tenant: str, document_id: str, *, watcher: Watcher | None = None) -> int:
    """Erase one document; returns its chunks deleted. Raises NotFound when it is not indexed."""
    with _paused(watcher):
        record = engine.get_document(tenant, document_id)
        _keep_out_of_watch(engine, watcher, [record])
        return engine.delete_document(tenant, document_id)


def _keep_out_of_watch(engine: FrekiEngine, watcher: Watcher | None, records: list[DocumentRecord]) -> None:
    # Without a running watcher (watching switched off for now) the markers still go to its state file,
    # so turning watching back on later does not re-index the erased files.
    if watcher is not None:
        watcher.forget(records)
    else:
        WatchState(Path(engine.settings.data_dir) / STATE_FILE).mark_erased(erasure_marks(records))


def _paused(watcher: Watcher | None) -> AbstractContextManager[None]:
    return watcher.paused() if watcher is not None else nullcontext()


def export_records(
    engine: FrekiEngine, tenant: str, owner_id: str, *, with_vectors: bool = False
) -> Iterator[freki_pb2.ExportRecord]:
    """A data owner's documents, each followed by its chunks, one document in memory at a time."""
    for record, chunks in engine.export_owner(tenant, owner_id, with_vectors=with_vectors):
        yield freki_pb2.ExportRecord(document=convert.document_info(record))
        for point in chunks:
            yield freki_pb2.ExportRecord(chunk=freki_pb2.ExportedChunk(
                chunk_id=point.id,
                document_id=record.document_id,
                chunk_index=int(point.payload.get("chunk_index", 0)),
                content=str(point.payload.get("content", "")),
                metadata={str(k): str(v) for k, v in (point.payload.get("metadata") or {}).items()},
                vector=list(point.dense or []),
            ))


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    documents: int
    chunks: int
    bytes_written: int


def write_jsonl(
    records: Iterable[freki_pb2.ExportRecord], out: IO[str], *, tenant: str, owner_id: str
) -> ExportSummary:
    """Write export records (from the gRPC stream or ``export_records``) as JSON lines to ``out``."""
    header = {"type": "export", "format": EXPORT_FORMAT, "tenant_id": tenant, "owner_id": owner_id,
              "exported_at": datetime.now(UTC).isoformat()}
    written = out.write(json.dumps(header) + "\n")
    documents = chunks = 0
    for record in records:
        kind = record.WhichOneof("record")
        if kind is None:
            continue
        body = MessageToDict(getattr(record, kind), preserving_proto_field_name=True)
        written += out.write(json.dumps({"type": kind, kind: body}, ensure_ascii=False) + "\n")
        documents += kind == "document"
        chunks += kind == "chunk"
    return ExportSummary(documents=documents, chunks=chunks, bytes_written=written)


def export_to_file(
    records: Iterable[freki_pb2.ExportRecord], path: Path, *, tenant: str, owner_id: str
) -> ExportSummary:
    """Write an export to ``path`` atomically: a failed stream leaves no file that looks complete."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.part")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # personal data: owner-only
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            summary = write_jsonl(records, out, tenant=tenant, owner_id=owner_id)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return summary


def read_jsonl(path: Path) -> Iterator[dict]:
    """The objects of an export file, header first."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


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
            stream = freki_pb2_grpc.FrekiServiceStub(channel).ExportOwnerData(
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


if __name__ == "__main__":
    sys.exit(main())
