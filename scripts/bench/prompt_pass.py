"""Benchmark: one forward pass over a fixed prompt, embedded SmolLM2 in float32 and in bfloat16.

Prompt processing is most of the time to the first answer token, and a single pass over a fixed prompt is
less sensitive to other work on the box than a whole answer: the median of ``--repeats`` passes is printed
per dtype, with the thread count and ``OMP_THREAD_LIMIT``. Both models come from Geri's own ``load_model``
(bfloat16 only if it passes the start-up self-check; the line says when it did not).

    .venv/bin/python -m scripts.bench.prompt_pass
    .venv/bin/python -m scripts.bench.prompt_pass --tokens 570 --repeats 7 --threads 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import DynamicCache

from geri.backends.decoding import forward_last
from geri.backends.embedded import default_model_path
from geri.backends.loaded_model import load_model
from wolf_service.hardware import openmp_thread_limit

FILLER = ("The heron waits in the shallow water of the river, still as a post, until a fish passes close "
          "enough to strike. ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=570, help="prompt length in tokens")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (embedded_threads)")
    args = parser.parse_args()

    for dtype in ("float32", "bfloat16"):
        loaded = load_model(default_model_path(), threads=args.threads, dtype=dtype)
        ids = loaded.tokenizer(FILLER * (args.tokens // 10))["input_ids"][: args.tokens]
        seconds = []
        with torch.inference_mode():
            forward_last(loaded.model, ids, DynamicCache())  # warm-up
            for _ in range(args.repeats):
                started = time.perf_counter()
                forward_last(loaded.model, ids, DynamicCache())
                seconds.append(time.perf_counter() - started)
        note = f" (self-check failed: {loaded.self_check_failure})" if loaded.self_check_failure else ""
        print(f"{dtype}: {len(ids)} tokens in {statistics.median(seconds):.3f} s median of {args.repeats} "
              f"(min {min(seconds):.3f}), runs as {loaded.dtype}{note}, torch threads {torch.get_num_threads()}, "
              f"OMP_THREAD_LIMIT={openmp_thread_limit()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
