"""The statements P4Testgen left uncovered, each with why, as docs/testgen.md gives it.

docs/testgen.md ("What stays uncovered, and why") has a table with one row per statement the bmv2 runs
cannot reach: the statement as `make testgen` prints it (`<file>:<line>: <text>`, the text as P4Testgen
prints it after p4c's midend) and the reason. `make testgen` prints each uncovered statement with the
reason found there, or says that the document gives none: a statement newly uncovered, or one whose line
moved, shows up at once.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

HEADING = "### What stays uncovered, and why"
# `| \`<statement>\` | <why> |`; a `|` inside the statement is written `\|` (markdown tables)
_ROW_RE = re.compile(r"^\|\s*`(?P<statement>(?:[^`\\]|\\.)+)`\s*\|\s*(?P<why>(?:[^|\\]|\\.)+?)\s*\|\s*$")


@dataclass(frozen=True)
class Explained:
    """One uncovered statement and why it is not covered (None: the document does not say)."""

    statement: str
    why: str | None


def printed(node: str) -> str:
    """A statement as P4Testgen lists it, `<file>\\<line>: <text>`, as make testgen prints it: `<file>:<line>: <text>`."""
    where, sep, rest = node.partition("\\")
    return f"{where}:{rest}" if sep else node


def reasons(markdown: str) -> dict[str, str]:
    """statement -> why, from the table under HEADING (up to the next heading). ValueError if the
    section is missing or names a statement twice."""
    lines = markdown.splitlines()
    try:
        start = lines.index(HEADING)
    except ValueError:
        raise ValueError(f"no section {HEADING!r}") from None
    table: dict[str, str] = {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        if m := _ROW_RE.match(line):
            statement = m.group("statement").replace("\\|", "|")
            if statement in table:
                raise ValueError(f"{statement!r} is listed twice")
            table[statement] = m.group("why").replace("\\|", "|")
    return table


def reasons_in(doc: Path) -> dict[str, str]:
    """reasons() of a file; an empty table if the file is absent (an installed package without docs/)."""
    return reasons(doc.read_text()) if doc.is_file() else {}


def explain(uncovered: Iterable[str], table: dict[str, str]) -> list[Explained]:
    """Each uncovered statement (as printed()) with its reason from the table."""
    return [Explained(s, table.get(s)) for s in uncovered]
