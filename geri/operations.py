"""Geri's operational specifics: its metrics, audited RPCs and hot-reloadable settings.

The generic parts (interceptors, endpoint, reload machinery) live in
:mod:`wolf_service.service_ops`; this module says what is special about Geri.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from wolf.v1 import common_pb2, geri_pb2

from geri.routing import Router
from wolf_service.audit_interceptor import AuditedRpc
from wolf_service.metrics import ServiceMetrics

# Read from the live settings on every request (validation, prompting, the Ollama call).
# Anything else (ports, backend kind, model names, num_ctx, timeouts) needs a restart.
RELOADABLE = frozenset({
    "system_prompt",
    "default_max_tokens",
    "max_tokens_limit",
    "default_temperature",
    "ollama_options",
    "ollama_keep_alive",
    "ollama_token_margin",
    "answering",
    "context_metadata",
    "answer_cache",  # applied to the cache by a reload hook (AnswerPipeline.settings_reloaded)
})


def _llm(message: Any) -> common_pb2.LLMResponse | None:
    """The LLMResponse of a Generate or Answer reply or of a stream's final event (None for deltas, and for
    an answer that abstained without a generation)."""
    if isinstance(message, geri_pb2.GenerateEvent | geri_pb2.AnswerEvent):
        if message.WhichOneof("event") != "final":
            return None
        message = message.final
    return message.llm_response if message.HasField("llm_response") else None


def _generation_details(message: Any) -> dict[str, Any]:
    llm = _llm(message)
    if llm is None:
        return {}
    return {"model": llm.model_used, "prompt_tokens": llm.prompt_tokens,
            "completion_tokens": llm.completion_tokens, "finish_reason": llm.finish_reason}


def _generation_target(request: common_pb2.WolfRequest) -> str:
    return f"model={request.generation.model or 'default'}"


def _answer_target(request: geri_pb2.AnswerRequest | geri_pb2.RewriteQueryRequest) -> str:
    return _generation_target(request.request)


def _answer_details(message: Any) -> dict[str, Any]:
    final = message.final if isinstance(message, geri_pb2.AnswerEvent) else message
    if not isinstance(final, geri_pb2.AnswerResponse):
        return {}
    grounded = final.answer
    return {**_generation_details(final), "answered": grounded.answered, "citations": len(grounded.citations)}


def _session_target(request: Any) -> str:
    return f"session={request.session_id[:128]}"


AUDITED: dict[str, AuditedRpc] = {
    "GeriService/Generate": AuditedRpc("geri.generate", _generation_target, _generation_details),
    "GeriService/GenerateStream": AuditedRpc("geri.generate_stream", _generation_target, _generation_details),
    "GeriService/Answer": AuditedRpc("geri.answer", _answer_target, _answer_details),
    "GeriService/AnswerStream": AuditedRpc("geri.answer_stream", _answer_target, _answer_details),
    "GeriService/RewriteQuery": AuditedRpc("geri.rewrite_query", _answer_target,
                                           lambda r: {"rewritten": r.rewritten, "variants": len(r.variants)}),
    "GeriService/GetSession": AuditedRpc("geri.get_session", _session_target, lambda r: {"turns": len(r.turns)}),
    "GeriService/DeleteSession": AuditedRpc("geri.delete_session", _session_target,
                                            lambda r: {"deleted": bool(r.deleted)}),
    "GeriService/DeleteOwnerSessions": AuditedRpc(
        "gdpr.erase_owner_sessions", lambda q: f"owner={q.owner_id[:128]}",
        lambda r: {"sessions": r.sessions_deleted}),
}

# The API-key scope each RPC needs (wolf_service.auth); an RPC missing here needs "admin".
SCOPES: dict[str, str] = {
    "GeriService/Generate": "read",
    "GeriService/GenerateStream": "read",
    "GeriService/ListModels": "read",
    "GeriService/GetSession": "read",
    "GeriService/DeleteSession": "delete",
    "GeriService/DeleteOwnerSessions": "delete",
    "GeriService/Answer": "read",
    "GeriService/AnswerStream": "read",
    "GeriService/RewriteQuery": "read",
}

_STATES = {"closed": 0.0, "half_open": 1.0, "open": 2.0}


class BackendCollector(Collector):
    """Per model-list entry, read at scrape time: generations running, breaker state, last probe."""

    def __init__(self, router: Router) -> None:
        self._router = router

    def collect(self) -> Iterator[Metric]:
        labels = ["backend", "model", "priority"]
        active = GaugeMetricFamily("geri_active_generations", "Generations the backend is running", labels=labels)
        state = GaugeMetricFamily("geri_backend_breaker_state", "Circuit breaker: 0 closed, 1 half-open, 2 open",
                                  labels=labels)
        fallbacks = CounterMetricFamily(
            "geri_backend_precision_fallbacks", "Times the backend left bfloat16 for float32 because its logits "
            "were not finite (at the start-up self-check or during a request)", labels=labels)
        up = GaugeMetricFamily("geri_backend_up", "1 when the backend answered its last probe or call",
                               labels=labels)
        for route in self._router.routes:
            key = [route.backend.kind, route.config.name, str(route.priority)]
            active.add_metric(key, float(route.backend.stats.active_generations))
            state.add_metric(key, _STATES[route.breaker.state])
            up.add_metric(key, 1.0 if route.alive else 0.0)
            fallbacks.add_metric(key, float(route.backend.stats.precision_fallbacks))
        yield from (active, state, up, fallbacks)


def install_metrics(metrics: ServiceMetrics, router: Router) -> None:
    """Register Geri's metrics: tokens generated and read per model, finish reasons, active generations."""
    generated = Counter("geri_tokens_generated", "Completion tokens generated", ["model"],
                        registry=metrics.registry)
    prompted = Counter("geri_prompt_tokens", "Prompt tokens sent to the model", ["model"],
                       registry=metrics.registry)
    finished = Counter("geri_generations", "Finished generations by finish reason", ["model", "finish_reason"],
                       registry=metrics.registry)
    cached = Counter("geri_answer_cache_hits", "Grounded answers served from the answer cache (no generation)",
                     registry=metrics.registry)

    def on_response(message: Any) -> None:
        final = message.final if isinstance(message, geri_pb2.AnswerEvent) else message
        if isinstance(final, geri_pb2.AnswerResponse) and final.cache_hit:
            cached.inc()
            return
        llm = _llm(message)
        if llm is None:
            return
        model = llm.model_used or router.default_model
        generated.labels(model).inc(llm.completion_tokens)
        prompted.labels(model).inc(llm.prompt_tokens)
        finished.labels(model, llm.finish_reason or "unknown").inc()

    for method in ("Generate", "GenerateStream", "Answer", "AnswerStream"):
        metrics.observe_responses(f"GeriService/{method}", on_response)
    metrics.add_collector(BackendCollector(router))
