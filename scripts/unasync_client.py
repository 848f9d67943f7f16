"""Generate the blocking Odin client from its asyncio source: odin_client/client/_async -> _sync.

    python scripts/unasync_client.py          # regenerate
    python scripts/unasync_client.py --check  # exit 1 when the committed _sync files differ (make check-clients)

unasync (python-trio) removes ``async``/``await`` token by token and renames what the map below names, as
httpcore does for its own two clients; ruff then sorts the imports and formats the result.
docs/decisions/0241-one-odin-client.md says why the blocking client is the generated one.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "odin_client" / "client" / "_async"
TARGET = ROOT / "odin_client" / "client" / "_sync"
RENAMES = {
    "AsyncOdinClient": "OdinClient", "AsyncDocumentCalls": "DocumentCalls", "AsyncGraphCalls": "GraphCalls",
    "AsyncGenerationCalls": "GenerationCalls", "AsyncSessionCalls": "SessionCalls", "AsyncCalls": "Calls",
    "AsyncConnection": "Connection", "async_connection": "blocking_connection", "_async": "_sync", "aclose": "close",
}
HEADER = "# Generated from odin_client/client/_async/{name} by scripts/unasync_client.py: edit the source, not this.\n"


def generate(into: Path) -> dict[str, str]:
    """The generated files (name -> text), written under ``into``."""
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "_async"
        staged.mkdir()
        sources = sorted(p for p in SOURCE.glob("*.py") if p.name != "__init__.py")
        for source in sources:
            (staged / source.name).write_text(source.read_text())
        rule = unasync.Rule(fromdir="/_async/", todir="/_sync/", additional_replacements=RENAMES)
        unasync.unasync_files([str(staged / s.name) for s in sources], [rule])
        generated = Path(tmp) / "_sync"
        # Removing `async `/`await ` and renaming leave imports unsorted and continuation lines out of line with
        # their brackets: ruff sorts the imports and formats the generated files.
        ruff = [sys.executable, "-m", "ruff"]
        config = ["--config", str(ROOT / "pyproject.toml")]
        subprocess.run([*ruff, "check", "--quiet", "--fix", "--select", "I", *config, str(generated)], check=True)
        subprocess.run([*ruff, "format", "--quiet", *config, str(generated)], check=True)
        out = {s.name: HEADER.format(name=s.name) + (generated / s.name).read_text() for s in sources}
    into.mkdir(parents=True, exist_ok=True)
    for name, text in out.items():
        (into / name).write_text(text)
    return out


def main(argv: list[str] | None = None) -> int:
    """Regenerate, or with ``--check`` compare with the committed files; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the committed _sync files are stale")
    args = parser.parse_args(argv)
    if not args.check:
        generate(TARGET)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
    stale = sorted(name for name, text in fresh.items()
                   if not (TARGET / name).exists() or (TARGET / name).read_text() != text)
    extra = sorted(p.name for p in TARGET.glob("*.py") if p.name != "__init__.py" and p.name not in fresh)
    if stale or extra:
        print(f"odin_client/client/_sync is stale ({', '.join(stale + extra)}): run "
              "'python scripts/unasync_client.py' and commit", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
