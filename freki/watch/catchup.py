"""Startup catch-up: reconcile a watched folder with the index after Freki was down.

1. Registry pass: every indexed document of the folder whose file is gone (or no longer selected by
   the patterns) is *missing*. Up to ``max_rename_candidates`` of them are kept by file hash, so a file
   renamed while Freki was down is recognised below; the rest are deleted right away.
2. File pass: every selected file is queued for indexing. Indexing compares the document's content
   hash first, so an unchanged file costs a read and a hash, never an embedding. A file with no record
   whose bytes hash like a missing document is queued as a move from it (its vectors are kept).
3. Missing documents nobody moved to are deleted.

Work goes through ``submit``, which blocks while the watcher's bounded queue is full, so a folder of
any size is reconciled in constant memory (apart from the rename candidates, which are capped).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from freki.engine import FrekiEngine
from freki.ingest.registry import DocumentRecord
from freki.watch.files import META_FILE_SHA, META_FOLDER, FileSkipped, WatchedFolder, file_sha256, read_file

log = logging.getLogger("freki.watch")


@dataclass(frozen=True)
class Task:
    """One unit of watcher work: index (or delete, if gone) a file, or delete a document by id."""

    folder: WatchedFolder
    path: Path | None = None
    moved_from: Path | None = None
    delete_id: str = ""


@dataclass
class CatchUpReport:
    """What a catch-up found."""

    files: int = 0
    missing: int = 0
    renamed: int = 0


def catch_up(
    engine: FrekiEngine, folder: WatchedFolder, *, submit: Callable[[Task], bool],
    max_bytes: int, max_rename_candidates: int = 10_000,
) -> CatchUpReport:
    """Queue the work that brings the index in line with ``folder``; stops early when ``submit`` is False."""
    report = CatchUpReport()
    missing: dict[str, Path] = {}  # file hash -> source path of a missing document
    missing_ids: dict[Path, str] = {}
    for record in list_folder_records(engine, folder):
        source = Path(record.source)
        if source.is_file() and not source.is_symlink() and folder.wants(source):
            continue
        report.missing += 1
        sha = str(record.metadata.get(META_FILE_SHA, ""))
        if sha and len(missing) < max_rename_candidates and sha not in missing:
            missing[sha] = source
            missing_ids[source] = record.document_id
        elif not submit(Task(folder, delete_id=record.document_id)):
            return report
    for path in walk(folder):
        report.files += 1
        moved_from = None
        if missing and engine.registry.get(folder.tenant_id, folder.document_id(path)) is None:
            try:
                moved_from = missing.pop(file_sha256(read_file(path, max_bytes)), None)
            except (OSError, FileSkipped):
                pass  # the worker reads it again and reports why it is skipped
        if moved_from is not None:
            report.renamed += 1
            missing_ids.pop(moved_from, None)
            log.info("catch-up: %s was renamed to %s while Freki was down", moved_from, path)
        if not submit(Task(folder, path=path, moved_from=moved_from)):
            return report
    for doc_id in missing_ids.values():
        if not submit(Task(folder, delete_id=doc_id)):
            return report
    log.info("catch-up of %s queued: %d files, %d missing documents (%d renamed)",
             folder.root, report.files, report.missing, report.renamed)
    return report


def list_folder_records(engine: FrekiEngine, folder: WatchedFolder) -> Iterator[DocumentRecord]:
    """Registry records of documents that came from ``folder``."""
    for record in engine.registry.iterate(folder.tenant_id):
        if record.document_id.startswith(folder.id_prefix) and record.metadata.get(META_FOLDER) == folder.name:
            yield record


def walk(folder: WatchedFolder) -> Iterator[Path]:
    """Selected files below the folder, in a stable order, without descending into excluded folders."""
    for dirpath, dirnames, filenames in os.walk(folder.root, followlinks=False):
        rel_dir = PurePosixPath(Path(dirpath).relative_to(folder.root).as_posix())
        dirnames[:] = sorted(d for d in dirnames if not folder.excludes_dir(rel_dir / d))
        for name in sorted(filenames):
            if folder.wants_relative(rel_dir / name if rel_dir.parts else PurePosixPath(name)):
                yield Path(dirpath) / name


def vanished_under(engine: FrekiEngine, folder: WatchedFolder, rel_dir: PurePosixPath) -> list[str]:
    """Document ids of the folder's records whose files were below ``rel_dir`` and are gone now."""
    prefix = str(folder.root / rel_dir).rstrip(os.sep) + os.sep
    return [
        r.document_id for r in list_folder_records(engine, folder)
        if r.source.startswith(prefix) and not os.path.lexists(r.source)
    ]
