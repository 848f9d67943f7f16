"""The engine's embedding models: load each type-specific model and open its chunk collection.

The layout (``freki.embed.layout.EmbeddingLayout``) says which models the settings ask for; this module
loads them. A model that fails to load is left out and its document types go to the standard model with a
logged warning (the fallback of the spec), unless ``embedding_models_required`` makes that fatal. Documents
that model embedded earlier stay in its collection, unsearched until it loads again (GetIndexStatus lists
the model as unavailable with their count).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from freki.embed.calibration import Alignment, CosineBackground, aligner, anchored, reference_for
from freki.embed.embedder import PACKAGED_MODEL_NAMES
from freki.embed.layout import EmbeddingLayout
from freki.embed.model import EmbeddingModel
from freki.ingest.registry import DocumentRegistry
from freki.search.retrieval import SearchLane
from freki.settings import FrekiSettings
from freki.store import CollectionSpec, FieldMatch
from freki.store.sealed import SealedStore
from wolf_service.errors import FailedPrecondition

log = logging.getLogger("freki.engine")


@dataclass(frozen=True)
class ModelLane:
    """One type-specific model and its open chunk collection."""

    model: str
    embedder: EmbeddingModel
    chunks: SealedStore
    collection: str


@dataclass(frozen=True)
class ModelStatus:
    """One embedding model as GetIndexStatus reports it."""

    model: str
    dimension: int
    collection: str
    document_count: int
    chunk_count: int
    document_types: tuple[str, ...]
    standard: bool
    available: bool


def chunk_collection_spec(settings: FrekiSettings, name: str, embedder: EmbeddingModel) -> CollectionSpec:
    """The spec of a chunk collection for ``embedder``'s vectors (payload indexes as configured)."""
    indexed = settings.store.indexed_metadata
    return CollectionSpec(
        name=name,
        dense_dim=embedder.dimension,
        embedding_model=embedder.identity.name,
        keyword_indexes=tuple(f"metadata.{k}" for k in indexed),
        float_indexes=tuple(f"{field}.{k}" for k in indexed for field in ("metadata_num", "metadata_date")),
    )


def open_model_lanes(
    settings: FrekiSettings, layout: EmbeddingLayout, load: Callable[[str], EmbeddingModel],
    open_store: Callable[[], SealedStore],
) -> tuple[list[ModelLane], EmbeddingLayout]:
    """Load every type-specific model of ``layout``; returns their lanes and the layout actually served.

    Raises:
        FailedPrecondition / any load error: a model failed and ``embedding_models_required`` is set.
    """
    lanes: list[ModelLane] = []
    failed: set[str] = set()
    for model in layout.models[1:]:
        try:
            embedder = load(model)
        except Exception as exc:
            types = [t for t, m in layout.routes if m == model]
            reason = str(exc)
            if settings.embedding_models_required:
                raise FailedPrecondition(
                    f"embedding_models (FREKI_EMBEDDING_MODELS): the model {model!r} for document types {types} "
                    f"did not load ({reason}); or unset embedding_models_required to embed those types with the "
                    "standard model") from exc
            log.warning("embedding model %r for document types %s (setting embedding_models) did not load (%s); "
                        "those types are embedded by the standard model %r", model, types, reason, layout.standard)
            failed.add(model)
            continue
        name = layout.collection_of(model)
        store = open_store()
        store.ensure_collection(chunk_collection_spec(settings, name, embedder))
        lanes.append(ModelLane(model, embedder, store, name))
    return lanes, layout.without(failed)


def model_statuses(
    configured: EmbeddingLayout, standard: EmbeddingModel, standard_chunks: SealedStore, lanes: list[ModelLane],
    registry: DocumentRegistry, tenant: str | None,
) -> list[ModelStatus]:
    """Every configured model with its collection, dimension and counts (of one tenant, or all)."""
    scope = [FieldMatch("tenant_id", (tenant,))] if tenant else []
    loaded = {lane.model: lane for lane in lanes}

    def documents(model: str) -> int:
        return registry.store.count([*scope, FieldMatch("embedding_model", (model,))])

    statuses = [ModelStatus(
        standard.identity.name, standard.dimension, configured.collection, documents(standard.identity.name),
        standard_chunks.count(scope), (), True, True)]
    for model in configured.models[1:]:
        types = tuple(t for t, m in configured.routes if m == model)
        lane = loaded.get(model)
        statuses.append(ModelStatus(
            model, lane.embedder.dimension if lane else 0, configured.collection_of(model), documents(model),
            lane.chunks.count(scope) if lane else 0, types, False, lane is not None))
    return statuses


def search_lanes(standard: EmbeddingModel, lanes: list[ModelLane]) -> tuple[Alignment, list[SearchLane]]:
    """The standard model's calibration and the retriever's other lanes: each type-specific model's
    collection, query embedding and calibration (``freki.embed.calibration``)."""
    standard_alignment, alignments = calibrators(standard, lanes)
    return standard_alignment, [SearchLane(lane.model, lane.embedder.embed_query, lane.chunks, calibrate)
                                for lane, calibrate in zip(lanes, alignments, strict=True)]


def calibrators(standard: EmbeddingModel, lanes: list[ModelLane]) -> tuple[Alignment, list[Alignment]]:
    """The standard model's cosine -> the thresholds' scale, and each lane's cosine -> that same scale."""
    if not lanes and standard.identity.name in PACKAGED_MODEL_NAMES:
        return Alignment(), []  # the reference model itself: nothing to measure
    own = CosineBackground.of(standard.embed, standard.embed_query)
    reference = reference_for(own)
    if reference != own:
        log.info("embedding model %r: unrelated texts' cosine %.3f ± %.3f, a question and its answer %.3f, far "
                 "from the %.3f / %.3f the score thresholds were set on; its scores are mapped onto that scale",
                 standard.identity.name, own.mean, own.sd, own.related, reference.mean, reference.related)
    result = []
    for lane in lanes:
        background = CosineBackground.of(lane.embedder.embed)
        log.info("embedding model %r: unrelated texts' cosine %.3f ± %.3f (standard model %.3f ± %.3f); its "
                 "scores are aligned to the standard model's", lane.model, background.mean, background.sd,
                 own.mean, own.sd)
        result.append(aligner(background, reference))
    return anchored(own, reference), result
