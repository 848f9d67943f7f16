"""Ingest: a document's bytes become stored, searchable chunks.

``parsing.parse_document`` (bytes -> ``ParsedDocument`` sections) -> ``chunking.SemanticChunker`` (sections ->
``Chunk``s within ``limits.EffectiveLimits``; helped by ``sentences`` and ``segmenting``) -> ``indexing.Indexer``
(embeds only changed chunks, writes them, then records the document in ``registry.DocumentRegistry``).
``caches`` keeps sentence vectors and token counts so that re-indexing an edit is cheap.

Nothing is re-exported here, so that importing ``freki.ingest.parsing`` alone stays light.
"""
