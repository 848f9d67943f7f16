"""``freki import-chroma``: an existing Chroma collection into Freki without re-embedding (seed 002's store).

The collection is read and checked whole first (``freki.ingest.chroma``); then every document's target
collection is checked against the vectors: the model that made them (the collection's embedding function, or
the caller's ``model``) and their dimension must be those of the Freki model that would index the document,
else the import is refused naming both, before anything is written. Then each document is stored with its
vectors as they are; only the BM25 vectors are computed.

Documents: by default each Chroma record is one Freki document of one chunk (document id = record id). With
``group_by`` (e.g. ``source_file``), records sharing that metadata value are one document, in the order of
their ``chunk_index`` metadata (then id); records without the key stay documents of their own. A document's
metadata is what all its records share, plus ``imported_from: chroma:<collection>``; the rest stays with
each chunk. Its kept source is its chunks' texts joined by blank lines, so a later full re-index (a model
change) re-chunks and re-embeds it like any plain-text document.

Each document is committed atomically; running the same import again leaves unchanged documents as they are
and finishes one that an interruption left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from freki.ingest.chroma import ChromaCollection, ChromaImportError, ChromaRecord, read_collection
from freki.ingest.chunking import Chunk
from freki.ingest.indexing import IndexInput, IndexResult
from freki.ingest.parsing import ParsedDocument
from freki.store.metadata import Metadata
from wolf_service.identifiers import id_problem
from wolf_service.tokens import TokenCounter

if TYPE_CHECKING:
    from freki.engine import FrekiEngine

CONTENT_TYPE = "text/plain"
__all__ = ["ChromaImportError", "ImportReport", "import_chroma", "import_collection", "read_collection"]


@dataclass(frozen=True)
class ImportReport:
    """What an import did."""

    collection: str
    model: str
    dimension: int
    records: int
    documents: int
    created: int
    updated: int
    unchanged: int


@dataclass(frozen=True)
class _Planned:
    input: IndexInput
    parsed: ParsedDocument
    chunks: list[Chunk]
    vectors: list[list[float]]


def import_chroma(engine: FrekiEngine, path: Path, collection: str, *, tenant: str, group_by: str = "",
                  model: str = "", owner: str = "", max_records: int = 1_000_000) -> ImportReport:
    """Read the collection ``collection`` at ``path`` and import it (see above).

    Raises:
        ChromaImportError: unreadable or unusable collection, unnamed or mismatched model or dimension;
            nothing was written.
    """
    found = read_collection(path, collection, max_records=max_records)
    return import_collection(engine, found, tenant=tenant, group_by=group_by, model=model, owner=owner)


def import_collection(engine: FrekiEngine, found: ChromaCollection, *, tenant: str, group_by: str = "",
                      model: str = "", owner: str = "", progress: Callable[[int, int], None] | None = None
                      ) -> ImportReport:
    """Import a collection already read (``read_collection``); ``progress(done, total)`` after each document."""
    collection = found.name
    claimed = model or found.model
    if not claimed:
        raise ChromaImportError(
            f"the Chroma collection {collection!r} does not name the model that made its {found.dimension}-"
            "dimensional embeddings (a legacy or custom embedding function): pass --model NAME to state it")
    counter = TokenCounter()
    plans = [_plan(doc_id, records, found, tenant, owner, counter) for doc_id, records in _documents(found, group_by)]
    for plan in plans:  # every check before the first write
        lane, _ = engine.indexer.router.route(CONTENT_TYPE, plan.input.metadata)
        if not same_model(lane.model, claimed) or lane.embedder.dimension != found.dimension:
            raise ChromaImportError(
                f"the Chroma collection {collection!r} holds {found.dimension}-dimensional embeddings of model "
                f"{claimed!r}, but Freki indexes document {plan.input.document_id!r} with model {lane.model!r} "
                f"({lane.embedder.dimension} dimensions): vectors of another model cannot be searched together; "
                "import into a Freki configured with that model, or index the texts instead; nothing was imported")
    outcomes: dict[str, int] = {"created": 0, "updated": 0, "unchanged": 0}
    for done, plan in enumerate(plans, 1):
        result = _store(engine, plan)
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        if progress is not None:
            progress(done, len(plans))
    return ImportReport(collection, claimed, found.dimension, len(found.records), len(plans),
                        outcomes["created"], outcomes["updated"], outcomes["unchanged"])


def _store(engine: FrekiEngine, plan: _Planned) -> IndexResult:
    """One document, as ``FrekiEngine.index`` stores one: disk checked first, under the write lock."""
    doc = plan.input
    engine.disk.disk.check_write(f"import document {doc.document_id[:200]!r}")
    with engine.writes.read():
        try:
            result = engine.indexer.index_embedded(doc, plan.parsed, plan.chunks, plan.vectors, dict(doc.metadata))
        finally:  # a model migration copies what changed meanwhile again
            engine.blue_green.touch(doc.tenant_id, doc.document_id)
    if result.outcome == "updated":
        engine.maintenance.touch()
    return result


def same_model(freki_model: str, chroma_model: str) -> bool:
    """Whether two names mean one model (``sentence-transformers/all-MiniLM-L6-v2`` = ``all-MiniLM-L6-v2``)."""
    def bare(name: str) -> str:
        return name.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    return bare(freki_model) == bare(chroma_model)


def _documents(found: ChromaCollection, group_by: str) -> list[tuple[str, list[ChromaRecord]]]:
    groups: dict[str, list[ChromaRecord]] = {}
    for record in found.records:
        key = record.metadata.get(group_by) if group_by else None
        groups.setdefault(key if isinstance(key, str) and key else record.id, []).append(record)
    return [(doc_id, sorted(records, key=_order)) for doc_id, records in groups.items()]


def _order(record: ChromaRecord) -> tuple[int, str]:
    index = record.metadata.get("chunk_index")
    return (int(index) if isinstance(index, str) and index.lstrip("-").isdigit() else 0, record.id)


def _plan(doc_id: str, records: list[ChromaRecord], found: ChromaCollection, tenant: str, owner: str,
          counter: TokenCounter) -> _Planned:
    problem = id_problem(doc_id)
    if problem is not None:
        raise ChromaImportError(f"record {records[0].id!r} would become document {doc_id[:80]!r}, which is not "
                                f"a usable document id: {problem}")
    shared: Metadata = {k: v for k, v in records[0].metadata.items()
                        if all(r.metadata.get(k) == v for r in records[1:])}
    shared["imported_from"] = f"chroma:{found.name}"
    source = str(shared.get("source_file") or shared.get("source") or f"chroma:{found.name}/{doc_id}")
    text = "\n\n".join(r.text for r in records)
    title = shared.get("title")
    parsed = ParsedDocument(text=text, title=title if isinstance(title, str) else "", content_type=CONTENT_TYPE,
                            metadata=shared)
    chunks = [Chunk(text=r.text, index=i, token_count=counter.count(r.text),
                    hash=hashlib.sha256(r.text.encode("utf-8", "surrogatepass")).hexdigest(),
                    metadata={k: ", ".join(v) if isinstance(v, list) else v
                              for k, v in r.metadata.items() if k not in shared})
              for i, r in enumerate(records)]
    doc = IndexInput(tenant_id=tenant, document_id=doc_id, data=text, source=source, content_type=CONTENT_TYPE,
                     owner_id=owner, metadata=shared)
    return _Planned(doc, parsed, chunks, [r.vector.tolist() for r in records])
