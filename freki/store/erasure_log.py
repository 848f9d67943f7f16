"""The erasure log: which key ids (document generations) an erasure destroyed, kept so a restore can destroy
them again.

A backup taken before an erasure still holds the erased owner's keys in its copy of ``keys.sqlite`` and their
plain fields (ids, metadata, vectors) in its copy of the engine's files. The key store forgets nothing it was
told to destroy only if that is written down somewhere the restore reads: this append-only JSON-lines file.
Each line is one erasure: when, why (``owner``, ``document``, ``retention``), tenant, owner or document, the
key ids it destroyed (one per generation, no key material) and the watch-state marks (file hashes) that keep
the watcher from indexing the erased files again. ``freki restore`` re-applies every entry
(``freki.backup.reapply``).

An entry is appended and fsynced *before* the erasure destroys anything (under the engine's write lock for an
owner, the document's lock for a document, so the key ids listed are exactly those destroyed): a crash in
between leaves an entry for an erasure that did not finish, which the retried erasure completes; never an
erasure without its entry. Writers in several processes serialise on an ``flock`` of the file itself.

Keep the file outside the data dir (``gdpr.erasure_log``), next to the backups: a restore after losing the
data dir needs it, and it holds pseudonymous ids only, never content.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from freki.store.errors import StoreError

FILE_NAME = "erasures.jsonl"


@dataclass(frozen=True)
class ErasureEntry:
    """One erasure, as the log keeps it."""

    kind: str  # "owner", "document" or "retention"
    tenant: str
    key_ids: list[str]
    owner_id: str = ""
    document_ids: list[str] = field(default_factory=list)
    watch_marks: list[tuple[str, str]] = field(default_factory=list)  # (tenant, file sha256)
    at: str = ""  # ISO 8601, UTC


class ErasureLog:
    """Append-only, fsynced, shared by processes; see the module docstring."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def append(self, entry: ErasureEntry) -> None:
        """Write one entry durably (the file is created mode 0600)."""
        stamped = asdict(entry) | {"at": entry.at or datetime.now(UTC).isoformat()}
        line = (json.dumps(stamped, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)  # read: is the last line whole?
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size and not self._ends_with_newline(fd):
                os.write(fd, b"\n")  # a torn last line (a killed writer) stays apart from this one
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[ErasureEntry]:
        """Every entry, oldest first; a torn last line (a writer killed mid-write) is skipped, a corrupt line
        elsewhere is an error naming the line (a restore must not silently skip an erasure)."""
        if not self.path.exists():
            return
        lines = self.path.read_bytes().split(b"\n")
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
                yield ErasureEntry(
                    kind=str(data["kind"]), tenant=str(data["tenant"]), key_ids=[str(k) for k in data["key_ids"]],
                    owner_id=str(data.get("owner_id", "")), document_ids=[str(d) for d in data.get("document_ids", [])],
                    watch_marks=[(str(t), str(h)) for t, h in data.get("watch_marks", [])], at=str(data.get("at", "")))
            except (ValueError, KeyError, TypeError) as exc:
                if number == len(lines) or (number == len(lines) - 1 and not lines[-1]):
                    continue  # the torn last line of a killed writer: its erasure had not started
                raise StoreError(f"erasure log {self.path}, line {number}, is not a valid entry ({exc}); "
                                 "repair or remove that line by hand") from exc

    @staticmethod
    def _ends_with_newline(fd: int) -> bool:
        return os.pread(fd, 1, os.fstat(fd).st_size - 1) == b"\n"


def key_ids_of(entries: Sequence[ErasureEntry]) -> set[str]:
    """Every key id the entries destroyed."""
    return {key for entry in entries for key in entry.key_ids}
