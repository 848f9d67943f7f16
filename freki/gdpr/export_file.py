"""A data owner's export as a JSON-lines file (format in ``freki.gdpr``), from ExportOwnerData records."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from google.protobuf.json_format import MessageToDict
from wolf.v1 import freki_pb2

EXPORT_FORMAT = "wolfpack-freki-export/1"


@dataclass(frozen=True)
class ExportSummary:
    """What an export wrote."""

    documents: int
    chunks: int
    bytes_written: int


def write_jsonl(
    records: Iterable[freki_pb2.ExportRecord], out: IO[str], *, tenant: str, owner_id: str,
) -> ExportSummary:
    """Write export records (from the gRPC stream or ``freki.api.convert.export_records``) as JSON lines to ``out``,
    one line per record in the order given: a document, its outgoing links, its chunks."""
    header = {"type": "export", "format": EXPORT_FORMAT, "tenant_id": tenant, "owner_id": owner_id,
              "exported_at": datetime.now(UTC).isoformat()}
    written = out.write(json.dumps(header) + "\n")
    documents = chunks = 0
    for record in records:
        kind = record.WhichOneof("record")
        if kind is None:  # a record kind newer than this tool: skipped, not guessed at
            continue
        body = MessageToDict(getattr(record, kind), preserving_proto_field_name=True)
        if kind == "links":  # an empty repeated field is left out of the JSON; the format lists it always
            body.setdefault("outgoing", [])
        written += out.write(json.dumps({"type": kind, kind: body}, ensure_ascii=False) + "\n")
        documents += kind == "document"
        chunks += kind == "chunk"
    return ExportSummary(documents=documents, chunks=chunks, bytes_written=written)


def export_to_file(
    records: Iterable[freki_pb2.ExportRecord], path: Path, *, tenant: str, owner_id: str,
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
