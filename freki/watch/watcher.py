"""Folder watching: files created, changed, renamed or removed in watched folders update the index.

Threads: watchdog's observer turns file-system events into debounced paths (``freki.watch.debounce``);
a catch-up thread reconciles each folder at start (``freki.watch.catchup``) through a bounded queue; one
worker indexes, re-indexes, moves or deletes one file at a time. Queries are served meanwhile by the
gRPC threads (the store's readers never see half a document, see ``freki.ingest.indexing``).

What happens to a path is decided when the worker gets to it, from what is on disk then: present and
selected → index (a no-op when unchanged), gone → delete its document. A rename moves the stored chunks
to the new document id first (``freki.watch.moves``), so it costs no embedding. A file that cannot be
indexed — binary junk, unsupported, corrupt, too large, unreadable — is skipped with the reason, logged
and listed in index status; its previously indexed version, if any, stays. Nothing kills the worker.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from freki.engine import FrekiEngine
from freki.ingest.indexing import IndexInput
from freki.ingest.parsing import DocumentError
from freki.ingest.registry import DocumentRecord
from freki.settings import FrekiSettings
from freki.watch.catchup import Task, catch_up, vanished_under
from freki.watch.debounce import Debouncer
from freki.watch.events import EventRouter, folder_of
from freki.watch.files import (
    META_FILE_SHA,
    META_FOLDER,
    FileSkipped,
    WatchedFolder,
    file_sha256,
    read_file,
    resolve_folders,
)
from freki.watch.lease import watch_lease
from freki.watch.moves import move_document, paired_source
from freki.watch.state import FILE_NAME as STATE_FILE
from freki.watch.state import WatchState, erasure_marks
from freki.watch.status import FolderState, FolderStatus, SkippedFile
from wolf_service.errors import InvalidArgument

log = logging.getLogger("freki.watch")


class Watcher:
    """Keeps the index in line with the configured folders. ``start()`` once, ``stop()`` at shutdown."""

    def __init__(self, engine: FrekiEngine, settings: FrekiSettings) -> None:
        self.engine = engine
        self.settings = settings.watch
        self._folders = [FolderState(f) for f in resolve_folders(settings)]
        self._queue: queue.Queue[Task] = queue.Queue(maxsize=self.settings.queue_size)
        self._debouncer = Debouncer(self.settings.debounce_s, self.settings.max_pending)
        self.state = WatchState(Path(settings.data_dir) / STATE_FILE)
        self._work_lock = threading.RLock()  # one file at a time; erasure waits for the file in progress
        self._status_lock = threading.Lock()
        self._stop = threading.Event()
        self._rescan: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._observer = PollingObserver(timeout=self.settings.poll_interval_s) if self.settings.polling else Observer()
        self._busy: WatchedFolder | None = None
        # Outcomes since start (created, updated, unchanged, moved, deleted, skipped): for logs and tests.
        self.counts: Counter[str] = Counter()
        self.lease = watch_lease(settings, self._start_watching)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Watch every folder, then catch up on changes made while Freki was down (with ``watch.lease_file``:
        once this process holds the lease, ``freki.watch.lease``)."""
        (self.lease.start if self.lease is not None else self._start_watching)()

    def _start_watching(self) -> None:
        if self._stop.is_set():
            return
        handler = EventRouter(self.folders, self._touch, self._sweep)
        for folder in self._folders:
            folder.scanning = True  # before the first status call can see an idle watcher
        try:
            self._start_observer(handler)
        except OSError as exc:  # e.g. the inotify watch limit (fs.inotify.max_user_watches) is reached
            log.warning("file events unavailable (%s); polling every %.1fs instead", exc, self.settings.poll_interval_s)
            self._observer = PollingObserver(timeout=self.settings.poll_interval_s)
            self._start_observer(handler)
        for target, name in ((self._work, "freki-watch-worker"), (self._catch_up_all, "freki-watch-catchup")):
            self._threads.append(threading.Thread(target=target, name=name, daemon=True))
            self._threads[-1].start()
        log.info("watching %s", ", ".join(str(f.spec.root) for f in self._folders))

    def _start_observer(self, handler: EventRouter) -> None:
        for folder in self._folders:
            self._observer.schedule(handler, str(folder.spec.root), recursive=True)
        self._observer.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; the file being indexed is finished, queued work is dropped (catch-up redoes it)."""
        self._stop.set()
        if self.lease is not None:
            self.lease.release()
        if self._observer.is_alive():
            self._observer.stop()
            self._observer.join(timeout)
        for thread in self._threads:
            thread.join(timeout)

    @property
    def folders(self) -> list[WatchedFolder]:
        """The watched folders, resolved."""
        return [f.spec for f in self._folders]

    # -- status ----------------------------------------------------------------------------
    def status(self) -> tuple[list[FolderStatus], int]:
        """Per-folder status and the number of files waiting (debounced + queued + in progress)."""
        with self._status_lock:
            folders = [f.report(self._debouncer.count_under(f.spec.root) + int(self._busy is f.spec))
                       for f in self._folders]
            depth = self._queue.qsize() + len(self._debouncer) + int(self._busy is not None)
        return folders, depth

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is pending (tests, benchmarks); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            folders, depth = self.status()
            if depth == 0 and all(f.files_pending == 0 for f in folders):
                return True
            time.sleep(0.05)
        return False

    # -- GDPR ------------------------------------------------------------------------------
    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold the worker between files (erasure must not interleave with indexing the same file)."""
        with self._work_lock:
            yield

    def forget(self, records: Iterable[DocumentRecord]) -> None:
        """Deleted on request: keep these files' content out of the index; drop them from status."""
        records = list(records)
        self.state.mark_erased(erasure_marks(records))
        with self._status_lock:
            for record in records:
                for folder in self._folders:
                    if folder.spec.tenant_id == record.tenant_id:
                        folder.indexed.discard(record.document_id)

    # -- events (watchdog's thread) -------------------------------------------------------
    def _touch(self, spec: WatchedFolder, path: Path, moved_from: Path | None) -> None:
        if not self._debouncer.touch(path, moved_from=moved_from):
            log.warning("more than %d files changing at once in %s; rescanning it instead",
                        self.settings.max_pending, spec.root)
            with self._status_lock:
                self._rescan.add(spec.name)

    def _sweep(self, spec: WatchedFolder, directory: Path) -> None:
        rel = spec.relative(directory)
        with self._status_lock:
            self._rescan.add(f"{spec.name}\x1f{rel.as_posix() if rel else ''}")

    def _folder_of(self, path: Path) -> FolderState | None:
        spec = folder_of(self.folders, path)
        return self._state_of(spec) if spec is not None else None

    # -- work ------------------------------------------------------------------------------
    def _submit(self, task: Task) -> bool:
        folder = self._state_of(task.folder)
        with self._status_lock:
            folder.queued += 1
        while not self._stop.is_set():
            try:
                self._queue.put(task, timeout=0.2)
                return True
            except queue.Full:
                continue
        with self._status_lock:
            folder.queued -= 1
        return False

    def _catch_up_all(self, folders: list[FolderState] | None = None) -> None:
        for folder in folders or self._folders:
            try:
                catch_up(self.engine, folder.spec, submit=self._submit, max_bytes=self.settings.max_file_bytes)
            except Exception:  # a store outage during the scan: report it, keep watching
                log.exception("catch-up of %s failed; it is retried at the next start", folder.spec.root)
            finally:
                with self._status_lock:
                    folder.scanning = False

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                self._work_once()
            except Exception:  # the worker must survive anything; the failing file is already reported
                log.exception("watch worker error")
                time.sleep(0.5)

    def _work_once(self) -> None:
        self._run_rescans()
        ready = self._debouncer.pop_due(limit=16)
        # Present files first: one may be the other half of a vanished path's move (see watch_debounce).
        ready.sort(key=lambda p: not p.path.exists())
        vanished = [p.path for p in ready if not p.path.exists()] + self._debouncer.vanished()
        for pending in ready:
            folder = self._folder_of(pending.path)
            if folder is not None:
                moved_from = pending.moved_from or self._paired_move(folder.spec, pending.path, vanished)
                self._process(Task(folder.spec, path=pending.path, moved_from=moved_from))
        try:
            task = self._queue.get(timeout=0.05 if len(self._debouncer) else 0.2)
        except queue.Empty:
            return
        try:
            self._process(task)
        finally:
            with self._status_lock:
                self._state_of(task.folder).queued -= 1

    def _run_rescans(self) -> None:
        with self._status_lock:
            requests, self._rescan = self._rescan, set()
        for request in sorted(requests):
            name, _, rel = request.partition("\x1f")
            folder = next(f for f in self._folders if f.spec.name == name)
            if "\x1f" not in request:  # overflow: reconcile the whole folder in the background
                self._debouncer.discard_under(folder.spec.root)
                with self._status_lock:
                    folder.scanning = True
                threading.Thread(target=self._catch_up_all, args=([folder],), daemon=True).start()
                continue
            for doc_id in vanished_under(self.engine, folder.spec, PurePosixPath(rel)):
                self._process(Task(folder.spec, delete_id=doc_id))

    def _paired_move(self, spec: WatchedFolder, path: Path, vanished: list[Path]) -> Path | None:
        return paired_source(self.engine, spec, path, vanished, folder_of=lambda p: folder_of(self.folders, p),
                             max_bytes=self.settings.max_file_bytes)

    def _process(self, task: Task) -> None:
        with self._work_lock:
            with self._status_lock:
                self._busy = task.folder
            try:
                if task.delete_id:
                    self._delete(task.folder, task.delete_id, None)
                elif task.path is not None:
                    self._process_file(task.folder, task.path, task.moved_from)
            finally:
                with self._status_lock:
                    self._busy = None

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
                old_id = source_folder.spec.document_id(moved_from)
                if move_document(self.engine, tenant, old_id, doc_id, source=str(path)):
                    self._count("moved")
            result = self.engine.index(IndexInput(
                tenant_id=tenant, document_id=doc_id, data=data, source=str(path), owner_id=spec.owner_id,
                metadata={META_FOLDER: spec.name, META_FILE_SHA: sha},
            ))
            log.info("%s %s: %d chunks (%d embedded, %d unchanged, %d deleted)", result.outcome, path,
                     result.chunk_count, result.chunks_embedded, result.chunks_unchanged, result.chunks_deleted)
            self._count(result.outcome)
            self._mark(spec, doc_id, path, None)
        except (FileSkipped, DocumentError, InvalidArgument) as exc:
            self._mark(spec, doc_id, path, str(exc))
        except Exception as exc:  # store failure and the like: not the file's fault, but never fatal
            log.exception("indexing %s failed", path)
            self._mark(spec, doc_id, path, f"indexing failed ({type(exc).__name__}: {exc}); retried when the "
                       "file changes or at the next start")
        finally:
            source_folder = self._folder_of(moved_from) if moved_from is not None else None
            if moved_from is not None and source_folder is not None and not moved_from.exists():
                # No-op after a successful move; otherwise the vanished source must not linger.
                self._delete(source_folder.spec, source_folder.spec.document_id(moved_from), moved_from)

    def _delete(self, spec: WatchedFolder, doc_id: str, path: Path | None) -> None:
        if self.engine.registry.get(spec.tenant_id, doc_id) is not None:
            deleted = self.engine.delete_document(spec.tenant_id, doc_id)
            log.info("deleted %s (%s): %d chunks", doc_id, path or "file gone", deleted)
            self._count("deleted")
        with self._status_lock:
            folder = self._state_of(spec)
            folder.indexed.discard(doc_id)
            if path is not None:
                folder.skipped.pop(str(path), None)

    def _mark(self, spec: WatchedFolder, doc_id: str, path: Path, reason: str | None) -> None:
        with self._status_lock:
            folder = self._state_of(spec)
            folder.skipped.pop(str(path), None)
            if reason is None:
                folder.indexed.add(doc_id)
                return
            log.warning("skipped %s: %s", path, reason)
            self.counts["skipped"] += 1
            folder.skipped[str(path)] = SkippedFile(str(path), reason, datetime.now(UTC))
            while len(folder.skipped) > self.settings.max_skipped_reported:
                folder.skipped.popitem(last=False)

    def _count(self, outcome: str) -> None:
        with self._status_lock:
            self.counts[outcome] += 1

    def _state_of(self, spec: WatchedFolder) -> FolderState:
        return next(f for f in self._folders if f.spec is spec)

