"""Benchmark: time to the first answer token and to the whole answer of GeriService.AnswerStream.

Embedded SmolLM2 (llguidance-constrained JSON) in an in-process Geri, called over real gRPC. Contexts are
built from ``../shared/eval/squad-answers/corpus.jsonl`` directly, without Freki (so retrieval time and
Freki's CPU use stay out of the figures): the question's gold paragraph scored 0.8, then up to
``--distractors`` other paragraphs of the same article at 0.6, 0.5, … — what a good retrieval returns.

Where the time to first answer token goes, per question: the same prompt through ``GenerateStream``
without a schema and ``max_tokens=1`` (prompt processing, plus the first token), and the number of tokens
the model writes before the answer text starts (the JSON prefix ``{"answered":true,"citations":[…],
"answer":"``, counted with the model's tokenizer) at the measured decode speed.

    .venv/bin/python -m scripts.bench.answer_stream --questions 8
    .venv/bin/python -m scripts.bench.answer_stream --questions 8 --threads 2 --json out.json
    .venv/bin/python -m scripts.bench.answer_stream --questions 8 --prompt-cache-entries 0
    .venv/bin/python -m scripts.bench.answer_stream --questions 8 --dtype float32
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scripts.common import SQUAD_ANSWERS_DIR

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import grpc
from wolf.v1 import common_pb2, geri_pb2, geri_pb2_grpc

from geri.answering.schema import system_prompt
from geri.answering.sources import number_sources
from geri.backends.embedded import EmbeddedBackend
from geri.server import build_server
from geri.settings import GeriSettings

DATA = SQUAD_ANSWERS_DIR


@dataclass(frozen=True)
class Sample:
    """One question's timings (seconds) and token counts."""

    question_id: str
    ttft_s: float
    total_s: float
    prompt_s: float
    prompt_tokens: int
    completion_tokens: int
    prefix_tokens: int
    deltas: int
    revised: bool
    extractive: bool


def contexts(count: int, distractors: int) -> list[tuple[str, str, list[common_pb2.RetrievedDocument]]]:
    """(id, question, context) for the first ``count`` answerable questions."""
    corpus = {d["_id"]: d for d in map(json.loads, (DATA / "corpus.jsonl").read_text().splitlines())}
    out = []
    for line in (DATA / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        if not q["answerable"] or q["gold_doc"] not in corpus:
            continue
        article = q["gold_doc"].split("_")[0]
        others = [d for key, d in corpus.items() if key.startswith(article + "_") and key != q["gold_doc"]]
        docs = [corpus[q["gold_doc"]], *others[:distractors]]
        out.append((q["_id"], q["question"], [
            common_pb2.RetrievedDocument(document_id=d["_id"], chunk_id=f"{d['_id']}#0", source=d["title"],
                                         content=d["text"], relevance_score=round(0.8 - 0.1 * i - 0.1 * (i > 0), 2))
            for i, d in enumerate(docs)]))
        if len(out) == count:
            break
    return out


def prefix_tokens(backend: EmbeddedBackend, json_text: str) -> int:
    """Tokens of the reply before the answer string's first character."""
    cut = json_text.find('"answer":"')
    prefix = json_text[: cut + len('"answer":"')] if cut >= 0 else json_text
    tokenizer = backend._loaded().tokenizer  # noqa: SLF001 - the benchmark measures the model's own tokens
    return len(tokenizer.encode(prefix, add_special_tokens=False))


def measure(stub: geri_pb2_grpc.GeriServiceStub, backend: EmbeddedBackend, qid: str, question: str,
            docs: list[common_pb2.RetrievedDocument]) -> Sample:
    """AnswerStream once, then the same prompt without a schema for one token."""
    request = geri_pb2.AnswerRequest(request=common_pb2.WolfRequest(
        request_id=qid, prompt=question, context=common_pb2.RAGContext(documents=docs)))
    started = time.perf_counter()
    first = None
    deltas = 0
    final: Any = None
    for event in stub.AnswerStream(request, timeout=600):
        if event.WhichOneof("event") == "text_delta":
            first = first if first is not None else time.perf_counter() - started
            deltas += 1
        else:
            final = event.final
    total = time.perf_counter() - started
    shown = [d for d in docs if d.relevance_score >= 0.35][:4]
    _, numbered = number_sources(shown)
    probe = common_pb2.WolfRequest(
        request_id=qid + "-prompt", model_type=common_pb2.LLM, prompt=question, context=numbered,
        tenant_id="prompt-probe",  # its own prompt cache: the answers' tenant keeps the previous answer's
        metadata=common_pb2.RequestMetadata(max_tokens=1, temperature=0.0),
        generation=common_pb2.GenerationOptions(system_prompt=system_prompt(False)))
    probe_started = time.perf_counter()
    prompt_s = total
    for _event in stub.GenerateStream(probe, timeout=600):
        prompt_s = min(prompt_s, time.perf_counter() - probe_started)
    llm = final.llm_response
    return Sample(qid, first if first is not None else total, total, prompt_s, llm.prompt_tokens,
                  llm.completion_tokens, prefix_tokens(backend, llm.json), deltas, final.answer.revised,
                  final.answer.extractive)


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--distractors", type=int, default=2, help="other paragraphs of the article per context")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (embedded_threads)")
    parser.add_argument("--prompt-cache-entries", type=int, default=4,
                        help="geri.embedded_prompt_cache_entries (0: every prompt processed in full)")
    parser.add_argument("--dtype", choices=["auto", "float32", "bfloat16"], default=None,
                        help="geri.embedded_dtype (default: the setting's, GERI_EMBEDDED_DTYPE or its default)")
    parser.add_argument("--json", type=Path, default=None, help="write the samples here")
    args = parser.parse_args()

    settings = GeriSettings(host="127.0.0.1", port=0, backend="embedded", embedded_threads=args.threads,
                            embedded_prompt_cache_entries=args.prompt_cache_entries,
                            **({"embedded_dtype": args.dtype} if args.dtype else {}))
    backend = EmbeddedBackend(settings)
    backend.prepare()
    handle = build_server(settings, backend)
    samples: list[Sample] = []
    try:
        with grpc.insecure_channel(handle.address) as channel:
            stub = geri_pb2_grpc.GeriServiceStub(channel)
            items = contexts(args.questions + 1, args.distractors)
            measure(stub, backend, *items[0])  # warm-up: first-call costs (allocations, caches) are not answers'
            for qid, question, docs in items[1:]:
                sample = measure(stub, backend, qid, question, docs)
                samples.append(sample)
                print(f"{qid}: first answer token {sample.ttft_s:.2f} s, answer {sample.total_s:.2f} s, prompt "
                      f"{sample.prompt_tokens} tokens in {sample.prompt_s:.2f} s, {sample.prefix_tokens} JSON "
                      f"tokens before the answer, {sample.completion_tokens} in all"
                      f"{', extractive' if sample.extractive else ''}{', revised' if sample.revised else ''}",
                      flush=True)
    finally:
        handle.stop(1.0)
        backend.close()
    decode = [(s.total_s - s.prompt_s) / max(s.completion_tokens - 1, 1) for s in samples]
    print(f"\n{len(samples)} questions, {args.distractors} distractors each")
    print(f"p50 time to first answer token: {p50([s.ttft_s for s in samples]):.2f} s")
    print(f"p50 whole answer:               {p50([s.total_s for s in samples]):.2f} s")
    print(f"p50 prompt processing (+1 token): {p50([s.prompt_s for s in samples]):.2f} s "
          f"for p50 {p50([float(s.prompt_tokens) for s in samples]):.0f} prompt tokens")
    print(f"p50 JSON tokens before the answer: {p50([float(s.prefix_tokens) for s in samples]):.0f}, "
          f"p50 decode {p50(decode) * 1000:.0f} ms/token")
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in samples], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
