"""The product needs none of the dev extra (issue 13): scapy, PTF, pytest and Hypothesis are for tests,
PTF suites and benchmarks only, so `pip install p4handoff` does not pull them in."""
from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.source_tree import REPO as ROOT, product_modules

DEV_ONLY = {"scapy", "ptf", "pytest", "hypothesis", "jsonschema"}


def imported_top_levels(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_product_module_imports_a_dev_only_package():
    offenders = {str(p.relative_to(ROOT)): sorted(imported_top_levels(p) & DEV_ONLY)
                 for p in product_modules().values() if imported_top_levels(p) & DEV_ONLY}
    assert offenders == {}


def test_dev_only_packages_are_not_runtime_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower()
               for d in project["dependencies"]}
    assert runtime & DEV_ONLY == set()
    dev = {d.split(">")[0].split("=")[0].split("[")[0].strip().lower() for d in project["optional-dependencies"]["dev"]}
    assert DEV_ONLY <= dev
