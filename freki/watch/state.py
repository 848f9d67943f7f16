"""The watcher's persistent state: content deleted on request that is still (or again) in a watched folder.

Without it, erasing a data owner (or deleting one document through the API) would be undone by the
watcher at the next change or start: the file is still in the folder, so it would be indexed again. For
each erased watched document the state keeps a hash of (tenant, SHA-256 of the file's bytes), and the
watcher skips any file of that tenant with exactly those bytes — under its old name, renamed or copied
while Freki was down. Changing the file (new data) indexes it again. Only hashes are stored, never paths
or content, so the state file itself holds no personal data. Entries are never dropped on their own: an
identical copy appearing later is still the erased data.

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

from freki.ingest.registry import DocumentRecord
from freki.watch.files import META_FILE_SHA, META_FOLDER

log = logging.getLogger("freki.watch")

VERSION = 1
FILE_NAME = "watch_state.json"  # in the data dir


def _key(tenant: str, file_sha: str) -> str:
    return hashlib.sha256(f"{tenant}\x1f{file_sha}".encode("utf-8", "surrogateescape")).hexdigest()


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

    def is_erased(self, tenant: str, file_sha: str) -> bool:
        """True when a file with these bytes was deleted on request in this tenant."""
        with self._lock:
            return _key(tenant, file_sha) in self._erased

    def mark_erased(self, items: list[tuple[str, str]]) -> None:
        """Remember (tenant, file SHA-256) pairs as deleted on request."""
        if not items:
            return
        with self._lock:
            for tenant, sha in items:
                self._erased[_key(tenant, sha)] = "erased"
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


def erasure_marks(records: Iterable[DocumentRecord]) -> list[tuple[str, str]]:
    """(tenant, file SHA-256) of the records that came from a watched folder."""
    return [(r.tenant_id, str(r.metadata[META_FILE_SHA])) for r in records
            if r.metadata.get(META_FOLDER) and r.metadata.get(META_FILE_SHA)]
