"""What several scripts share: where the project and its data live, and how to describe and time the CPU.

Shared data (evaluation sets too large or too foreign to commit) lives in ``../shared`` beside the project root,
never at an absolute path.
"""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
EVAL_DATA = SHARED / "eval"
SCIFACT_DIR = EVAL_DATA / "scifact"
SQUAD_ANSWERS_DIR = EVAL_DATA / "squad-answers"
SAMPLE_CORPUS = REPO / "scripts" / "sample_corpus"
# Overridable so a second checkout can share one tree's cached indexes.
CACHE = Path(os.environ.get("FREKI_EVAL_CACHE", REPO / ".cache" / "freki-eval"))
# The vector extensions that decide encoder speed: figures differ between AVX2-only and AVX-512 machines.
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni", "avx_vnni")


def child_pythonpath() -> str:
    """``PYTHONPATH`` for a service started as a child process: this checkout and its generated stubs first."""
    return os.pathsep.join(filter(None, [str(REPO), str(REPO / "protos"), os.environ.get("PYTHONPATH")]))


def cpu_description() -> str:
    """The CPU model, its vector extensions and the core count (Linux; elsewhere the platform string)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    vector = " ".join(f for f in VECTOR_FLAGS if f in flags) or "no AVX2"
    return f"{model}; {vector}; {os.cpu_count()} cores"


def rss_mb() -> float:
    """Resident memory of this process now (VmRSS), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def proc_stat(path: Path) -> list[str]:
    """The fields of a /proc ``…/stat`` file after the command name: ppid is [1], utime [11], stime [12],
    cutime [13], cstime [14] (clock ticks)."""
    return path.read_text().rsplit(")", 1)[1].split()


def stat_cpu_seconds(fields: list[str], waited_children: bool = False) -> float:
    """User + system CPU seconds in ``proc_stat`` fields (with ``waited_children``, also what the children the
    process has waited for used)."""
    ticks = fields[11:15] if waited_children else fields[11:13]
    return sum(int(t) for t in ticks) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (all its threads)."""
    return stat_cpu_seconds(proc_stat(Path(f"/proc/{pid}/stat")))


def tree_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a process and its live descendants (Freki's parser sandboxes are child processes);
    plus what its waited-for children used (cutime + cstime)."""
    stats: dict[int, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            stats[int(stat.parent.name)] = proc_stat(stat)
        except (OSError, ValueError):
            continue  # exited while scanning
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, fields in stats.items() if int(fields[1]) == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(stat_cpu_seconds(stats[member], waited_children=member == pid) for member in tree if member in stats)


def p50_p90(values: Sequence[float]) -> tuple[float, float]:
    """The median of ``values`` and the value at 90 % of their sorted order (non-empty)."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.9 * len(ordered))]


def print_latencies(ms: dict[str, list[float]]) -> None:
    """One line per way: its p50 and p90 in milliseconds (:func:`p50_p90`)."""
    for way, times in ms.items():
        p50, p90 = p50_p90(times)
        print(f"{way:16s} p50 {p50:.0f} ms  p90 {p90:.0f} ms")
