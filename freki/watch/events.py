"""Turning watchdog's file-system events into debounced work for the watcher.

Runs on watchdog's observer thread, so it only classifies and hands over; it never reads files or
touches the index, and it never raises (an exception would kill the observer's emitter).

* created / modified / closed / deleted → the path is (re)armed in the debouncer; what to do with it is
  decided later from what is on disk.
* moved within the watched tree (same tenant) → the destination is armed with ``moved_from`` so the
  worker can move the stored vectors instead of re-embedding. Editors' "write temp, rename over" saves
  arrive as a move from an excluded temp name and are plain modifications of the destination.
* moved out of the tree or to an excluded name → the source is armed (and found gone → deleted).
* a directory deleted or moved out → its files get no events of their own, so it is swept.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler

from freki.watch.files import WatchedFolder

log = logging.getLogger("freki.watch")

Touch = Callable[[WatchedFolder, Path, Path | None], None]
Sweep = Callable[[WatchedFolder, Path], None]


def folder_of(folders: Sequence[WatchedFolder], path: Path) -> WatchedFolder | None:
    """The watched folder containing ``path``, if any."""
    for folder in folders:
        if folder.relative(path) is not None:
            return folder
    return None


class EventRouter(FileSystemEventHandler):
    """Routes watchdog events to ``touch`` (arm a file) and ``sweep`` (a directory vanished)."""

    def __init__(self, folders: Sequence[WatchedFolder], touch: Touch, sweep: Sweep) -> None:
        self._folders = list(folders)
        self._touch = touch
        self._sweep = sweep

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self.route(event)
        except Exception:
            log.exception("cannot handle file event %r", event)

    def route(self, event: FileSystemEvent) -> None:
        """Classify one event (see the module docstring)."""
        if event.event_type in ("opened", "closed_no_write"):
            return
        src = Path(os.fsdecode(event.src_path))
        dest = Path(os.fsdecode(event.dest_path)) if event.dest_path else None
        src_folder = folder_of(self._folders, src)
        if event.is_directory:
            # Files of a folder moved inside the watched tree are reported one by one as moved.
            moved_within = dest is not None and folder_of(self._folders, dest) is src_folder
            if src_folder and (event.event_type == "deleted" or (event.event_type == "moved" and not moved_within)):
                self._sweep(src_folder, src)
            return
        src_wanted = src_folder is not None and src_folder.wants(src)
        if event.event_type == "moved" and dest is not None:
            dest_folder = folder_of(self._folders, dest)
            if dest_folder is not None and dest_folder.wants(dest):
                keeps_vectors = src_wanted and src_folder is not None and src_folder.tenant_id == dest_folder.tenant_id
                self._touch(dest_folder, dest, src if keeps_vectors else None)
                if keeps_vectors:
                    return
        if src_folder is not None and src_wanted:
            self._touch(src_folder, src, None)
