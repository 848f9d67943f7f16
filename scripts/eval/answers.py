"""Answer quality of Odin's grounded ``ask`` through the real services: Freki, Geri, Odin over gRPC.

Data: ../shared/eval/squad-answers (244 SQuAD paragraphs indexed; 300 answerable questions whose
paragraph is indexed, 150 unanswerable ones about articles that are not). Metrics:

* schema-valid rate: answers Geri returned as JSON valid for the answer schema (Odin parses every one);
* answer EM / F1 (SQuAD normalisation) on answerable questions that were answered, of the answer text Geri
  returned without its ``[n]`` markers; "rules EM / F1": the short answer the span rules alone make from the
  same citation (geri/answering/spans.py), i.e. ``answering.span_scorer: rules``, paired on the same answers;
* citation precision: share of citations naming the gold paragraph;
* abstention rate on unanswerable questions, false abstention rate on answerable ones;
* p50 / p90 seconds per answer (client wall time).

Backends: ``embedded`` (SmolLM2 in Geri, llguidance-constrained) and ``ollama`` (Geri's Ollama backend ->
ollama-proxy-plus -> llama.cpp's llama-server running the same SmolLM2 GGUF, which enforces the schema
with a grammar; build it once with ``make llama-server``). ``ollama-unconstrained`` puts `transformers
serve` (which ignores response_format) behind the proxy instead, to show what Geri's checks do then.

Abstention is Geri's gate (geri/answering/evidence.py: a score floor and score + weighted question-term
coverage of the best source), applied to what each question retrieved. ``--grow N`` indexes the paragraphs
among (N-1) x 244 distractor passages (``--distractors wiki``: Wikipedia lead sections, near-domain; or
``scifact``), so the gate is measured at several corpus sizes. ``--retrieval-only`` skips generation and
records what the gate sees per question; scripts/eval/tune_answer_gate.py chooses the gate's settings from such
records of the ``--split dev`` third (by a hash of the question id) at several sizes (decision 0191).

    .venv/bin/python -m scripts.eval.answers --backend embedded --split test --grow 6
    .venv/bin/python -m scripts.eval.answers --retrieval-only --split dev --grow 6 --min-score 0 --out dev-6.jsonl
    .venv/bin/python -m scripts.eval.answers --sweep dev-6.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scripts.common import REPO

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from geri.answering.evidence import Gate
from geri.server import build_server
from geri.settings import GeriSettings
from odin_client import OdinClient, OdinError, OdinSettings
from scripts.evalsets.answer_records import cited_of, evidence_of, gate_answers, model_answer, short_of
from scripts.evalsets.harness import data_dir_for, eval_settings, freki_server, index_corpus, running_freki
from scripts.evalsets.squad_answers import f1, load, normalize, split_of

_MARKER = re.compile(r"\s*\[\d+\]")
LLAMA = Path(os.environ.get("LLAMA_SERVER", REPO / ".tools" / "llama-server" / "llama-server"))


@contextlib.contextmanager
def geri_for(backend: str, scoring: bool = False) -> Iterator[str]:
    """A Geri serving ``backend``; yields its address. With ``scoring``, a remote backend gets the embedded
    model beside it as ``answering.scoring_model`` (it is also the model list's fallback)."""
    from tests.local_servers_support import free_port, start_ollama_proxy, wait_http
    from tests.local_servers_support import stop as _stop

    procs: list[subprocess.Popen[bytes]] = []
    logs = Path(tempfile.mkdtemp(prefix="eval-answers-"))
    settings: dict[str, Any] = {"host": "127.0.0.1", "port": 0, "backend": "embedded"}
    try:
        if backend != "embedded":
            from geri.backends.embedded import default_model_path

            port = free_port()
            if backend == "ollama":
                if not LLAMA.exists():
                    raise SystemExit(f"{LLAMA} not found: run `make llama-server` or set LLAMA_SERVER")
                env = {**os.environ, "LD_LIBRARY_PATH": str(LLAMA.parent)}
                cmd = [str(LLAMA), "-m", str(default_model_path()), "--host", "127.0.0.1", "--port", str(port),
                       "-t", "1", "--alias", "smollm2", "-c", "8192"]
                procs.append(subprocess.Popen(cmd, env=env, stdout=(logs / "llama.log").open("wb"),
                                              stderr=subprocess.STDOUT))
                wait_http(f"http://127.0.0.1:{port}/health", procs[-1], 120, logs / "llama.log")
            else:  # ollama-unconstrained: transformers serve, which ignores response_format
                from tests.geri.geri_servers_support import HF_DIR_NAME, VENV_BIN, export_hf_checkpoint

                checkpoint = export_hf_checkpoint(Path(tempfile.gettempdir()) / "wolfpack-geri-hf" / HF_DIR_NAME)
                procs.append(subprocess.Popen(
                    [str(VENV_BIN / "transformers"), "serve", "--host", "127.0.0.1", "--port", str(port),
                     "--device", "cpu", HF_DIR_NAME], cwd=checkpoint.parent,
                    env={**os.environ, "HF_HUB_CACHE": str(logs)}, stdout=(logs / "serve.log").open("wb"),
                    stderr=subprocess.STDOUT))
                wait_http(f"http://127.0.0.1:{port}/health", procs[-1], 180, logs / "serve.log")
            proxy_port = free_port()
            procs.append(start_ollama_proxy(f"http://127.0.0.1:{port}/v1", proxy_port, logs / "proxy.log",
                                            "local/smollm2"))
            settings.update(backend="ollama", ollama_host=f"http://127.0.0.1:{proxy_port}",
                            ollama_model="local/smollm2")
            if scoring:
                settings.update(models=[{"name": "local/smollm2", "backend": "ollama",
                                         "base_url": f"http://127.0.0.1:{proxy_port}"},
                                        {"name": "smollm2-135m-instruct", "backend": "embedded"}],
                                answering={"scoring_model": "smollm2-135m-instruct"})
        handle = build_server(GeriSettings(**settings))
        try:
            yield handle.address
        finally:
            handle.stop(2.0)
    finally:
        for proc in reversed(procs):
            _stop(proc)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Ask every selected question; each record is appended to ``args.out`` as it is made (a long run cut
    short keeps what it did)."""
    records: list[dict[str, Any]] = []
    out = args.out.open("w", encoding="utf-8") if args.out else None

    def keep(record: dict[str, Any]) -> None:
        records.append(record)
        if out is not None:
            out.write(json.dumps(record) + "\n")
            out.flush()

    corpus, questions = load(args.grow, args.distractors)
    questions = [q for q in questions if args.split == "all" or split_of(q["_id"]) == args.split]
    if args.limit:
        answerable = [q for q in questions if q["answerable"]][: args.limit * 2 // 3]
        questions = answerable + [q for q in questions if not q["answerable"]][: args.limit - len(answerable)]
    name = "squad-answers" if args.grow == 1 else f"squad-answers-{args.distractors}{args.grow}"
    data_dir = data_dir_for(name, corpus, eval_settings(Path(".")))
    with running_freki(eval_settings(data_dir)) as stub:
        stats = index_corpus(stub, corpus, data_dir)
    print(f"indexed {len(corpus)} paragraphs ({'cached' if stats.get('cached') else 'fresh'}) -> {data_dir}",
          flush=True)
    geri_cm = contextlib.nullcontext("127.0.0.1:1") if args.retrieval_only \
        else geri_for(args.backend, args.scoring_model)
    with freki_server(eval_settings(data_dir)) as freki, geri_cm as geri:
        odin = OdinSettings(freki_target=freki, geri_target=geri, generate_deadline_s=600,
                            answer_min_score=args.min_score, answer_model_abstains=args.model_abstains == "yes")
        with OdinClient(odin) as client:
            for i, q in enumerate(questions, 1):
                started = time.perf_counter()
                record: dict[str, Any] = {"id": q["_id"], "answerable": q["answerable"], "gold": q["gold_doc"]}
                if args.retrieval_only:
                    found = client.retrieve(q["question"], top_k=args.top_k).sources
                    record.update(best_score=max((s.score for s in found), default=0.0), answered=True,
                                  top_doc=found[0].document_id if found else "", cited=[], schema_valid=True,
                                  f1=0.0, em=0.0, **evidence_of(q["question"], found, odin.answer_max_sources))
                    if args.passages:  # a deeper list, to study the gate offline (scripts/eval/gate_study.py)
                        deep = client.retrieve(q["question"], top_k=args.passages).sources
                        record.update(question=q["question"], passages=[
                            (s.document_id, round(s.score, 4), s.content) for s in deep])
                    record["seconds"] = time.perf_counter() - started
                    keep(record)
                    continue
                try:
                    answer = client.ask(q["question"], top_k=args.top_k)
                except OdinError as exc:
                    record.update(error=f"{exc.code}: {exc}"[:300])
                else:
                    gen = answer.generation
                    short, short_quote = short_of(q["question"], answer)
                    phrase = _MARKER.sub("", answer.text).strip()
                    record.update(
                        short=short, short_quote=short_quote,
                        short_f1=max((f1(short, a) for a in q["answers"]), default=0.0) if answer.answered else 0.0,
                        short_em=float(any(normalize(short) == normalize(a) for a in q["answers"])),
                        answered=answer.answered, reason=answer.reason, text=answer.text,
                        best_score=max((s.score for s in answer.sources), default=0.0),
                        top_doc=answer.sources[0].document_id if answer.sources else "",
                        cited=[c.document_id for c in answer.citations], schema_valid=bool(gen and gen.json),
                        question=q["question"], quotes=[c.quote for c in answer.citations],
                        sources=[(s.document_id, round(s.score, 4)) for s in answer.sources[:5]],
                        extractive=answer.extractive, model_answer=model_answer(gen),
                        generated=gen is not None, backend=gen.backend if gen else "",
                        f1=max((f1(phrase, a) for a in q["answers"]), default=0.0) if answer.answered else 0.0,
                        em=float(any(normalize(phrase) == normalize(a) for a in q["answers"])),
                        **evidence_of(q["question"], answer.sources, odin.answer_max_sources),
                        answers=q["answers"], **cited_of(answer),
                    )
                record["seconds"] = time.perf_counter() - started
                keep(record)
                if i % 25 == 0:
                    print(f"  {i}/{len(questions)} questions", flush=True)
    if out is not None:
        out.close()
    return records


def report(records: list[dict[str, Any]], gate: Gate | None = None) -> dict[str, float]:
    """Metrics over ``records``; with ``gate``, retrieval-only questions it would not answer count as abstained."""
    def abstained(r: dict[str, Any]) -> bool:
        if "error" in r:
            return False
        # Geri gated what it answered itself (after its source rerank); only retrieval-only records, which
        # carry no "generated", are gated here, on Freki's order.
        return (not r["answered"]) or (gate is not None and "generated" not in r and not gate_answers(r, gate))

    answerable = [r for r in records if r["answerable"]]
    unanswerable = [r for r in records if not r["answerable"]]
    answered = [r for r in answerable if "error" not in r and not abstained(r)]
    generated = [r for r in records if r.get("generated")]
    cited = [d == r["gold"] for r in answered for d in r["cited"]]
    return {
        "questions": len(records),
        "errors": sum("error" in r for r in records),
        "schema_valid": sum(r["schema_valid"] for r in generated) / max(1, len(generated)),
        "em": sum(r["em"] for r in answered) / max(1, len(answered)),
        "f1": sum(r["f1"] for r in answered) / max(1, len(answered)),
        "short_em": sum(r.get("short_em", 0.0) for r in answered) / max(1, len(answered)),
        "short_f1": sum(r.get("short_f1", 0.0) for r in answered) / max(1, len(answered)),
        "citation_precision": sum(cited) / max(1, len(cited)),
        "abstention": sum(abstained(r) for r in unanswerable) / max(1, len(unanswerable)),
        "false_abstention": sum(abstained(r) for r in answerable) / max(1, len(answerable)),
        "p50_s": statistics.median(r["seconds"] for r in records) if records else 0.0,
        "p90_s": statistics.quantiles([r["seconds"] for r in records], n=10)[-1] if len(records) > 1 else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=["embedded", "ollama", "ollama-unconstrained"], default="embedded")
    parser.add_argument("--scoring-model", action="store_true",
                        help="a remote backend scores with the embedded model beside it (answering.scoring_model)")
    parser.add_argument("--split", choices=["dev", "test", "all"], default="test")
    parser.add_argument("--limit", type=int, default=0, help="at most N questions (2/3 answerable)")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--grow", type=int, default=1, metavar="N",
                        help="index N times as many documents: the SQuAD paragraphs among distractors")
    parser.add_argument("--distractors", choices=["wiki", "scifact"], default="wiki",
                        help="wiki: Wikipedia lead sections (near-domain); scifact: SciFact abstracts")
    parser.add_argument("--retrieval-only", action="store_true",
                        help="no generation: record what the answer gate sees (scores, coverage) per question")
    parser.add_argument("--passages", type=int, default=0, metavar="N",
                        help="with --retrieval-only: also record the question and its top N passages")
    parser.add_argument("--min-score", type=float, default=GeriSettings().answering.min_score)
    parser.add_argument("--min-evidence", type=float, default=GeriSettings().answering.min_evidence,
                        help="the gate's floor on score + coverage (Geri's answering.min_evidence), applied to "
                        "the records")
    parser.add_argument("--model-abstains", choices=["yes", "no"],
                        default="yes" if OdinSettings().answer_model_abstains else "no",
                        help="may the model say the sources are silent (answer_model_abstains)")
    parser.add_argument("--out", type=Path, help="write per-question records (JSON lines)")
    parser.add_argument("--sweep", type=Path, help="print metrics per threshold from a records file")
    parser.add_argument("--report", type=Path, help="print the metrics of a records file (e.g. a run cut short)")
    args = parser.parse_args()
    if args.sweep:
        records = [json.loads(line) for line in args.sweep.read_text().splitlines()]
        if any("generated" in r for r in records):
            parser.error(f"--sweep needs records of a --retrieval-only run: Geri gated the answers in {args.sweep} "
                         "itself, so no threshold applied here changes them")
        print(f"min_evidence {args.min_evidence}\n| threshold | abstention | false abstention | citation precision "
              "| F1 |\n|---|---|---|---|---|")
        for t in [x / 100 for x in range(0, 61, 5)]:
            m = report(records, Gate(t, args.min_evidence))
            print(f"| {t:.2f} | {m['abstention']:.3f} | {m['false_abstention']:.3f} | "
                  f"{m['citation_precision']:.3f} | {m['f1']:.3f} |")
        return
    if args.report:
        print_table(args, [json.loads(line) for line in args.report.read_text().splitlines()])
        return
    print(f"backend={args.backend} split={args.split} grow={args.grow} distractors={args.distractors} "
          f"min_score={args.min_score} "
          f"model_abstains={args.model_abstains} load={os.getloadavg()[0]:.2f}")
    print_table(args, run(args))


def print_table(args: argparse.Namespace, records: list[dict[str, Any]]) -> None:
    """The metrics of ``records`` as one Markdown table row, with the gate of ``args``."""
    # Geri's gate, applied to what each question retrieved (the same decision Geri makes on the same sources).
    m = report(records, Gate(args.min_score, args.min_evidence))
    if any("generated" in r for r in records):
        print("\ngate: Geri's own (its answering settings, after its source rerank)")
    else:
        print(f"\ngate: answer_min_score {args.min_score}, min_evidence {args.min_evidence} (Freki's order)")
    print("| backend | corpus | questions | errors | schema-valid | EM | F1 | rules EM / F1 | citation precision | "
          "abstention (unanswerable) | false abstention | p50 s | p90 s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.backend} | {args.grow}x {args.distractors if args.grow > 1 else ''} | {m['questions']} | "
          f"{m['errors']} | {m['schema_valid']:.3f} | {m['em']:.3f} | {m['f1']:.3f} | "
          f"{m['short_em']:.3f} / {m['short_f1']:.3f} | "
          f"{m['citation_precision']:.3f} | {m['abstention']:.3f} | {m['false_abstention']:.3f} | "
          f"{m['p50_s']:.1f} | {m['p90_s']:.1f} |")


if __name__ == "__main__":
    main()
