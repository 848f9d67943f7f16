"""Which embedding model embeds which document type, and where each model's vectors live.

``EmbeddingLayout`` is the one description of an index's embedding configuration: the standard model, the
type-specific routes and each model's collection. The engine builds it from settings (``from_routes``),
narrows it to the models that loaded (``without``), and compares layouts to tell whether an index must be
rebuilt (a migration). It is plain data: building it loads nothing.

Storage: the standard model's chunks live in ``<collection>`` (an index without type-specific models reads as is);
each other model's chunks live in ``<collection>__m<hash>``, with that model's dimension and model check.
A document's chunks — dense and BM25 vectors alike — live in its model's collection only, so hybrid search
runs within each collection unchanged and the per-model results are merged on the relevance scale.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

# The metadata key a caller (or frontmatter) sets to pick a type-specific model explicitly.
DOCUMENT_TYPE_KEY = "document_type"


def model_collections_prefix(collection: str) -> str:
    """What the name of every type-specific model's collection next to ``collection`` starts with."""
    return f"{collection[:50]}__m"


def model_collection(collection: str, model: str) -> str:
    """The collection holding ``model``'s chunks next to the standard ``collection`` (≤ 63 characters)."""
    digest = hashlib.sha256(f"{collection}\x1f{model}".encode()).hexdigest()[:10]
    return f"{model_collections_prefix(collection)}{digest}"


@dataclass(frozen=True)
class EmbeddingLayout:
    """The standard model, ``routes`` (document type -> model, sorted) and the chunk collection's name."""

    standard: str
    routes: tuple[tuple[str, str], ...] = ()
    collection: str = "freki_chunks"

    @classmethod
    def from_routes(cls, standard: str, routes: Mapping[str, str], collection: str) -> EmbeddingLayout:
        """A layout; routes to the standard model itself are dropped (they change nothing)."""
        kept = tuple(sorted((t, m) for t, m in routes.items() if m != standard))
        return cls(standard, kept, collection)

    @property
    def models(self) -> tuple[str, ...]:
        """Every model in use, the standard one first."""
        return (self.standard, *dict.fromkeys(m for _, m in self.routes))

    def collection_of(self, model: str) -> str:
        """Where ``model``'s chunks live."""
        return self.collection if model == self.standard else model_collection(self.collection, model)

    def route(self, content_type: str, document_type: object = None) -> tuple[str, str]:
        """(model, the document type that chose it) for a document.

        A ``document_type`` metadata value that is a key of the routes wins; then the detected content type;
        else the standard model with an empty type.
        """
        table = dict(self.routes)
        if isinstance(document_type, str) and document_type in table:
            return table[document_type], document_type
        if content_type in table:
            return table[content_type], content_type
        return self.standard, ""

    def without(self, models: set[str]) -> EmbeddingLayout:
        """This layout with ``models`` (which failed to load) replaced by the standard model."""
        return EmbeddingLayout(self.standard, tuple((t, m) for t, m in self.routes if m not in models),
                               self.collection)

    def fingerprint(self) -> str:
        """What goes into each document's content hash: a change re-indexes (and so moves) documents.

        Equal to the standard model's name without routes, so documents indexed without routes keep their hash.
        """
        if not self.routes:
            return self.standard
        return f"{self.standard} routes={list(self.routes)!r}"
