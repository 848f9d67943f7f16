"""``freki keys rotate``: re-wrap every data key of a stopped Freki's key store with a new master key.

The store is opened exclusively (refused while any Freki has it open) with the configured master key
(``gdpr.master_key_file``), every key is re-wrapped with the new one in one transaction
(``KeyStore.rotate``), and the store then names the new key's id: from then on only the new key file opens
it. A rotation killed half-way leaves the old set (the next opener rolls the journal back), so running the
same command again finishes it; run on a store already wrapped with the new key it changes nothing.
Destroyed keys have no material in the store and stay destroyed. Backups keep the key store as it was when
they were taken: their manifest names the master key they need (decision 0340).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from freki.backup.snapshot import KEYS
from freki.engine.config import master_key
from freki.settings import FrekiSettings
from freki.store.errors import KeyStoreMismatch
from freki.store.keys import KeyStore
from freki.store.master_key import master_key_id, read_master_key, write_new_master_key
from wolf_service.errors import FailedPrecondition


@dataclass(frozen=True)
class RotationReport:
    """What a rotation did: keys re-wrapped, the master key ids before and after."""

    keys_path: Path
    rewrapped: int
    old_id: str
    new_id: str
    already_done: bool = False


def rotate_master_key(settings: FrekiSettings, new_key_file: Path, *, generate: bool = False) -> RotationReport:
    """Re-wrap the key store of ``settings`` with the key in ``new_key_file`` (created first with ``generate``).

    Raises:
        FailedPrecondition: no key store, the new key file is the configured one, or it exists with ``generate``.
        StoreError: the store is open in another process, or does not open with the configured master key.
    """
    keys_path = settings.gdpr.keys_path or Path(settings.data_dir) / KEYS
    if not keys_path.is_file():
        raise FailedPrecondition(f"no key store at {keys_path} (gdpr.keys_path or <data_dir>/{KEYS}): nothing to "
                                 "rotate; is this the right --config?")
    configured = settings.gdpr.master_key_file
    if configured is not None and Path(configured).resolve() == Path(new_key_file).resolve():
        raise FailedPrecondition(f"the new master key file {new_key_file} is gdpr.master_key_file itself; give a "
                                 "new file (--generate creates one)")
    if generate and Path(new_key_file).exists():
        raise FailedPrecondition(f"{new_key_file} exists; --generate writes a new file only")
    old_key = master_key(settings)
    try:
        store = KeyStore(keys_path, master_key=old_key, exclusive=True)
    except KeyStoreMismatch as refused:
        # Already wrapped with the new key (a rotation finished before an interrupted command returned)?
        if generate:
            raise
        new_key = read_master_key(Path(new_key_file))
        try:
            KeyStore(keys_path, master_key=new_key, exclusive=True).close()
        except KeyStoreMismatch:
            raise refused from None
        return RotationReport(keys_path, 0, master_key_id(old_key), master_key_id(new_key), already_done=True)
    try:  # the store is ours alone from here: a refused rotation created no key file
        new_key = write_new_master_key(Path(new_key_file)) if generate else read_master_key(Path(new_key_file))
        if new_key == old_key:
            raise FailedPrecondition(f"{new_key_file} holds the configured master key; give another key")
        count = store.rotate(new_key)
    finally:
        store.close()
    return RotationReport(keys_path, count, master_key_id(old_key), master_key_id(new_key))
