"""How long a backup and a restore take and how long writes wait: a real engine and model, a few thousand
chunks (short documents, so embedding them is quick), a writer indexing all the time; then ``create_backup``
(directory and tar.gz), an owner erased after the backup, and ``restore`` with the erasure log re-applied.
Prints figures; asserts nothing.

    PYTHONPATH=.:protos HF_HUB_OFFLINE=1 .venv/bin/python -m scripts.bench.backup --docs 300
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from freki.backup.restore import restore
from freki.backup.snapshot import create_backup
from freki.embed.embedder import Embedder
from freki.engine import FrekiEngine
from freki.gdpr import erase_owner
from freki.ingest.indexing import IndexInput
from freki.settings import FrekiSettings

WORDS = ("harbour ferry timetable winter lighthouse keeper logs tide wind reef lamp oil storm north south "
         "glacier route sourdough dough hive spring turbine binding leather").split()


def text(n: int, paragraphs: int) -> str:
    return "\n\n".join(" ".join(WORDS[(n * 7 + p * 3 + i) % len(WORDS)] for i in range(30)) + f" ({n}.{p})."
                       for p in range(paragraphs))


def du(path: Path) -> str:
    return subprocess.run(["du", "-sh", str(path)], capture_output=True, text=True).stdout.split()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--paragraphs", type=int, default=10, help="one chunk each (small chunking)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="freki-bench-backup-"))
    settings = FrekiSettings(data_dir=root / "data", gdpr={"erasure_log": root / "erasures.jsonl"},
                             chunking={"max_tokens": 48, "min_tokens": 16, "overlap_tokens": 0},
                             store={"maintenance_interval_s": 0})
    engine = FrekiEngine(settings, embedder=Embedder("all-MiniLM-L6-v2"))
    try:
        started = time.perf_counter()
        for n in range(args.docs):
            engine.index(IndexInput(tenant_id="t", document_id=f"d{n}", owner_id=f"o{n % 10}",
                                    data=text(n, args.paragraphs)))
        status = engine.status(None)
        print(f"indexed {status.document_count} documents, {status.chunk_count} chunks in "
              f"{time.perf_counter() - started:.0f} s; data dir {du(root / 'data')}")

        latencies: list[tuple[float, float]] = []  # (start, seconds) of each write during the runs
        stop = threading.Event()

        def writer() -> None:
            n = 0
            while not stop.is_set():
                begun = time.perf_counter()
                engine.index(IndexInput(tenant_id="w", document_id=f"w{n % 50}", data=text(10_000 + n, 1)))
                latencies.append((begun, time.perf_counter() - begun))
                n += 1

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(3)
        results = []
        for name, tar in (("dir", False), ("tar.gz", True)):
            before = len(latencies)
            began = time.perf_counter()
            report = create_backup(engine, root / f"backup-{name}" if not tar else root / "backup.tar.gz", tar=tar)
            during = [s for t, s in latencies[before:] if t < began + report.seconds]
            results.append((name, report, during))
            time.sleep(2)
        stop.set()
        thread.join()
        idle = [s for _, s in latencies[:20]]
        print(f"writes while idle: median {statistics.median(idle) * 1000:.0f} ms (n={len(idle)})")
        for name, report, during in results:
            slowest = max(during) * 1000 if during else 0.0
            print(f"backup {name}: {report.seconds:.1f} s total, writes paused {report.write_pause_ms:.0f} ms "
                  f"(slowest write meanwhile {slowest:.0f} ms, n={len(during)}), {len(report.manifest.files)} files, "
                  f"{report.manifest.total_bytes / 1e6:.0f} MB apparent, {du(report.path)} on disk")
        erase_owner(engine, "t", "o3")
    finally:
        engine.close()
    for name in ("backup-dir", "backup.tar.gz"):
        target = FrekiSettings(data_dir=root / f"restored-{name}", gdpr={"erasure_log": root / "erasures.jsonl"})
        done = restore(root / name, target)
        print(f"restore from {name}: {done.seconds:.1f} s (erasure log: {done.reapplied.entries} entries, "
              f"{done.reapplied.points_deleted} points deleted and purged)")
    shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
