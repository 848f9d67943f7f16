"""Wolfpack RAG end to end on a fresh machine: ``make demo`` (or ``.venv/bin/python -m scripts.demo``).

Starts Freki (retrieval) and Geri (generation, embedded SmolLM2 model) as subprocesses on free
ports, waits until both report SERVING on grpc.health.v1, indexes ``scripts/sample_corpus`` through
the Odin client, asks a question, prints the answer with its sources and timings, and stops both
services with SIGTERM — also on errors, Ctrl-C or SIGTERM to this script.

Options: ``--question``, ``--corpus``, ``--data-dir`` (default: a temporary directory, removed at
the end; ``.data/demo`` keeps the index), ``--startup-timeout``, ``--keep-running`` (leave the
services up for the ``odin`` CLI until Ctrl-C).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from odin_client import Answer, IndexResult, OdinClient, OdinError, OdinSettings
from odin_client.cli.render import render_answer
from scripts.common import REPO, SAMPLE_CORPUS
from scripts.services import Service, free_port, start_service, stop_service, wait_serving

DEFAULT_QUESTION = "Which port does the Hrafn Relay admin API listen on?"
DEFAULT_EXPECTED = "9427"


class Interrupted(Exception):
    """SIGTERM/SIGINT arrived; unwinds to the ``finally`` that stops the services."""


def run_demo(odin: OdinClient, corpus: Path, question: str, expected: str | None) -> Answer:
    """Index the corpus and ask the question through Odin, printing as it goes."""
    print(f"\nindexing {corpus.relative_to(REPO) if corpus.is_relative_to(REPO) else corpus} through Odin...")
    start = time.perf_counter()
    results = odin.index([corpus], stop_on_error=True)
    for result in results:
        if isinstance(result, IndexResult):
            print(f"  {result.outcome:<9} {result.source} -> {result.document_id} ({result.chunk_count} chunks)")
    print(f"indexed {len(results)} documents in {time.perf_counter() - start:.1f}s")
    status = odin.status()
    print(f"Freki index: {status.document_count} documents, {status.chunk_count} chunks, "
          f"{status.embedding_model} on {status.store_backend}")

    print(f"\nQ: {question}\nA: ", end="", flush=True)
    answer = odin.ask(question, top_k=3, max_tokens=96, temperature=0.0,
                      on_text=lambda delta: print(delta, end="", flush=True))
    print("\n" + render_answer(answer, include_text=False))
    if expected is not None:
        found = expected in answer.text
        print(f"check: answer {'mentions' if found else 'does NOT mention'} {expected!r}; top source "
              f"{answer.sources[0].source if answer.sources else '(none)'}")
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--question", default=DEFAULT_QUESTION)
    parser.add_argument("--corpus", type=Path, default=SAMPLE_CORPUS)
    parser.add_argument("--data-dir", type=Path, help="keep Freki's index here (default: temporary)")
    parser.add_argument("--startup-timeout", type=float, default=300.0)
    parser.add_argument("--keep-running", action="store_true", help="leave services up until Ctrl-C")
    args = parser.parse_args(argv)

    def interrupt(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, interrupt)

    temp_dir = None if args.data_dir else Path(tempfile.mkdtemp(prefix="wolfpack-demo-"))
    data_dir = (args.data_dir or temp_dir).resolve()
    (data_dir / "logs").mkdir(parents=True, exist_ok=True)
    services: list[Service] = []
    started = time.perf_counter()
    try:
        services.append(start_service("freki", "Freki (retrieval)", ["--data-dir", str(data_dir / "freki")],
                                      free_port(), data_dir / "logs"))
        services.append(start_service("geri", "Geri (generation)", [], free_port(), data_dir / "logs"))
        wait_serving(services, args.startup_timeout)
        settings = OdinSettings(freki_target=services[0].target, geri_target=services[1].target,
                                generate_deadline_s=600.0, index_deadline_s=600.0)
        with OdinClient(settings) as odin:
            expected = DEFAULT_EXPECTED if args.question == DEFAULT_QUESTION else None
            run_demo(odin, args.corpus.resolve(), args.question, expected)
        print(f"\ndemo finished in {time.perf_counter() - started:.1f}s")
        if args.keep_running:
            print(f"services are running; try:\n  ODIN_FREKI_TARGET={services[0].target} "
                  f"ODIN_GERI_TARGET={services[1].target} .venv/bin/odin ask \"{args.question}\"\n"
                  "press Ctrl-C to stop them")
            while all(s.proc.poll() is None for s in services):
                time.sleep(1)
        return 0
    except OdinError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    except RuntimeError as exc:
        print(f"\ndemo failed: {exc}", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as exc:
        print(f"\ninterrupted ({exc or 'Ctrl-C'}); stopping services", file=sys.stderr)
        return 130
    finally:
        # Further signals must not cut the clean shutdown short.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        for svc in reversed(services):
            stop_service(svc)
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
