"""How long ``freki migrate`` takes: copy the synthetic 10k / 100k chunk collections of scripts/bench/scale.py
(real SciFact texts and BM25 vectors, perturbed real dense vectors; built there and cached under
.cache/freki-bench) from the embedded engine to a fresh embedded data dir and to qdrant-client's on-disk
local mode (the only Qdrant-protocol engine on this box; a Qdrant server ingests far faster than its pure-Python
local mode). Prints points/s; asserts nothing. No re-embedding happens: vectors and payloads are copied.

    .venv/bin/python -m scripts.bench.scale --sizes 10000     # once, builds the cache
    .venv/bin/python -m scripts.bench.migrate --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from freki.store import EdgeStore, RemoteStore
from freki.store.migrate import copy_collection, recorded_spec
from scripts.bench.synthetic import synth_dir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--targets", nargs="+", default=["edge", "local"], choices=["edge", "local"])
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    for size in args.sizes:
        pattern = synth_dir(size, "*")
        found = sorted(pattern.parent.glob(pattern.name))
        if not found:
            print(f"{size}: no cached collection; run python -m scripts.bench.scale --sizes {size} first")
            continue
        for kind in args.targets:
            work = Path(tempfile.mkdtemp(prefix="bench-migrate-"))
            try:
                source = EdgeStore(found[0] / "qdrant", flush_writes=False)
                target = (EdgeStore(work / "qdrant", flush_writes=False) if kind == "edge"
                          else RemoteStore(path=str(work / "qdrant")))
                try:
                    spec = recorded_spec(source, "freki_chunks")
                    assert spec is not None
                    source.ensure_collection(spec)
                    if source.count([]) != size:
                        sys.exit(f"{found[0]} holds {source.count([]):,} chunks, not {size:,}: rebuild it")
                    report = copy_collection(source, target, spec, batch=args.batch)
                finally:
                    source.close()
                    target.close()
                print(f"{size:>7,} chunks  edge -> {kind:<5}  {report.seconds:7.1f} s  "
                      f"{report.points / report.seconds:8,.0f} points/s")
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
