"""GDPR settings (a section of ``FrekiSettings``): sealed payloads, the key store, the erasure log."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class GdprSettings(BaseModel):
    """Erasure that holds on disk (docs/operations.md, "GDPR")."""

    # Seal chunk text (and other non-filter fields) with a key per document version, destroyed on delete.
    encrypt_payloads: bool = True
    # 32 raw bytes (or 64 hex characters) that encrypt the key store itself; keep it outside data_dir.
    master_key_file: Path | None = None
    # The key store (SQLite); None = <data_dir>/keys.sqlite. Replicas sharing a collection must share it:
    # one host or a volume with working POSIX locks (docs/scaling.md).
    keys_path: Path | None = None
    # Edge only: DeleteDocument / DeleteOwnerData also purge the engine's files before they return.
    purge_on_erase: bool = True
    # The start-up pass refuses to start when document records are sealed under keys the key store never held
    # (a wrong keys_path would otherwise cost every document). True drops such records instead: only for an
    # erasure interrupted before Freki remembered destroyed keys, once keys_path is known to be right.
    drop_records_without_keys: bool = False
    # The erasure log (freki.store.erasure_log): what each erasure destroyed, re-applied by freki restore so a
    # backup taken before an erasure never brings the data back. None = <data_dir>/erasures.jsonl; put it
    # outside the data dir, next to the backups (docs/operations.md, "Backup and restore").
    erasure_log: Path | None = None
