"""What an erasure writes to the erasure log before it destroys anything (``freki.store.erasure_log``): the
generation ids (= key ids) it is about to destroy, and the watch marks of its files."""

from __future__ import annotations

from pathlib import Path

from freki.engine.restore_marker import refuse_incomplete_restore
from freki.ingest.registry import DocumentRecord
from freki.settings import FrekiSettings
from freki.store.erasure_log import FILE_NAME, ErasureEntry, ErasureLog
from freki.store.keys import KeyStore

Marks = list[tuple[str, str]] | None


def erasure_log(settings: FrekiSettings) -> ErasureLog:
    """The erasure log of ``settings`` (``gdpr.erasure_log``, default in the data dir); refuses a data dir an
    unfinished restore left behind, before anything opens it."""
    refuse_incomplete_restore(Path(settings.data_dir))
    return ErasureLog(settings.gdpr.erasure_log or Path(settings.data_dir) / FILE_NAME)


def log_document_erasure(log: ErasureLog, keys: KeyStore, tenant: str, document_id: str,
                         record: DocumentRecord | None, reason: str, marks: Marks) -> None:
    """Before a document's erasure (under its document lock, so no version appears meanwhile)."""
    # Generation ids are the key ids; with sealing off there are no keys, the record still names one.
    generations = {*keys.ids_of(tenant, document=document_id), *([record.generation] if record else [])} - {""}
    if generations:
        log.append(ErasureEntry(reason, tenant, sorted(generations), document_ids=[document_id],
                                watch_marks=marks or []))


def log_owner_erasure(log: ErasureLog, keys: KeyStore, tenant: str, owner_id: str, records: list[DocumentRecord],
                      marks: Marks) -> None:
    """Before an owner's erasure (under the exclusive write lock: no index call runs meanwhile)."""
    generations = {*keys.ids_of(tenant, owner=owner_id), *(r.generation for r in records)} - {""}
    log.append(ErasureEntry("owner", tenant, sorted(generations), owner_id=owner_id,
                            document_ids=[r.document_id for r in records], watch_marks=marks or []))
