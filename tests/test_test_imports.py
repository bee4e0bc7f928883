"""No test module imports another test module: what tests share lives in support modules (tests/*_support.py,
tests/source_tree.py, ptf-tests/base.py, ...). Importing a test module runs its collection-time code and marks
in the importer and ties two suites' lifetimes together (a helper moved or a test renamed breaks the other)."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.source_tree import REPO

TEST_DIRS = ("tests", "ptf-tests")


def _is_test_module(dotted: str) -> bool:
    return any(part.startswith("test_") for part in dotted.split("."))


def imports_of_test_modules(path: Path) -> list[str]:
    """The imports in `path` that load a test_* module: import statements anywhere, and import_module("...")."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            names = [base] + [f"{base}.{a.name}" if base else a.name for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")):
            names = [node.args[0].value]
        if any(_is_test_module(n) for n in names):
            found.append(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{node.lineno}: "
                         f"{ast.unparse(node)}")
    return found


def test_no_test_module_imports_another() -> None:
    files = sorted(p for d in TEST_DIRS for p in (REPO / d).rglob("*.py"))
    assert len(files) > 80
    assert [line for p in files for line in imports_of_test_modules(p)] == []


def test_the_check_sees_every_form(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("import test_a\nfrom tests.test_b import x\nfrom tests import test_c\nfrom . import test_d\n"
                   "def f():\n    from test_e import y\n"
                   "importlib.import_module('tests.test_f')\n"
                   "from tests.net_support import z\nimport pytest\nfrom tests import bmv2_support\n")
    assert [line.split(": ", 1)[1] for line in imports_of_test_modules(mod)] == [
        "import test_a", "from tests.test_b import x", "from tests import test_c", "from . import test_d",
        "from test_e import y", "importlib.import_module('tests.test_f')"]
