"""What a watcher worker does with one task: index, re-index, move or delete one file's document.

What happens to a path is decided when the worker gets to it, from what is on disk then: present and
selected → index (a no-op when unchanged), gone → delete its document. A rename moves the stored chunks
to the new document id first (``freki.watch.moves``), so it costs no embedding. A file that cannot be
indexed — binary junk, unsupported, corrupt, too large, unreadable — is skipped with the reason, logged
and listed in index status; its previously indexed version, if any, stays. Nothing here raises for a
file's sake. The caller makes sure no two tasks on the same document run at once (``taskqueue``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.ingest.parsing import DocumentError
from freki.settings import WatchSettings
from freki.store.errors import DiskFull
from freki.watch.catchup import Task
from freki.watch.files import META_FILE_SHA, META_FOLDER, FileSkipped, WatchedFolder, file_sha256, read_file
from freki.watch.moves import move_document
from freki.watch.state import WatchState
from freki.watch.status import StatusBook
from wolf_service.errors import InvalidArgument

log = logging.getLogger("freki.watch")

DocumentKey = tuple[str, str]  # (tenant, document id)


class TaskProcessor:
    """Carries out watcher tasks against the engine and records their outcome in the status book."""

    def __init__(self, engine: FrekiEngine, settings: WatchSettings, state: WatchState, book: StatusBook,
                 folder_of: Callable[[Path], WatchedFolder | None]) -> None:
        self.engine = engine
        self.settings = settings
        self.state = state
        self.book = book
        self._folder_of = folder_of

    def keys(self, task: Task) -> list[DocumentKey]:
        """The documents ``task`` reads or writes: no other task on any of them may run beside it."""
        tenant = task.folder.tenant_id
        if task.delete_id:
            return [(tenant, task.delete_id)]
        keys: list[DocumentKey] = []
        if task.path is not None:
            keys.append((tenant, task.folder.document_id(task.path)))
        source = self._folder_of(task.moved_from) if task.moved_from is not None else None
        if task.moved_from is not None and source is not None:
            keys.append((source.tenant_id, source.document_id(task.moved_from)))
        return keys

    def process(self, task: Task) -> None:
        """Carry out one task (see the module docstring)."""
        if task.delete_id:
            self._delete(task.folder, task.delete_id, None)
        elif task.path is not None:
            self._process_file(task.folder, task.path, task.moved_from)

    def _process_file(self, spec: WatchedFolder, path: Path, moved_from: Path | None) -> None:
        doc_id = spec.document_id(path)
        tenant = spec.tenant_id
        try:
            try:
                data = read_file(path, self.settings.max_file_bytes) if spec.wants(path) else None
            except FileNotFoundError:
                data = None
            if data is None:
                self._delete(spec, doc_id, path)
                return
            sha = file_sha256(data)
            if self.state.is_erased(tenant, sha):
                raise FileSkipped("its content was deleted on request (GDPR); change or remove the file")
            source_folder = self._folder_of(moved_from) if moved_from is not None else None
            if moved_from is not None and source_folder is not None and not moved_from.exists():
                old_id = source_folder.document_id(moved_from)
                if move_document(self.engine, tenant, old_id, doc_id, source=str(path)):
                    self.book.count("moved")
            result = self.engine.index(IndexInput(
                tenant_id=tenant, document_id=doc_id, data=data, source=str(path), owner_id=spec.owner_id,
                metadata={META_FOLDER: spec.name, META_FILE_SHA: sha},
            ))
            log.info("%s %s: %d chunks (%d embedded, %d unchanged, %d deleted)", result.outcome, path,
                     result.chunk_count, result.chunks_embedded, result.chunks_unchanged, result.chunks_deleted)
            self.book.count(result.outcome)
            self.book.mark(spec, doc_id, path, None)
        except (FileSkipped, DocumentError, InvalidArgument) as exc:
            self.book.mark(spec, doc_id, path, str(exc))
        except DiskFull as exc:  # logged once by the watermarks when the level changed; not per file
            self.book.mark(spec, doc_id, path, f"{exc}; retried when the file changes or at the next start")
        except Exception as exc:  # store failure and the like: not the file's fault, but never fatal
            log.exception("indexing %s failed", path)
            self.book.mark(spec, doc_id, path, f"indexing failed ({type(exc).__name__}: {exc}); retried when the "
                           "file changes or at the next start")
        finally:
            source_folder = self._folder_of(moved_from) if moved_from is not None else None
            if moved_from is not None and source_folder is not None and not moved_from.exists():
                # No-op after a successful move; otherwise the vanished source must not linger.
                self._delete(source_folder, source_folder.document_id(moved_from), moved_from)

    def _delete(self, spec: WatchedFolder, doc_id: str, path: Path | None) -> None:
        if self.engine.registry.get(spec.tenant_id, doc_id) is not None:
            deleted = self.engine.delete_document(spec.tenant_id, doc_id)
            log.info("deleted %s (%s): %d chunks", doc_id, path or "file gone", deleted)
            self.book.count("deleted")
        self.book.dropped(spec, doc_id, path)
