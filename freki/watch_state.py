"""The watcher's persistent state: documents deleted on request whose files are still being watched.

Without it, erasing a data owner (or deleting one document through the API) would be undone by the
watcher at the next catch-up: the file is still in the folder, so it would be indexed again. For each
such document the state keeps one pair — a hash of (tenant, document id) and the SHA-256 of the file's
bytes at deletion — and the watcher skips the file while it is byte-for-byte unchanged. Changing the
file (new data arriving) indexes it again; removing it clears the entry. Only hashes are stored, never
paths or content, so the state file itself holds no personal data to erase.

The file is rewritten atomically (temp file, fsync, rename) so a crash leaves the old or the new state.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from freki.documents import DocumentRecord
from freki.watch_files import META_FILE_SHA, META_FOLDER

log = logging.getLogger("freki.watch")

VERSION = 1
FILE_NAME = "watch_state.json"  # in the data dir


def _key(tenant: str, document_id: str) -> str:
    return hashlib.sha256(f"{tenant}\x1f{document_id}".encode("utf-8", "surrogateescape")).hexdigest()


class WatchState:
    """Deleted-on-request markers, persisted as JSON at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._erased: dict[str, str] = self._load()

    def _load(self) -> dict[str, str]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Losing the markers would resurrect erased data, so refuse to start rather than guess.
            raise RuntimeError(
                f"watch state {self.path} is unreadable ({exc}); restore it from backup, or delete it to "
                "let the watcher re-index every file in the watched folders"
            ) from exc
        erased = raw.get("erased", {}) if isinstance(raw, dict) else {}
        return {str(k): str(v) for k, v in erased.items()}

    def is_erased(self, tenant: str, document_id: str, file_sha: str) -> bool:
        """True while a file deleted on request is unchanged since its deletion."""
        with self._lock:
            return self._erased.get(_key(tenant, document_id)) == file_sha

    def mark_erased(self, items: list[tuple[str, str, str]]) -> None:
        """Remember (tenant, document id, file SHA-256) triples as deleted on request."""
        if not items:
            return
        with self._lock:
            for tenant, document_id, sha in items:
                self._erased[_key(tenant, document_id)] = sha
            self._save()

    def clear(self, tenant: str, document_id: str) -> None:
        """Drop a marker (the file changed or disappeared)."""
        with self._lock:
            if self._erased.pop(_key(tenant, document_id), None) is not None:
                self._save()

    def __len__(self) -> int:
        with self._lock:
            return len(self._erased)

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump({"version": VERSION, "erased": self._erased}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


def erasure_marks(records: Iterable[DocumentRecord]) -> list[tuple[str, str, str]]:
    """(tenant, document id, file SHA-256) of the records that came from a watched folder."""
    return [(r.tenant_id, r.document_id, r.metadata[META_FILE_SHA]) for r in records
            if r.metadata.get(META_FOLDER) and r.metadata.get(META_FILE_SHA)]
