"""Benchmark: what Geri adds on top of its LLM backend, per backend kind; and constrained decoding's cost.

For each backend the same prompt (with a RAG context, as Geri builds it) goes alternately through
``GeriService.GenerateStream`` on an in-process server and *directly* to the model: the embedded model
object itself, or the Ollama-protocol / OpenAI-compatible server through its official client. Greedy
decoding; median and best time-to-first-token (TTFT) and decode speed; Geri's overhead on the best runs
(the runs least disturbed by other load). Goal: Geri adds <= 5 %.

``--start-servers`` starts this box's real servers: ``transformers serve`` (OpenAI-compatible) with the
packaged SmolLM2, and ollama-proxy-plus (Ollama protocol) in front of it. ``--constrained`` measures
SmolLM2's speed with no constraint and with llguidance (and xgrammar, when installed) on a JSON schema.

    .venv/bin/python -m scripts.bench.geri --backends embedded,ollama,openai --start-servers --rounds 5
    .venv/bin/python -m scripts.bench.geri --backends ollama,openai --llama-server --rounds 9
    .venv/bin/python -m scripts.bench.geri --backends ollama --ollama-host http://127.0.0.1:11434 --model llama3.2
    .venv/bin/python -m scripts.bench.geri --constrained
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import grpc
from wolf.v1 import common_pb2, geri_pb2_grpc

from geri.backends import Backend, ChatMessage, Completion, Delta, GenerationParams, create_backend
from geri.prompting import ContextDocument, fit_to_window
from geri.server import build_server
from geri.settings import GeriSettings, ModelRoute
from scripts.bench.llm_servers import llama_servers, real_servers

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


def prompt_messages(backend: Backend, settings: GeriSettings, max_tokens: int) -> list[ChatMessage]:
    """The messages Geri builds for QUESTION and DOCS, so both sides send the same prompt."""
    model = backend.resolve_model("")
    return fit_to_window(system_prompt=settings.system_prompt, question=QUESTION, documents=DOCS, language="",
                         window=backend.context_window(model), max_tokens=max_tokens,
                         count_tokens=lambda m: backend.count_tokens(m, model)).messages


def timed(stream: Iterator[tuple[bool, int]]) -> Sample:
    """Time a stream of (is_text, tokens_so_far) events."""
    started = time.perf_counter()
    first, tokens = 0.0, 0
    for is_text, count in stream:
        if is_text and not first:
            first = time.perf_counter() - started
        tokens = max(tokens, count)
    return Sample(first, time.perf_counter() - started, tokens)


def direct_embedded(backend: Backend, messages: list[ChatMessage], max_tokens: int) -> Iterator[tuple[bool, int]]:
    model = backend.resolve_model("")
    for event in backend.generate(messages, GenerationParams(max_tokens, 0.0), model, threading.Event()):
        if isinstance(event, Delta):
            yield bool(event.text), 0
        elif isinstance(event, Completion):
            yield False, event.completion_tokens


@functools.cache
def _ollama_client(host: str):  # type: ignore[no-untyped-def]
    """One client per host, reused like Geri's own (a warm connection, no per-call construction)."""
    import ollama

    return ollama.Client(host=host)


@functools.cache
def _openai_client(base_url: str):  # type: ignore[no-untyped-def]
    import openai

    return openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)


def direct_ollama(host: str, model: str, messages: list[ChatMessage], max_tokens: int) -> Iterator[tuple[bool, int]]:
    client = _ollama_client(host)
    chunks = 0
    for part in client.chat(model=model, messages=[{"role": m.role, "content": m.content} for m in messages],
                            options={"num_predict": max_tokens, "temperature": 0.0}, stream=True):
        chunks += bool(part.message.content)
        yield bool(part.message.content), int(part.eval_count or 0) if part.done else chunks


def direct_openai(base_url: str, model: str, messages: list[ChatMessage], max_tokens: int
                  ) -> Iterator[tuple[bool, int]]:
    client = _openai_client(base_url)
    chunks = 0
    for chunk in client.chat.completions.create(
            model=model, messages=[{"role": m.role, "content": m.content} for m in messages],  # type: ignore[misc]
            max_tokens=max_tokens, temperature=0.0, stream=True, stream_options={"include_usage": True}):
        text = chunk.choices[0].delta.content if chunk.choices else ""
        chunks += bool(text)
        yield bool(text), int(chunk.usage.completion_tokens) if chunk.usage else chunks


def through_geri(stub: geri_pb2_grpc.GeriServiceStub, max_tokens: int) -> Iterator[tuple[bool, int]]:
    request = common_pb2.WolfRequest(
        request_id="bench", model_type=common_pb2.LLM, prompt=QUESTION,
        context=common_pb2.RAGContext(documents=[
            common_pb2.RetrievedDocument(document_id=d.document_id, content=d.content, relevance_score=d.score,
                                         source=d.source) for d in DOCS]),
        metadata=common_pb2.RequestMetadata(max_tokens=max_tokens, temperature=0.0),
    )
    for event in stub.GenerateStream(request, timeout=600):
        kind = event.WhichOneof("event")
        yield kind == "text_delta", event.final.llm_response.completion_tokens if kind == "final" else 0


def _report(name: str, samples: list[Sample]) -> tuple[float, float]:
    ttft = statistics.median(s.ttft_s for s in samples) * 1000
    speed = statistics.median(s.tokens_per_s for s in samples)
    best_ttft, best_speed = min(s.ttft_s for s in samples) * 1000, max(s.tokens_per_s for s in samples)
    print(f"  {name:<14} TTFT median {ttft:7.1f} ms (best {best_ttft:7.1f})   decode median {speed:6.2f} tok/s "
          f"(best {best_speed:6.2f})   {statistics.median(s.tokens for s in samples):.0f} tokens")
    return best_ttft, best_speed


def compare(label: str, settings: GeriSettings, direct: Callable[[list[ChatMessage], int], Iterator[tuple[bool, int]]],
            rounds: int, max_tokens: int) -> tuple[str, float, float]:
    """Alternate direct and through-Geri runs; print the figures; return (label, TTFT %, decode %)."""
    backend = create_backend(settings)
    backend.prepare()
    messages = prompt_messages(backend, settings, max_tokens)
    handle = build_server(settings, backend)
    plain: list[Sample] = []
    served: list[Sample] = []
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            timed(direct(messages, 8))  # warm-up: first-call costs are not what is measured
            timed(through_geri(stub, 8))
            for round_no in range(rounds):
                # Alternate the order so drift in machine load hits both sides alike.
                pair = [lambda: plain.append(timed(direct(messages, max_tokens))),
                        lambda: served.append(timed(through_geri(stub, max_tokens)))]
                for run in pair[:: -1 if round_no % 2 else 1]:
                    run()
                print(f"  [{label}] round {round_no + 1}: direct {plain[-1].ttft_s * 1000:.0f} ms / "
                      f"{plain[-1].tokens_per_s:.2f} tok/s, Geri {served[-1].ttft_s * 1000:.0f} ms / "
                      f"{served[-1].tokens_per_s:.2f} tok/s", flush=True)
    finally:
        handle.stop(5)
        backend.close()
    print(f"{label}: model={backend.default_model} rounds={rounds} max_tokens={max_tokens} (greedy)")
    d_ttft, d_speed = _report("direct", plain)
    g_ttft, g_speed = _report("through Geri", served)
    return label, (g_ttft - d_ttft) / d_ttft * 100, (d_speed - g_speed) / d_speed * 100


def bench_constrained(max_tokens: int) -> None:
    """Unconstrained vs schema-constrained decoding of the embedded model, same prompt."""
    import torch
    from transformers import LogitsProcessorList

    from geri.backends.constrained import JsonSchemaConstraint
    from geri.backends.embedded import default_model_path
    from geri.backends.loaded_model import load_model

    loaded = load_model(default_model_path())
    cited = {"type": "array", "maxItems": 3, "items": {"enum": [d.document_id for d in DOCS]}}
    schema = {"type": "object", "additionalProperties": False, "required": ["answer", "citations", "confidence"],
              "properties": {"answer": {"type": "string", "maxLength": 80}, "citations": cited,
                             "confidence": {"type": "number", "minimum": 0, "maximum": 1}}}
    settings = GeriSettings()
    messages = fit_to_window(system_prompt=settings.system_prompt, question=QUESTION, documents=DOCS, language="",
                             window=2048, max_tokens=max_tokens, count_tokens=lambda m: len(loaded.encode_chat(m))
                             ).messages
    ids = torch.tensor([loaded.encode_chat(messages)])
    makers: dict[str, Callable[[], list[object]]] = {
        "none": lambda: [], "llguidance": lambda: [JsonSchemaConstraint(loaded.grammar_tokenizer(), schema)]}
    with contextlib.suppress(ImportError):
        import xgrammar  # optional: not a dependency

        def xgr() -> list[object]:
            info = xgrammar.TokenizerInfo.from_huggingface(loaded.tokenizer, vocab_size=loaded.model.config.vocab_size)
            from xgrammar.contrib.hf import LogitsProcessor

            return [LogitsProcessor(xgrammar.GrammarCompiler(info).compile_json_schema(json.dumps(schema)))]
        makers["xgrammar"] = xgr
    loaded.grammar_tokenizer()  # built once per model, not per request
    print(f"constrained decoding: SmolLM2-135M, greedy, up to {max_tokens} tokens, best of 3")
    for name, make in makers.items():
        best: tuple[float, float, int, str] | None = None
        for _ in range(3):
            t0 = time.perf_counter()
            processors = LogitsProcessorList(make())  # type: ignore[arg-type]
            t1 = time.perf_counter()
            out = loaded.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens,
                                        do_sample=False, logits_processor=processors,
                                        pad_token_id=loaded.tokenizer.eos_token_id)
            t2 = time.perf_counter()
            n = int(out.shape[1] - ids.shape[1])
            text = loaded.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)
            if best is None or t2 - t1 < best[1]:
                best = (t1 - t0, t2 - t1, n, text)
        assert best is not None
        setup, total, n, text = best
        try:
            import jsonschema

            jsonschema.validate(json.loads(text), schema)
            valid = "valid"
        except Exception:
            valid = "not valid"
        print(f"  {name:<11} setup {setup * 1000:6.0f} ms  {n:3d} tokens  {n / total:5.1f} tok/s  {valid}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="embedded", help="comma list of embedded, ollama, openai")
    parser.add_argument("--start-servers", action="store_true", help="start transformers serve + ollama-proxy")
    parser.add_argument("--llama-server", action="store_true",
                        help="start llama.cpp's llama-server + ollama-proxy instead (make llama-server)")
    parser.add_argument("--ollama-host", default="http://127.0.0.1:11434")
    parser.add_argument("--openai-base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="", help="model of the ollama/openai backends")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--constrained", action="store_true", help="only the constrained-decoding comparison")
    args = parser.parse_args()
    print(f"cpu_count={os.cpu_count()} load={os.getloadavg()[0]:.2f}")
    if args.constrained:
        bench_constrained(args.max_tokens)
        return
    servers = llama_servers() if args.llama_server else real_servers() if args.start_servers else None
    with servers or contextlib.nullcontext(
            (args.openai_base_url, args.ollama_host, args.model)) as (openai_url, ollama_host, model):
        results = []
        base = {"host": "127.0.0.1", "port": 0}
        for kind in args.backends.split(","):
            ollama_model = model or "llama3.2"
            if kind == "embedded":
                settings = GeriSettings(**base, backend="embedded")  # type: ignore[arg-type]
                embedded = create_backend(settings)
                embedded.prepare()
                results.append(compare("embedded", settings,
                                       lambda m, n, b=embedded: direct_embedded(b, m, n), args.rounds, args.max_tokens))
                embedded.close()
            elif kind == "ollama":
                settings = GeriSettings(**base, backend="ollama", ollama_host=ollama_host,  # type: ignore[arg-type]
                                        ollama_model=ollama_model)
                results.append(compare("ollama-protocol", settings,
                                       lambda m, n, om=ollama_model: direct_ollama(ollama_host, om, m, n),
                                       args.rounds, args.max_tokens))
            elif kind == "openai":
                served = model.split("/")[-1] or "smollm2"
                route = ModelRoute(name="bench", backend="openai", model=served, base_url=openai_url)
                settings = GeriSettings(**base, models=[route])  # type: ignore[arg-type]
                results.append(compare("openai-compatible", settings,
                                       lambda m, n, sm=served: direct_openai(openai_url, sm, m, n),
                                       args.rounds, args.max_tokens))
    print("\n| backend | TTFT overhead | decode-speed overhead |\n|---|---|---|")
    for label, ttft, speed in results:
        print(f"| {label} | {ttft:+.1f} % | {speed:+.1f} % |")
    print("(best runs; goal <= 5 %; negative = Geri was faster, i.e. within noise)")


if __name__ == "__main__":
    main()
