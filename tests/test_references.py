"""Every file and anchor the docs and scenario files point to exists inside the repository.

A user with a fresh clone has nothing outside it: a link to a paper note
elsewhere, or a scenario that names a file nobody wrote, is a dead end.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4handoff.scenario.loader import load
from p4handoff.scenario.model import PAPERS, paper_ref

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
TRACES = sorted((ROOT / "traces").glob("*.yaml"))
TOP_DIRS = ("bench", "controller", "docs", "p4handoff", "p4src", "ptf-tests", "scripts", "tests", "topo",
            "traces")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
#: a repository path in running text: a top directory, then a file name with an extension, maybe #anchor
_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./-]*\.(?:md|yaml|py|p4|sh|png|txt)(?:#[\w-]+)?)" % "|".join(TOP_DIRS))
#: a file of the same directory named in a scenario file (`vh-wlan-to-3g-buffers.yaml`, `extends:`)
_SIBLING = re.compile(r"(?<![\w./*-])([a-z0-9][\w-]*\.yaml)\b")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text()
    found = set(re.findall(r'<a id="([\w-]+)"></a>', text))
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M):
        base = slug(heading)
        found.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return found


def broken(target: str, base: Path) -> str | None:
    """Why `target` (a path, maybe with #anchor, relative to `base`) does not resolve, or None."""
    name, _, anchor = target.partition("#")
    path = (base / name).resolve() if name else None
    if path is not None and not path.exists():
        return f"{target}: no such file"
    if path is not None and ROOT not in path.parents:
        return f"{target}: outside the repository"
    if anchor and (path is None or path.suffix == ".md") and anchor not in anchors(path or base):
        return f"{target}: no anchor #{anchor}"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_and_path_in_the_docs_exists(doc: Path) -> None:
    text = doc.read_text()
    problems = []
    for target in _LINK.findall(text):
        if not re.match(r"[a-z]+:", target):            # http(s), mailto: not ours to check
            problems.append(broken(target, doc.parent) if not target.startswith("#")
                            else broken(doc.name + target, doc.parent))
    for target in _PATH.findall(text):
        problems.append(broken(target, ROOT))
    assert [p for p in problems if p] == []


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_file_a_scenario_names_exists(path: Path) -> None:
    text = path.read_text()
    problems = [broken(t, ROOT) for t in _PATH.findall(text)]
    problems += [broken(t, path.parent) for t in _SIBLING.findall(text)]
    assert [p for p in problems if p] == []
    ref = paper_ref(load(path).paper)
    if ref.startswith("docs/"):
        assert broken(ref, ROOT) is None


def test_every_paper_key_has_its_section() -> None:
    papers = ROOT / "docs" / "papers.md"
    assert {p for p in PAPERS if p != "none"} <= anchors(papers)
    assert paper_ref("dsbp") == "docs/papers.md#dsbp" and paper_ref("none").startswith("none")


def test_nothing_points_outside_the_repository() -> None:
    tracked = [p for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".md", ".yaml", ".py", ".p4", ".toml")
               and not {".venv", ".git", "build", "results"} & set(p.relative_to(ROOT).parts)]
    outside = re.compile(r"\.\./shared|shared/papers|\b(?:ipf-mred|handoff-ssthresh|dsbp|ucc)\.md\b")
    hits = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in tracked if p != Path(__file__)
            for m in outside.finditer(p.read_text(errors="replace"))]
    assert hits == []


def test_the_checker_catches_what_it_is_for(tmp_path: Path) -> None:
    assert broken("docs/papers.md#ipf-mred", ROOT) is None
    assert broken("docs/papers.md#nowhere", ROOT) == "docs/papers.md#nowhere: no anchor #nowhere"
    assert broken("traces/vh-buffer-sweep.yaml", ROOT) == "traces/vh-buffer-sweep.yaml: no such file"
    assert broken("../shared/papers/dsbp.md", ROOT) is not None
    assert _SIBLING.findall("the sweep in vh-buffer-sweep.yaml shows it; traces/*.yaml") == ["vh-buffer-sweep.yaml"]
    assert slug("Where the buffer lives: in the controller (packet-in / packet-out)") == \
        "where-the-buffer-lives-in-the-controller-packet-in--packet-out"
