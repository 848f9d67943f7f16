"""A data dir a restore is still writing is never served.

``freki restore`` (``freki.backup.restore``) writes this marker into the data dir before its first file and
removes it after the last check; a restore killed in between leaves it, and Freki refuses to start there.
"""

from __future__ import annotations

from pathlib import Path

from freki.store.errors import StoreUnavailable

RESTORE_MARKER = ".restore-incomplete"


def refuse_incomplete_restore(data_dir: Path) -> None:
    """Raise StoreUnavailable when ``data_dir`` holds an unfinished restore."""
    if (Path(data_dir) / RESTORE_MARKER).exists():
        raise StoreUnavailable(
            f"data dir {data_dir} holds an unfinished restore ({RESTORE_MARKER} is there: freki restore was "
            "interrupted); empty the data dir and run freki restore again")
