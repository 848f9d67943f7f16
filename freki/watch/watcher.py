"""Folder watching: files created, changed, renamed or removed in watched folders update the index.

Threads: watchdog's observer turns file-system events into debounced paths (``freki.watch.debounce``); an
event thread hands the paths that are due to the work queue (pairing a vanished path with a new one as a
move, ``freki.watch.moves``); a catch-up thread reconciles each folder at start (``freki.watch.catchup``)
through the same bounded queue; ``watch.workers`` workers take tasks from it (``freki.watch.processing``),
so one file is parsed while another is embedded. No two workers ever hold tasks of the same document: the
queue keeps a document's tasks in order, one at a time (``freki.watch.taskqueue``). Queries are served
meanwhile by the gRPC threads (the store's readers never see half a document, see ``freki.ingest.indexing``).

Erasure (``paused``) takes the write side of a readers-writer lock whose read side each worker holds for
one task: it waits for the files in work and holds every worker off until it is done.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from watchdog.observers import Observer
from watchdog.observers.polling import PollingObserver

from freki.engine import FrekiEngine
from freki.ingest.registry import DocumentRecord
from freki.settings import FrekiSettings
from freki.store.rwlock import ReadWriteLock
from freki.watch.catchup import Task, catch_up, vanished_under
from freki.watch.debounce import Debouncer
from freki.watch.events import EventRouter, folder_of
from freki.watch.files import WatchedFolder, resolve_folders
from freki.watch.lease import watch_lease
from freki.watch.moves import paired_source
from freki.watch.processing import TaskProcessor
from freki.watch.state import FILE_NAME as STATE_FILE
from freki.watch.state import WatchState, erasure_marks
from freki.watch.status import FolderState, FolderStatus, StatusBook
from freki.watch.taskqueue import KeyedTaskQueue

log = logging.getLogger("freki.watch")


class Watcher:
    """Keeps the index in line with the configured folders. ``start()`` once, ``stop()`` at shutdown."""

    def __init__(self, engine: FrekiEngine, settings: FrekiSettings) -> None:
        self.engine = engine
        self.settings = settings.watch
        # 0 = as many workers as parser processes: each worker's file is parsed, or embedded, at any moment.
        self.workers = self.settings.workers or engine.sandbox.config.workers
        self._book = StatusBook(resolve_folders(settings), self.settings.max_skipped_reported)
        self._folders = self._book.folders
        self.counts = self._book.counts  # outcomes since start: for logs and tests
        self._queue: KeyedTaskQueue[Task] = KeyedTaskQueue(self.settings.queue_size)
        self._debouncer = Debouncer(self.settings.debounce_s, self.settings.max_pending)
        self.state = WatchState(Path(settings.data_dir) / STATE_FILE)
        self._processor = TaskProcessor(engine, self.settings, self.state, self._book,
                                        lambda p: folder_of(self.folders, p))
        self._gate = ReadWriteLock()  # workers read-side per task; erasure write-side
        self._stop = threading.Event()
        self._rescan: set[str] = set()
        self._threads: list[threading.Thread] = []
        self._observer = PollingObserver(timeout=self.settings.poll_interval_s) if self.settings.polling else Observer()
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
        targets = [(self._work, f"freki-watch-worker-{n}") for n in range(self.workers)]
        targets += [(self._dispatch, "freki-watch-events"), (self._catch_up_all, "freki-watch-catchup")]
        for target, name in targets:
            self._threads.append(threading.Thread(target=target, name=name, daemon=True))
            self._threads[-1].start()
        log.info("watching %s with %d workers", ", ".join(str(f.spec.root) for f in self._folders), self.workers)

    def _start_observer(self, handler: EventRouter) -> None:
        for folder in self._folders:
            self._observer.schedule(handler, str(folder.spec.root), recursive=True)
        self._observer.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; the files in work are finished, queued work is dropped (catch-up redoes it)."""
        self._stop.set()
        self._queue.wake()
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
        """Per-folder status and the number of files waiting (debounced + queued + in work)."""
        with self._book.lock:
            folders = [f.report(self._debouncer.count_under(f.spec.root)) for f in self._folders]
            depth = sum(f.queued for f in self._folders) + len(self._debouncer)
        return folders, depth

    def backlog_age(self) -> float:
        """Seconds the oldest file queued for indexing has waited (0 when none waits)."""
        return self._queue.oldest_wait()

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
        """Hold every worker between files (erasure must not interleave with indexing the same file)."""
        with self._gate.write():
            yield

    def forget(self, records: Iterable[DocumentRecord]) -> None:
        """Deleted on request: keep these files' content out of the index; drop them from status."""
        records = list(records)
        self.state.mark_erased(erasure_marks(records))
        for tenant in {r.tenant_id for r in records}:
            self._book.forget(tenant, {r.document_id for r in records if r.tenant_id == tenant})

    # -- events (watchdog's thread) -------------------------------------------------------
    def _touch(self, spec: WatchedFolder, path: Path, moved_from: Path | None) -> None:
        if not self._debouncer.touch(path, moved_from=moved_from):
            log.warning("more than %d files changing at once in %s; rescanning it instead",
                        self.settings.max_pending, spec.root)
            with self._book.lock:
                self._rescan.add(spec.name)

    def _sweep(self, spec: WatchedFolder, directory: Path) -> None:
        rel = spec.relative(directory)
        with self._book.lock:
            self._rescan.add(f"{spec.name}\x1f{rel.as_posix() if rel else ''}")

    def _folder_of(self, path: Path) -> FolderState | None:
        spec = folder_of(self.folders, path)
        return self._book.state_of(spec) if spec is not None else None

    # -- event thread: due paths -> tasks ---------------------------------------------------
    def _dispatch(self) -> None:
        while not self._stop.is_set():
            try:
                self._dispatch_once()
            except Exception:  # the thread must survive anything
                log.exception("watch event thread error")
                time.sleep(0.5)

    def _dispatch_once(self) -> None:
        self._run_rescans()
        with self._book.lock:  # popped and counted at once: wait_idle never misses them in between
            ready = self._debouncer.pop_due(limit=16)
            for pending in ready:
                if (folder := self._folder_of(pending.path)) is not None:
                    folder.queued += 1
        # Present files first: one may be the other half of a vanished path's move (see watch_debounce).
        ready.sort(key=lambda p: not p.path.exists())
        vanished = [p.path for p in ready if not p.path.exists()] + self._debouncer.vanished()
        for pending in ready:
            folder = self._folder_of(pending.path)
            if folder is not None:
                moved_from = pending.moved_from or self._paired_move(folder.spec, pending.path, vanished)
                self._submit(Task(folder.spec, path=pending.path, moved_from=moved_from), counted=True)
        if ready:
            return
        if len(self._debouncer):  # paths held back (still written, or a vanished half of a move): look again soon
            self._stop.wait(0.05)
        else:
            self._debouncer.wait(0.2)  # a touch wakes it early

    def _run_rescans(self) -> None:
        with self._book.lock:
            requests, self._rescan = self._rescan, set()
        for request in sorted(requests):
            name, _, rel = request.partition("\x1f")
            folder = next(f for f in self._folders if f.spec.name == name)
            if "\x1f" not in request:  # overflow: reconcile the whole folder in the background
                self._debouncer.discard_under(folder.spec.root)
                with self._book.lock:
                    folder.scanning = True
                threading.Thread(target=self._catch_up_all, args=([folder],), daemon=True).start()
                continue
            for doc_id in vanished_under(self.engine, folder.spec, PurePosixPath(rel)):
                self._submit(Task(folder.spec, delete_id=doc_id))

    def _paired_move(self, spec: WatchedFolder, path: Path, vanished: list[Path]) -> Path | None:
        try:
            return paired_source(self.engine, spec, path, vanished, folder_of=lambda p: folder_of(self.folders, p),
                                 max_bytes=self.settings.max_file_bytes)
        except Exception:  # a store outage: index the file as new rather than lose it (its vectors are re-made)
            log.exception("cannot tell whether %s was moved; indexing it as a new file", path)
            return None

    # -- work ------------------------------------------------------------------------------
    def _submit(self, task: Task, *, counted: bool = False) -> bool:
        """Queue ``task`` (blocks while the queue is full); False when the watcher stops first."""
        keys = self._processor.keys(task)
        if not counted:
            self._book.queued(task.folder, +1)
        while not self._stop.is_set():
            if self._queue.put(task, keys, timeout=0.2):
                return True
        self._book.queued(task.folder, -1)
        return False

    def _catch_up_all(self, folders: list[FolderState] | None = None) -> None:
        for folder in folders or self._folders:
            try:
                catch_up(self.engine, folder.spec, submit=self._submit, max_bytes=self.settings.max_file_bytes)
            except Exception:  # a store outage during the scan: report it, keep watching
                log.exception("catch-up of %s failed; it is retried at the next start", folder.spec.root)
            finally:
                with self._book.lock:
                    folder.scanning = False

    def _work(self) -> None:
        while not self._stop.is_set():
            taken = self._queue.take(timeout=0.2)
            if taken is None:
                continue
            task, keys = taken
            try:
                with self._gate.read():
                    self._processor.process(task)
            except Exception:  # the worker must survive anything; the failing file is already reported
                log.exception("watch worker error")
            finally:
                self._queue.done(keys)
                self._book.queued(task.folder, -1)
