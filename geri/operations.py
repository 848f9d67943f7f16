"""Geri's operational specifics: its metrics, audited RPCs and hot-reloadable settings.

The generic parts (interceptors, endpoint, reload machinery) live in
:mod:`wolf_service.service_ops`; this module says what is special about Geri.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from wolf.v1 import common_pb2, geri_pb2

from geri.backends.base import Backend
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
})


def _llm(message: Any) -> common_pb2.LLMResponse | None:
    """The LLMResponse of a Generate reply or of GenerateStream's final event (None for deltas)."""
    if isinstance(message, geri_pb2.GenerateEvent):
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


AUDITED: dict[str, AuditedRpc] = {
    "GeriService/Generate": AuditedRpc("geri.generate", _generation_target, _generation_details),
    "GeriService/GenerateStream": AuditedRpc("geri.generate_stream", _generation_target, _generation_details),
}


class BackendCollector(Collector):
    """Generations running right now, read from the backend's own counters at scrape time."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily("geri_active_generations", "Generations the backend is running",
                                  labels=["backend"])
        gauge.add_metric([self._backend.kind], float(self._backend.stats.active_generations))
        yield gauge


def install_metrics(metrics: ServiceMetrics, backend: Backend) -> None:
    """Register Geri's metrics: tokens generated and read per model, finish reasons, active generations."""
    generated = Counter("geri_tokens_generated", "Completion tokens generated", ["model"],
                        registry=metrics.registry)
    prompted = Counter("geri_prompt_tokens", "Prompt tokens sent to the model", ["model"],
                       registry=metrics.registry)
    finished = Counter("geri_generations", "Finished generations by finish reason", ["model", "finish_reason"],
                       registry=metrics.registry)

    def on_response(message: Any) -> None:
        llm = _llm(message)
        if llm is None:
            return
        model = llm.model_used or backend.default_model
        generated.labels(model).inc(llm.completion_tokens)
        prompted.labels(model).inc(llm.prompt_tokens)
        finished.labels(model, llm.finish_reason or "unknown").inc()

    metrics.observe_responses("GeriService/Generate", on_response)
    metrics.observe_responses("GeriService/GenerateStream", on_response)
    metrics.add_collector(BackendCollector(backend))
