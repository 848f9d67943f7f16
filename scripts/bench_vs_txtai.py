"""Freki against txtai on SciFact, in one run per size: index wall time, query p50, nDCG@10 and the ratios.

Both use the same packaged all-MiniLM-L6-v2 weights and hybrid (dense + BM25) search. Freki runs as deployed
(``freki serve`` in its own process, 8 indexing clients over gRPC, default settings); txtai is a library and
runs in this process. Half of each subset is documents judged for the test claims, half random others, so
nDCG@10 is meaningful at every size. Also printed: word-pieces each embeds, and txtai indexing Freki's own
chunk texts (the same embedding work). Needs the ``bench`` extra (``pip install -e .[bench]``). Prints the
CPU model and its vector extensions first: figures differ between AVX2-only and AVX-512 machines.

    .venv/bin/python scripts/bench_vs_txtai.py                  # 1,000 documents (~15 min on 2 cores)
    .venv/bin/python scripts/bench_vs_txtai.py --docs 1000 5183 # and the whole corpus (~1.5 h)
"""

from __future__ import annotations

import argparse
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_freki import side_by_side  # noqa: E402


def cpu() -> str:
    """Model name and the vector extensions that decide encoder speed (Linux; else the platform string)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or platform.machine()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    wanted = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni")
    return f"{model}; {' '.join(f for f in wanted if f in flags) or 'no AVX2'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[1000], help="subset sizes (5183 = all of SciFact)")
    args = parser.parse_args()
    print(f"CPU: {cpu()}", flush=True)
    for n in args.docs:
        side_by_side(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
