"""Settings of how queries and indexing share the embedding model (``freki.embed.scheduling``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EmbeddingSchedulingSettings(BaseModel):
    """``embedding_scheduling``: keeps one tenant's indexing from slowing every tenant's queries
    (docs/operations.md, "Fair sharing of the model"; docs/decisions/0301)."""

    # Queries run on a model session of their own (ONNX on CPU; ~90 MiB more memory for MiniLM), never
    # behind an indexing pass; false: they share the indexing passes' session and wait for the one running.
    query_lane: bool = True
    # Cores an indexing pass may use while the query lane is on; 0 = every core.
    index_threads: int = Field(0, ge=0, le=256)
    # Nice value of the thread that runs indexing passes (and of the threads it starts): 0-19, 0 = the
    # priority of queries. Indexing still gets every cycle queries leave idle; other busy processes in the
    # same CPU group (not in their own container) win over it as queries do.
    index_nice: int = Field(10, ge=0, le=19)
    # Texts per indexing pass: a longer call is cut into passes, and tenants take turns between passes.
    index_pass_texts: int = Field(16, ge=1, le=4096)
