"""The product's modules import each other without circles (issue 14).

Every import counts: at module level, inside functions and under TYPE_CHECKING,
since each is a place where one module needs the other. A module's import of
its own parent package is left out: Python runs a package's __init__ before any
of its submodules, so that edge is not one a layout can remove.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

from tests.source_tree import REPO, product_modules

# Circles left for a later change, each with what ties it; remove an entry once its circle
# is broken. None is left: the product imports without a circle.
KNOWN: set[frozenset[str]] = set()


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement may load (a from-import's names may be submodules)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


@functools.cache   # one parse of every file for the tests of this module (the graph is only read)
def import_graph(root: Path = REPO, top: str = "p4handoff") -> dict[str, set[str]]:
    """Module -> the product modules it imports anywhere in its text."""
    mods = product_modules(root, top)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(name, path, node):
                while target and target not in mods:          # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.add(frozenset(group))
    return found


def _show(groups: set[frozenset[str]], graph: dict[str, set[str]]) -> str:
    return "\n".join(f"{sorted(g)}: " + "; ".join(f"{m} -> {sorted(graph[m] & g)}" for m in sorted(g))
                     for g in sorted(groups, key=sorted))


def test_no_new_import_cycles() -> None:
    graph = import_graph()
    found = cycles(graph)
    assert found <= KNOWN, "new import circle(s):\n" + _show(found - KNOWN, graph)
    assert KNOWN <= found, f"circle(s) in KNOWN are gone: remove them from the list: {[sorted(g) for g in KNOWN - found]}"


def test_results_runner_report_plots_form_no_circle() -> None:
    graph = import_graph()
    readers = {"p4handoff.lab.results", "p4handoff.lab.report", "p4handoff.lab.plots"}
    assert not [sorted(g) for g in cycles(graph) if g & readers]
    assert "p4handoff.lab.runner" not in graph["p4handoff.lab.report"] | graph["p4handoff.lab.plots"] | graph["p4handoff.lab.results"]


def test_the_walk_sees_function_level_relative_and_type_checking_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg import a\n")                # parent package: not an edge
    (pkg / "a.py").write_text("import pkg.b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c\n")       # function-level, relative
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import thing\n")
    (pkg / "d.py").write_text("from pkg.sub.c import x\n")                  # into the circle, not part of it
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.sub", "pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a"}
    assert graph["pkg.sub"] == set() and graph["pkg"] == {"pkg.a"}
    assert cycles(graph) == {frozenset({"pkg.a", "pkg.b", "pkg.sub.c"})}


# The layers, top down: the `p4handoff` command (p4handoff.cli, __main__); fuzzing and chaos
# (p4handoff.reliability), which drive labs and testbeds, and P4Testgen's replay (p4handoff.testgen), which drives
# switches through the controller's P4Runtime client; the lab that runs scenarios (p4handoff.lab); the
# topologies it runs on (p4handoff.topo: testbed, Mininet network, plan, emulator, launchers); scenario files
# (p4handoff.scenario); the controller and the hosts (p4handoff.controller, p4handoff.hosts); and the shared base
# (every other p4handoff.* module: wire contract, documents, BMv2 and namespace infrastructure). A module imports
# only its own layer or those below it; the controller and the hosts do not import each other.
LAYERS = {"cli": 6, "__main__": 6, "reliability": 5, "testgen": 5, "lab": 4, "topo": 3, "scenario": 2, "controller": 1, "hosts": 1}


def _layer(module: str) -> tuple[int, str]:
    part = module.split(".")[1] if "." in module else ""
    return (LAYERS[part], part) if part in LAYERS else (0, "base")


def _allowed(source: str, target: str) -> bool:
    (rank, part), (target_rank, target_part) = _layer(source), _layer(target)
    return target_rank < rank or (target_rank == rank and (rank != 1 or part == target_part))


def test_each_layer_imports_only_itself_and_the_layers_below() -> None:
    graph = import_graph()
    upward = {m: sorted(t for t in targets if not _allowed(m, t)) for m, targets in graph.items()}
    assert {m: t for m, t in upward.items() if t} == {}


def test_the_layer_rule_sees_an_upward_import() -> None:
    assert _layer("p4handoff.cli.run") > _layer("p4handoff.reliability.chaos") > _layer("p4handoff.lab.runner")
    assert _layer("p4handoff.lab.runner") > _layer("p4handoff.topo.rig") > _layer("p4handoff.scenario.loader")
    assert _layer("p4handoff.scenario.loader") > _layer("p4handoff.controller.daemon")
    assert _layer("p4handoff.wire") == (0, "base") and _layer("p4handoff") == (0, "base")
    assert not _allowed("p4handoff.hosts.endpoint", "p4handoff.controller.intents")
    assert not _allowed("p4handoff.wire", "p4handoff.lab.runner")
    assert _allowed("p4handoff.lab.runner", "p4handoff.hosts.sim") and _allowed("p4handoff.cli.run", "p4handoff.wire")
