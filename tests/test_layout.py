"""The layout of tests/ and scripts/ (docs/decisions/0251-layout-of-scripts-and-tests.md).

tests/: every module is a test (``test_*.py``), a ``conftest.py`` or a helper named ``*_support.py``, and no
folder has an ``__init__.py`` (pytest imports in importlib mode; one would shadow the package it tests).
scripts/: packages run with ``python -m`` from the project root, so no script edits ``sys.path``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_files(top: str) -> list[Path]:
    """The Python files under ``top`` (a folder of the project), node_modules left out."""
    return [p for p in sorted((ROOT / top).rglob("*.py")) if "node_modules" not in p.parts]


def test_every_module_in_tests_is_a_test_a_conftest_or_a_support_helper() -> None:
    odd = [str(p.relative_to(ROOT)) for p in python_files("tests")
           if p.name != "__init__.py"
           and not (p.name.startswith("test_") or p.name == "conftest.py" or p.name.endswith("_support.py"))]
    assert odd == [], f"name helper modules <what they provide>_support.py: {odd}"


def test_no_folder_in_tests_is_a_package() -> None:
    inits = [str(p.relative_to(ROOT)) for p in python_files("tests") if p.name == "__init__.py"]
    assert inits == [], f"remove (test folders are not packages): {inits}"


def _uses_sys_path(path: Path) -> bool:
    """Whether the module touches ``sys.path`` at all (reading it is as much a sign as editing it)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name)
               and node.value.id == "sys" for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_no_script_edits_sys_path() -> None:
    editing = [str(p.relative_to(ROOT)) for p in python_files("scripts") if _uses_sys_path(p)]
    assert editing == [], f"run scripts with python -m from the project root instead: {editing}"
