"""Store settings (a section of ``FrekiSettings``): the embedded Qdrant engine or a Qdrant server."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

# What a metadata key may look like (freki.ingest.quotas.METADATA_KEY).
MetadataKey = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$")]


class StoreSettings(BaseModel):
    """Where vectors live: the embedded Qdrant engine or a Qdrant server."""

    backend: Literal["edge", "remote"] = "edge"
    # Remote Qdrant server (backend="remote"); ":memory:" uses qdrant-client's local mode (tests only).
    url: str = "http://127.0.0.1:6333"
    api_key: str | None = None
    timeout_s: float = Field(10.0, gt=0)
    collection: str = Field("freki_chunks", pattern=r"^[A-Za-z0-9_\-]{1,128}$")
    # Edge only. The engine's write-ahead log already survives a killed process (kill -9); flushing
    # segments after every write also survives power loss / OS crash, at much slower writes
    # (docs/decisions/0009-edge-durability-and-purge.md).
    flush_each_write: bool = False
    # Edge only. Threads that search the segments of one query. 1 (the default) searches on the calling
    # thread: the engine holds the GIL for the whole call, so a caller waiting for pool threads would hold
    # it idle (docs/decisions/0005-search-threads.md). More threads pay only for collections of many
    # segments on a machine with cores to spare.
    search_threads: int = Field(1, ge=1, le=256)
    # Edge only. Every this many seconds, if anything was deleted or replaced since, rewrite the segments
    # holding deleted points and reset the write-ahead log (``purge``: keeps search fast under churn and
    # removes deleted plaintext fields from disk). 0 = only on GDPR erasure.
    maintenance_interval_s: float = Field(120.0, ge=0.0)
    # Other Freki processes (replicas) write this collection too (docs/scaling.md). Then readers check each
    # hit against the committed record, a commit removes only the version it replaces, and uncommitted
    # versions are left to their writer until they are older than orphan_grace_s. Needs backend "remote"
    # and one key store shared by the replicas (gdpr.keys_path).
    shared: bool = False
    # Shared collections: a version nobody committed is removed once it is this old (longer than any
    # index call can take).
    orphan_grace_s: float = Field(3600.0, gt=0.0)
    # Metadata keys to index for fast filtering (a keyword index on the values, float indexes on the numbers
    # and dates they hold). Filters work on every key without one; an index pays on a Qdrant server with
    # many points per tenant. Added at start when missing, never dropped.
    indexed_metadata: list[MetadataKey] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _shared_needs_remote(self) -> StoreSettings:
        if self.shared and self.backend != "remote":
            raise ValueError("store.shared needs store.backend 'remote': the embedded engine serves one process")
        return self
