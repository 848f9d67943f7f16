"""Read an embedded Chroma collection (``chromadb.PersistentClient``) as untrusted input, for ``freki import-chroma``.

Everything is read and checked before anything is written, so a collection that cannot be read whole gets
one clear error (``ChromaImportError``) and changes nothing:

* The persistent directory is copied to a temporary folder first and only the copy is opened: chromadb may
  migrate or write to the directory it opens, and the source must stay as it was.
* Every record needs its document text (Freki keeps and shows the text of every chunk) and an embedding of
  the collection's one dimension, finite and not all zeros.
* The embedding model is the one the collection's persisted configuration names (Chroma's ``default``
  embedding function is all-MiniLM-L6-v2; others record ``model_name``); "" when it names none (a legacy
  or custom function): the caller must then say which model made the vectors.

The embedding function is never built (that would load, or download, a model): the collection is opened
through chromadb's server object with the persisted configuration only.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from freki.store.metadata import Metadata

PAGE = 1000  # records read per call
# Chroma's built-in embedding functions that compute all-MiniLM-L6-v2 without naming it.
_MINILM = {"default", "onnx_mini_lm_l6_v2"}


class ChromaImportError(ValueError):
    """The collection cannot be imported; the message says what was wrong and what to do."""


@dataclass(frozen=True)
class ChromaRecord:
    """One Chroma record: a chunk's id, text, metadata (as Freki metadata) and embedding."""

    id: str
    text: str
    metadata: Metadata
    vector: np.ndarray


@dataclass(frozen=True)
class ChromaCollection:
    """A whole collection read and checked: its name, embedding model ("" = not named), dimension, records."""

    name: str
    model: str
    dimension: int
    records: list[ChromaRecord]


def read_collection(path: Path, name: str, *, max_records: int) -> ChromaCollection:
    """Read and check the collection ``name`` of the persistent Chroma directory ``path`` (see above).

    Raises:
        ChromaImportError: chromadb is missing, the directory or collection cannot be read, a record is
            unusable, or there are more than ``max_records``.
    """
    try:
        import chromadb
        from chromadb.api.models.Collection import Collection
        from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT, Settings
    except ImportError as exc:
        raise ChromaImportError("importing a Chroma collection needs chromadb: pip install 'wolfpack-rag[chroma]'"
                                ) from exc
    if not (path / "chroma.sqlite3").is_file():
        raise ChromaImportError(f"{path} is not a Chroma persistent directory (no chroma.sqlite3 in it)")
    with tempfile.TemporaryDirectory(prefix="freki-chroma-") as tmp:
        copy = Path(tmp) / "chroma"
        shutil.copytree(path, copy)
        try:
            client = chromadb.PersistentClient(path=str(copy), settings=Settings(anonymized_telemetry=False))
            server: Any = getattr(client, "_server")  # noqa: B009 - the persisted model, no embedding function built
            names = sorted(c.name for c in client.list_collections())
            if name not in names:
                raise ChromaImportError(f"{path} has no Chroma collection {name!r} (it has: {names or 'none'})")
            model = server.get_collection(name=name, tenant=DEFAULT_TENANT, database=DEFAULT_DATABASE)
            collection = Collection(client=server, model=model, embedding_function=None)
            records = list(_records(collection, max_records))
        except ChromaImportError:
            raise
        except Exception as exc:  # chromadb's errors (sqlite, Rust bindings) share no base class
            raise ChromaImportError(f"the Chroma collection {name!r} at {path} cannot be read "
                                    f"({type(exc).__name__}: {str(exc)[:300]}); nothing was imported") from exc
        finally:
            if "client" in locals():
                client.clear_system_cache()
    if not records:
        raise ChromaImportError(f"the Chroma collection {name!r} at {path} is empty; nothing to import")
    dimension = _check_vectors(records, name)
    return ChromaCollection(name, _model_name(getattr(model, "configuration_json", None)), dimension, records)


def _records(collection: Any, max_records: int) -> Iterator[ChromaRecord]:
    offset = 0
    while True:
        page = collection.get(include=["embeddings", "documents", "metadatas"], limit=PAGE, offset=offset)
        ids = page["ids"]
        if not ids:
            return
        if offset + len(ids) > max_records:
            raise ChromaImportError(f"the collection has more than {max_records:,} records (--max-records)")
        embeddings, documents, metadatas = page["embeddings"], page["documents"], page["metadatas"]
        for i, record_id in enumerate(ids):
            text = documents[i] if documents is not None else None
            if not isinstance(text, str) or not text.strip():
                raise ChromaImportError(f"record {record_id!r} has no document text; Freki keeps the text of "
                                        "every chunk, so a collection of embeddings alone cannot be imported")
            vector = embeddings[i] if embeddings is not None else None
            if vector is None:
                raise ChromaImportError(f"record {record_id!r} has no embedding")
            meta = metadatas[i] if metadatas is not None else None
            yield ChromaRecord(str(record_id), text, freki_metadata(meta or {}),
                               np.asarray(vector, dtype=np.float32))
        offset += len(ids)


def _check_vectors(records: list[ChromaRecord], name: str) -> int:
    dimension = len(records[0].vector)
    for record in records:
        if record.vector.ndim != 1 or len(record.vector) != dimension:
            raise ChromaImportError(f"record {record.id!r} of collection {name!r} has a {record.vector.shape} "
                                    f"embedding where the collection's first has {dimension} dimensions")
        if not np.all(np.isfinite(record.vector)) or not np.any(record.vector):
            raise ChromaImportError(f"record {record.id!r} of collection {name!r} has an embedding that is not "
                                    "finite or is all zeros")
    return dimension


def _model_name(configuration: object) -> str:
    """The model the persisted embedding-function configuration names; "" for none."""
    if isinstance(configuration, str):
        try:
            configuration = json.loads(configuration)
        except ValueError:
            return ""
    function = configuration.get("embedding_function") if isinstance(configuration, dict) else None
    if not isinstance(function, dict) or function.get("type") != "known":
        return ""
    config = function.get("config")
    named = (config.get("model_name") or config.get("model")) if isinstance(config, dict) else None
    if isinstance(named, str) and named:
        return named
    return "all-MiniLM-L6-v2" if function.get("name") in _MINILM else ""


def freki_metadata(values: dict[str, Any]) -> Metadata:
    """Chroma metadata (str, int, float, bool, lists of them; None) as Freki's strings and lists of strings."""
    out: Metadata = {}
    for key, value in values.items():
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        if isinstance(value, list):
            out[str(key)] = [_text(v) for v in value if v is not None]
        elif isinstance(value, bool | int | float | str):
            out[str(key)] = _text(value)
    return out


def _text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
