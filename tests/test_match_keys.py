"""Table entries written by name in the docs, the PTF suite and the code name tables and match fields that the
P4 programs have (issue 19: docs/testing.md and ptf-tests/base.py showed `hdr.ipv4.dst_addr`, a key
`ipv4_fwd` no longer had). Read from the P4 source, so it holds without p4c: a key's P4Runtime name is its
@name annotation, else the key expression."""
from __future__ import annotations

import re
from pathlib import Path

from tests.source_tree import REPO, product_modules

_TABLE = re.compile(r"\btable\s+(\w+)\s*\{")
_KEYS = re.compile(r"\bkey\s*=\s*\{(.*?)\}", re.S)
_KEY = re.compile(r"([\w.\[\]]+)\s*:\s*\w+\s*(?:@name\(\"([^\"]+)\"\))?\s*;")
# TableEntry("table", {...}) and insert("table", {...}) (the PTF base class, the client): table and match dict
_ENTRY = re.compile(r"(?:TableEntry|insert)\(\s*\"(\w+)\",\s*\{([^{}]*)\}", re.S)
_MATCH_NAME = re.compile(r"\"([\w.]+)\"\s*:")


def _block(text: str, start: int) -> str:
    """The text from `start` (just after an opening brace) to its closing brace."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    raise ValueError(f"unbalanced braces after offset {start}")


def p4_tables(sources: list[Path]) -> dict[str, set[str]]:
    """Table name -> the P4Runtime names of its match fields, over every program in `sources`."""
    tables: dict[str, set[str]] = {}
    for path in sources:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)
        for m in _TABLE.finditer(text):
            name, body = m.group(1), _block(text, m.end())
            keys = _KEYS.search(body)
            fields = {annotated or expr for expr, annotated in _KEY.findall(keys.group(1))} if keys else set()
            tables.setdefault(name, set()).update(fields)
    return tables


def written_entries(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, table, match field names) of each entry written by name in `path`."""
    text = path.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), _MATCH_NAME.findall(m.group(2)))
            for m in _ENTRY.finditer(text)]


def stale(tables: dict[str, set[str]], files: list[Path]) -> list[str]:
    out = []
    for path in files:
        for line, table, fields in written_entries(path):
            where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{line}"
            if table not in tables:
                out.append(f"{where}: no table {table!r}")
            out += [f"{where}: {table} has no match field {f!r} (its fields: {sorted(tables[table])})"
                    for f in fields if table in tables and f not in tables[table]]
    return out


def test_every_entry_written_by_name_matches_a_program() -> None:
    programs = sorted(REPO.glob("p4src/**/*.p4")) + [REPO / "bench" / "minimal.p4", REPO / "tests" / "p4" / "mini.p4"]
    tables = p4_tables(programs)
    assert tables["ipv4_fwd"] == {"dst_addr"} and tables["ipf_peer"] == {"ingress_port", "src_addr"}
    files = (sorted(REPO.glob("docs/**/*.md")) + [REPO / "README.md"] + sorted(REPO.glob("ptf-tests/*.py"))
             + sorted(REPO.glob("tests/p4/ptf/*.py")) + sorted(REPO.glob("bench/*.py"))
             + sorted(product_modules().values()))
    assert sum(len(written_entries(f)) for f in files) > 20
    assert stale(tables, files) == []


def test_the_check_sees_a_stale_key_and_an_unknown_table(tmp_path: Path) -> None:
    (tmp_path / "p.p4").write_text('control C() {\n    table fwd {\n        key = { meta.l3_dst : lpm @name("dst_addr"); '
                                   'hdr.x.y : exact; }\n        actions = { a; }\n    }\n}\n')
    doc = tmp_path / "doc.md"
    doc.write_text('sw.insert(TableEntry("fwd", {"dst_addr": 1, "hdr.x.y": 2}))\n'
                   'self.insert("fwd", {"hdr.ipv4.dst_addr": "10.0.2.0/24"}, "deliver")\n'
                   'TableEntry("gone", {})\n')
    tables = p4_tables([tmp_path / "p.p4"])
    assert tables == {"fwd": {"dst_addr", "hdr.x.y"}}
    assert stale(tables, [doc]) == [
        "doc.md:2: fwd has no match field 'hdr.ipv4.dst_addr' (its fields: ['dst_addr', 'hdr.x.y'])",
        "doc.md:3: no table 'gone'"]
