"""The embedding micro-batcher under hostile texts: how many calls fail, how many encoder passes and texts it costs.

Prints figures; asserts nothing. Threads call ``QueryBatcher.encode_many`` with random urgency and texts of 1-50
characters; a share of the texts carries a mark that makes the (real, packaged) encoder raise — the encoder is
wrapped at the seam, so the failure is ours but every good pass is real. Each call's rows are checked against
its texts encoded alone (cosine > 0.999: no wrong rows). ``--late`` makes a failing pass do the real work first
(the worst case: a failure at the end of the pass). ``--batcher FILE`` runs another version of
``freki/embed/query_batching.py`` (e.g. ``git show b6e5d1a:freki/embed/query_batching.py > /tmp/old.py``).

    .venv/bin/python -m scripts.bench.batcher_faults --bad 0.05 [--single --threads 64 --calls 20] [--late]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import string
import sys
import threading
import time
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from freki.embed import query_batching
from freki.embed.embedder import Embedder

BAD = "\u2620"


def load_batcher(path: str | None) -> ModuleType:
    """This checkout's query_batching, or the module at ``path``."""
    if path is None:
        return query_batching
    spec = importlib.util.spec_from_file_location("other_query_batching", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bad", type=float, default=0.05, help="share of texts that make the encoder raise")
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--calls", type=int, default=40, help="calls per thread")
    ap.add_argument("--single", action="store_true", help="one text per call (queries); else 1-3")
    ap.add_argument("--late", action="store_true", help="a failing pass does the real work before it raises")
    ap.add_argument("--batcher", help="another query_batching.py to run instead of this checkout's")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    model = Embedder("all-MiniLM-L6-v2")
    real = model._encoder.encode
    counts = {"passes": 0, "texts": 0, "failed": 0}

    def hostile(texts: Sequence[str], batch_size: int) -> np.ndarray:
        counts["passes"] += 1
        counts["texts"] += len(texts)
        if any(BAD in t for t in texts):
            counts["failed"] += 1
            if args.late:
                real([t.replace(BAD, "x") for t in texts], batch_size)
            raise ValueError("hostile text")
        return real(texts, batch_size)

    rng = random.Random(args.seed)

    def text() -> str:
        s = "".join(rng.choice(string.ascii_letters + " ") for _ in range(rng.randint(1, 50)))
        return s[:-1] + BAD if rng.random() < args.bad else s

    plans = [[([text() for _ in range(1 if args.single else rng.choice([1, 1, 1, 2, 3]))], rng.random() < 0.5)
              for _ in range(args.calls)] for _ in range(args.threads)]
    alone = {t: real([t], 32)[0] for plan in plans for texts, _ in plan for t in texts if BAD not in t}
    model._encoder.encode = hostile  # type: ignore[method-assign]
    batcher: Any = load_batcher(args.batcher).QueryBatcher(model._encode, max_batch=64)
    tally = {"good_ok": 0, "good_failed": 0, "bad_failed": 0, "bad_ok": 0, "wrong_rows": 0}
    lock = threading.Lock()

    def work(plan: list[tuple[list[str], bool]]) -> None:
        for texts, urgent in plan:
            bad = any(BAD in t for t in texts)
            try:
                rows = batcher.encode_many(texts, urgent=urgent)
            except ValueError:
                with lock:
                    tally["bad_failed" if bad else "good_failed"] += 1
                continue
            right = rows.shape[0] == len(texts) and all(
                float(np.dot(rows[i], alone[t])) > 0.999 for i, t in enumerate(texts) if not bad)
            with lock:
                tally["bad_ok" if bad else "good_ok"] += 1
                tally["wrong_rows"] += not right

    threads = [threading.Thread(target=work, args=(plan,)) for plan in plans]
    cpu, wall = time.process_time(), time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    calls = args.threads * args.calls
    n_texts = sum(len(texts) for plan in plans for texts, _ in plan)
    failed = tally["good_failed"] + tally["bad_failed"]
    print(f"batcher={args.batcher or 'this checkout'} bad={args.bad} late={args.late} threads={args.threads} "
          f"calls={calls} hung={sum(t.is_alive() for t in threads)}")
    print(f"  calls failed {failed}/{calls} = {failed / calls:.1%} (good calls failed {tally['good_failed']}, "
          f"bad calls served {tally['bad_ok']}); wrong rows {tally['wrong_rows']}")
    print(f"  encoder passes {counts['passes']} ({counts['passes'] / calls:.2f} per call; {counts['failed']} failed); "
          f"texts encoded {counts['texts']} for {n_texts} ({counts['texts'] / n_texts:.2f}x)")
    print(f"  process CPU {cpu:.2f} s, wall {wall:.2f} s")


if __name__ == "__main__":
    main()
