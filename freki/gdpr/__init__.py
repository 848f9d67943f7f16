"""GDPR: erase a data owner's (or one document's) data everywhere Freki keeps it; export it portably.

Where a document's data lives, and how erasure reaches it:

* chunks (text, dense + sparse vectors, metadata) in the chunk collection — deleted by filter;
* its record (hash, source, metadata) in the registry collection — deleted;
* sentence vectors cached for chunking — dropped (``SentenceVectorCache.forget``);
* the folder watcher — if the file is still in a watched folder it would be indexed again at the next
  change or start, so the watcher keeps a hash-only marker and skips the unchanged file
  (``freki.watch.state``), and its in-memory status forgets the document.

Not touched, on purpose: the query-embedding LRU cache holds vectors of *queries* keyed by query text,
nothing derived from indexed documents, and it is bounded and in memory only.

Auditing: the gRPC audit interceptor (``freki.api.operations.AUDITED``) records who called DeleteDocument,
DeleteOwnerData and ExportOwnerData, when, and the counts; the export tool (``python -m freki.gdpr export``)
records the file it wrote. Neither stores content.

Export format (JSON lines, one object per line): a header ``{"type": "export", ...}``, then for each
document ``{"type": "document", "document": {...DocumentInfo}}``, then its outgoing knowledge-graph links
``{"type": "links", "links": {"document_id": ..., "outgoing": [...GraphEdge]}}`` (ExportRecord.links: every
kept link, resolved to the document having the target's name, ``target_document_id`` absent while dangling),
then its chunks ``{"type": "chunk", "chunk": {...ExportedChunk}}``; vectors only when asked for. The file is
the gRPC stream (ExportOwnerData) line for line.
"""

from freki.gdpr.erasure import Erasure, erase_document, erase_owner

__all__ = ["Erasure", "erase_document", "erase_owner"]
