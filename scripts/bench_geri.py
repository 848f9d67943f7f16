"""Benchmark: what Geri's gRPC streaming adds on top of its LLM backend.

Runs the same prompt (with a RAG context) through ``GeriService.GenerateStream`` on an
in-process server and directly through the same backend object, alternating, greedy decoding,
and prints the median time-to-first-token (TTFT) and decode speed of each plus Geri's overhead.
Goal: Geri adds <= 5 %. Figures on a shared CPU box are noisy; use several rounds.

    .venv/bin/python scripts/bench_geri.py [--rounds 5] [--max-tokens 64]
    .venv/bin/python scripts/bench_geri.py --backend ollama --ollama-host http://127.0.0.1:11434 --model llama3.2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "protos")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import grpc  # noqa: E402
from wolf.v1 import common_pb2, geri_pb2_grpc  # noqa: E402

from geri.backends import Backend, Completion, Delta, GenerationParams, create_backend  # noqa: E402
from geri.prompting import ContextDocument, fit_to_window  # noqa: E402
from geri.server import build_server  # noqa: E402
from geri.settings import GeriSettings  # noqa: E402

QUESTION = "Which TCP port does the Geri service listen on, and what does Geri do?"
DOCS = [
    ContextDocument("geri-networking", "The Geri service listens on TCP port 50051.", 0.92, "docs/geri.md"),
    ContextDocument("geri-role", "Geri generates answers with an LLM from the documents Freki retrieves.", 0.81),
    ContextDocument("odin", "Odin is the client and command-line tool of Wolfpack RAG.", 0.40),
]


@dataclass(frozen=True)
class Sample:
    """One generation: seconds to the first token, total seconds, and tokens generated."""

    ttft_s: float
    total_s: float
    tokens: int

    @property
    def tokens_per_s(self) -> float:
        """Decode speed after the first token (TTFT is reported separately)."""
        decode = self.total_s - self.ttft_s
        return (self.tokens - 1) / decode if self.tokens > 1 and decode > 0 else 0.0


def direct(backend: Backend, settings: GeriSettings, max_tokens: int) -> Sample:
    """Generate by calling the backend directly with the prompt Geri would build."""
    started = time.perf_counter()
    model = backend.resolve_model("")
    fitted = fit_to_window(
        system_prompt=settings.system_prompt, question=QUESTION, documents=DOCS, language="",
        window=backend.context_window(model), max_tokens=max_tokens,
        count_tokens=lambda m: backend.count_tokens(m, model),
    )
    first = 0.0
    tokens = 0
    for event in backend.generate(fitted.messages, GenerationParams(max_tokens, 0.0), model, threading.Event()):
        if isinstance(event, Delta) and event.text and not first:
            first = time.perf_counter() - started
        if isinstance(event, Completion):
            tokens = event.completion_tokens
    return Sample(first, time.perf_counter() - started, tokens)


def through_geri(stub: geri_pb2_grpc.GeriServiceStub, max_tokens: int) -> Sample:
    """Generate through Geri's gRPC stream."""
    request = common_pb2.WolfRequest(
        request_id="bench",
        model_type=common_pb2.LLM,
        prompt=QUESTION,
        context=common_pb2.RAGContext(
            documents=[
                common_pb2.RetrievedDocument(document_id=d.document_id, content=d.content,
                                             relevance_score=d.score, source=d.source)
                for d in DOCS
            ]
        ),
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0),
    )
    started = time.perf_counter()
    first = 0.0
    tokens = 0
    for event in stub.GenerateStream(request, timeout=600):
        kind = event.WhichOneof("event")
        if kind == "text_delta" and not first:
            first = time.perf_counter() - started
        elif kind == "final":
            tokens = event.final.llm_response.completion_tokens
    return Sample(first, time.perf_counter() - started, tokens)


def _report(name: str, samples: list[Sample]) -> tuple[float, float]:
    """Print median and best figures; the best run is least disturbed by other load on the box."""
    ttft = statistics.median(s.ttft_s for s in samples) * 1000
    speed = statistics.median(s.tokens_per_s for s in samples)
    best_ttft = min(s.ttft_s for s in samples) * 1000
    best_speed = max(s.tokens_per_s for s in samples)
    tokens = statistics.median(s.tokens for s in samples)
    print(
        f"  {name:<14} TTFT median {ttft:7.1f} ms (best {best_ttft:7.1f})   "
        f"decode median {speed:6.2f} tok/s (best {best_speed:6.2f})   {tokens:.0f} tokens"
    )
    return best_ttft, best_speed


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["embedded", "ollama"], default="embedded")
    parser.add_argument("--ollama-host", default="http://127.0.0.1:11434")
    parser.add_argument("--model", default="", help="Ollama model (default: GERI_OLLAMA_MODEL's default)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()

    overrides: dict[str, object] = {"host": "127.0.0.1", "port": 0, "backend": args.backend}
    if args.backend == "ollama":
        overrides["ollama_host"] = args.ollama_host
        if args.model:
            overrides["ollama_model"] = args.model
    settings = GeriSettings(**overrides)  # type: ignore[arg-type]
    backend = create_backend(settings)
    backend.prepare()
    handle = build_server(settings, backend)
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            direct(backend, settings, 8)  # warm-up: first-call costs are not what is measured
            through_geri(stub, 8)
            plain: list[Sample] = []
            served: list[Sample] = []
            for round_no in range(args.rounds):
                # Alternate the order so drift in machine load hits both sides alike.
                if round_no % 2:
                    served.append(through_geri(stub, args.max_tokens))
                    plain.append(direct(backend, settings, args.max_tokens))
                else:
                    plain.append(direct(backend, settings, args.max_tokens))
                    served.append(through_geri(stub, args.max_tokens))
                print(
                    f"round {round_no + 1}: direct {plain[-1].ttft_s * 1000:.0f} ms / "
                    f"{plain[-1].tokens_per_s:.2f} tok/s, Geri {served[-1].ttft_s * 1000:.0f} ms / "
                    f"{served[-1].tokens_per_s:.2f} tok/s",
                    flush=True,
                )
    finally:
        handle.stop(5)
        backend.close()

    print(f"Geri bench: backend={backend.kind} model={backend.default_model} rounds={args.rounds} "
          f"max_tokens={args.max_tokens} (greedy), cpu_count={os.cpu_count()}")
    d_ttft, d_speed = _report("direct", plain)
    g_ttft, g_speed = _report("through Geri", served)
    ttft_overhead = (g_ttft - d_ttft) / d_ttft * 100 if d_ttft else 0.0
    speed_overhead = (d_speed - g_speed) / d_speed * 100 if d_speed else 0.0
    print(
        f"  Geri overhead (best runs): TTFT {ttft_overhead:+.1f} %, decode speed {speed_overhead:+.1f} % "
        "(goal <= 5 %)"
    )


if __name__ == "__main__":
    main()
