"""The package layout is the architecture: no import circles, and no stage imports a layer above it.

Every import counts, including those inside functions and under ``TYPE_CHECKING``: a lazy import that
closes a circle is still a circle, only hidden. See docs/architecture.md for the picture these rules keep
true.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("freki", "geri", "odin_client", "wolf_service")

# Freki, lowest layer first. A unit may import itself, the units listed for it, and wolf_service.
_ENGINE_DEPS = {"freki.store", "freki.ingest.parsing", "freki.embed", "freki.ingest", "freki.search", "freki.settings",
                "freki.graph"}
FREKI_ALLOWED: dict[str, set[str]] = {
    "freki.store": set(),
    "freki.ingest.parsing": set(),
    "freki.embed": {"freki.store"},
    "freki.ingest": {"freki.ingest.parsing", "freki.embed", "freki.store"},
    "freki.search": {"freki.embed", "freki.store"},
    "freki.settings": set(),
    "freki.graph": {"freki.ingest.parsing", "freki.embed", "freki.search", "freki.store"},
    "freki.engine": _ENGINE_DEPS,
    "freki.watch": _ENGINE_DEPS | {"freki.engine"},
    "freki.gdpr": _ENGINE_DEPS | {"freki.engine", "freki.watch"},
    "freki.backup": _ENGINE_DEPS | {"freki.engine", "freki.watch", "freki.gdpr"},
    "freki.api": _ENGINE_DEPS | {"freki.engine", "freki.watch", "freki.gdpr", "freki.backup"},
    "freki.cli": {"freki.settings", "freki.api", "freki.engine", "freki.store", "freki.backup"},
}
# Geri: backends sit below the generation pipeline and the grounded answers, and those below the gRPC face.
GERI_ALLOWED: dict[str, set[str]] = {
    "geri.settings": set(),
    "geri.backends": {"geri.settings"},
    "geri.answering": {"geri.backends", "geri.settings"},
    "geri.service": {"geri.answering", "geri.backends", "geri.settings"},
    "geri.server": {"geri.service", "geri.backends", "geri.settings"},
}

# Odin, lowest layer first: the values it hands out, the sans-IO protocol, the flows over it (asking, tools), the
# two clients, and the faces built on a client (framework retrievers, gateway, MCP server, command line). The
# package's __init__ (the public import surface) sits above them all: nothing inside imports it.
_ODIN_BASE = {"odin_client.types", "odin_client.settings"}
_ODIN_FLOWS = _ODIN_BASE | {"odin_client.protocol"}
_ODIN_CLIENT = _ODIN_FLOWS | {"odin_client.asking", "odin_client.tools", "odin_client.client"}
ODIN_ALLOWED: dict[str, set[str]] = {
    "odin_client.types": set(),
    "odin_client.settings": set(),
    "odin_client.protocol": _ODIN_BASE,
    "odin_client.asking": _ODIN_FLOWS,
    "odin_client.tools": _ODIN_FLOWS,
    "odin_client.client": _ODIN_FLOWS | {"odin_client.asking", "odin_client.tools"},
    "odin_client.frameworks": _ODIN_CLIENT,
    "odin_client.gateway": _ODIN_CLIENT,
    "odin_client.mcp": _ODIN_CLIENT | {"odin_client.frameworks"},
    "odin_client.cli": _ODIN_CLIENT | {"odin_client.mcp"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """First-party modules ``name`` imports anywhere in its body (functions and TYPE_CHECKING blocks too)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` imports mod.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import freki.store.base.x`` style: nearest known
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: set(_imports(name, path, known)) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _unit(module: str, units: dict[str, set[str]]) -> str | None:
    """The most specific unit a module belongs to."""
    matches = [u for u in units if module == u or module.startswith(u + ".")]
    return max(matches, key=len) if matches else None


def _violations(graph: dict[str, set[str]], units: dict[str, set[str]], package: str) -> list[str]:
    bad = []
    for module, targets in graph.items():
        if not module.startswith(package + ".") and module != package:
            continue
        unit = _unit(module, units)
        if unit is None:
            continue
        for target in targets:
            if not target.startswith(package + "."):
                continue
            other = _unit(target, units)
            if other is not None and other != unit and other not in units[unit]:
                bad.append(f"{module} imports {target} ({unit} may not depend on {other})")
    return sorted(bad)


def test_the_analysis_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a.b import X\ndef f():\n    import a.c\n"
    path = tmp_path / "m.py"
    path.write_text(source)
    assert set(_imports("a.m", path, {"a.b", "a.c", "a.m"})) == {"a.b", "a.c"}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    assert _cycles(_graph()) == []


@pytest.mark.parametrize(("package", "units"), [("freki", FREKI_ALLOWED), ("geri", GERI_ALLOWED),
                                               ("odin_client", ODIN_ALLOWED)])
def test_no_stage_imports_a_layer_above_it(package: str, units: dict[str, set[str]]) -> None:
    assert _violations(_graph(), units, package) == []


def test_every_freki_module_belongs_to_a_layer() -> None:
    assert [m for m in _modules() if m.startswith("freki.") and _unit(m, FREKI_ALLOWED) is None] == []


def test_every_odin_module_belongs_to_a_layer_and_none_imports_the_package_root() -> None:
    modules = [m for m in _modules() if m.startswith("odin_client.")]
    assert [m for m in modules if _unit(m, ODIN_ALLOWED) is None] == []
    graph = _graph()
    assert sorted(m for m in modules if "odin_client" in graph[m]) == []


def test_the_four_packages_stay_apart() -> None:
    """Shared runtime below both services; the services and the client never import each other."""
    graph = _graph()
    allowed = {"wolf_service": set(), "freki": {"wolf_service"}, "geri": {"wolf_service"},
               "odin_client": {"wolf_service"}}
    crossing = sorted(f"{m} imports {t}" for m, targets in graph.items() for t in targets
                      if t.split(".")[0] != m.split(".")[0] and t.split(".")[0] not in allowed[m.split(".")[0]])
    assert crossing == []


def test_modules_stay_small() -> None:
    """One responsibility per module; 330 lines leaves room around the ~300 the style guide asks for."""
    big = {name: n for name, path in _modules().items() if (n := len(path.read_text().splitlines())) > 330}
    assert big == {}
