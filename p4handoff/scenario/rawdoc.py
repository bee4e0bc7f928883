"""Operations on a scenario document before validation: overrides by path and `count` expansion.

Variants, sweeps and `--set` all change the YAML tree the same way, by a
dotted path whose list segments are either an index or the `name` of an
item (`topology.cells.g3.queue.limit`, `flows.0.scheme`), so any field of
any valid scenario can be swept without the runner knowing what it means.

An item with `count: N` stands for N items: `{i}` in its strings becomes
1..N and a `{first: a, step: b}` mapping anywhere inside becomes a + (i−1)·b
(b may be a number, a time or a rate written like a: '39ms', '1ms').
"""
from __future__ import annotations

import copy
import re
from typing import Any

from p4handoff.scenario.units import Errors

_UNIT_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")


def split_path(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ValueError(f"bad path {path!r}: expected dotted segments like topology.cells.g3.rate")
    return parts


def _child(node: Any, seg: str, path: str) -> Any:
    if isinstance(node, dict):
        if seg not in node:
            raise ValueError(f"path {path!r}: no field {seg!r} (has: {', '.join(map(str, node)) or 'nothing'})")
        return node[seg]
    if isinstance(node, list):
        return node[_index(node, seg, path)]
    raise ValueError(f"path {path!r}: cannot descend into {type(node).__name__} at {seg!r}")


def _index(items: list, seg: str, path: str) -> int:
    if seg.isdigit():
        k = int(seg)
        if k >= len(items):
            raise ValueError(f"path {path!r}: index {k} out of range (list has {len(items)} items)")
        return k
    for k, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == seg:
            return k
    names = [str(i.get("name")) for i in items if isinstance(i, dict) and "name" in i]
    raise ValueError(f"path {path!r}: no item named {seg!r} (names: {', '.join(names) or 'none'})")


def with_path(doc: dict, path: str, value: Any) -> dict:
    """`doc` with the field at `path` set to a copy of `value` (its parent must exist; the last key may be new).

    `doc` is left as it is and shares with the result every part off the path, so a run's document costs
    the containers along its changed paths, not a copy of the whole (a file's runs all start from one).
    """
    parts = split_path(path)

    def along(node: Any, k: int) -> Any:
        seg = parts[k]
        if k == len(parts) - 1:
            if isinstance(node, dict):
                return {**node, seg: copy.deepcopy(value)}
            if isinstance(node, list):
                at = _index(node, seg, path)
                return [*node[:at], copy.deepcopy(value), *node[at + 1:]]
            raise ValueError(f"path {path!r}: cannot set a field inside {type(node).__name__}")
        child = along(_child(node, seg, path), k + 1)
        if isinstance(node, dict):
            return {**node, seg: child}
        at = _index(node, seg, path)
        return [*node[:at], child, *node[at + 1:]]

    return along(doc, 0)


def get_path(doc: dict, path: str) -> Any:
    node: Any = doc
    for seg in split_path(path):
        node = _child(node, seg, path)
    return node


def _add_steps(first: Any, step: Any, k: int) -> Any:
    """first + k·step for numbers, or for two strings in the same unit ('39ms' + k·'1ms')."""
    if isinstance(first, (int, float)) and isinstance(step, (int, float)) and not isinstance(first, bool):
        value = first + k * step
        return int(value) if isinstance(first, int) and isinstance(step, int) else value
    if isinstance(first, str) and isinstance(step, str):
        m1, m2 = _UNIT_RE.match(first), _UNIT_RE.match(step)
        if m1 and m2 and m1.group(2) == m2.group(2):
            value = float(m1.group(1)) + k * float(m2.group(1))
            return f"{value:g}{m1.group(2)}"
    raise ValueError(f"cannot step {first!r} by {step!r} (numbers, or strings in the same unit)")


def _instantiate(node: Any, i: int, path: str, errors: Errors) -> Any:
    if isinstance(node, dict):
        if set(node) == {"first", "step"}:
            try:
                return _add_steps(node["first"], node["step"], i - 1)
            except ValueError as exc:
                errors.add(path, str(exc))
                return node["first"]
        return {k: _instantiate(v, i, f"{path}.{k}", errors) for k, v in node.items()}
    if isinstance(node, list):
        return [_instantiate(v, i, f"{path}[{k}]", errors) for k, v in enumerate(node)]
    if isinstance(node, str):
        return node.replace("{i}", str(i))
    return node


def expand_counts(items: Any, path: str, errors: Errors) -> Any:
    """Replace every item with `count: N` by its N instances (see the module docstring)."""
    if not isinstance(items, list):
        return items
    out = []
    for k, item in enumerate(items):
        if not isinstance(item, dict) or "count" not in item:
            out.append(item)
            continue
        count = item["count"]
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            errors.add(f"{path}[{k}].count", f"must be a whole number >= 1, got {count!r}")
            continue
        body = {key: value for key, value in item.items() if key != "count"}
        for i in range(1, count + 1):
            out.append(_instantiate(body, i, f"{path}[{k}]", errors))
    return out
