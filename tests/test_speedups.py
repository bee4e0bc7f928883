"""The mypyc build of the simulator's hot path (p4handoff/speedups.py): a stale build never runs, and the
pure-Python fallback gives the same run event for event."""
from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4handoff import speedups

REPO = Path(__file__).resolve().parent.parent
MODULES = ("pkg.a", "pkg.sub.b")


def fake_build(root: Path) -> Path:
    """Sources, an extension file next to each and the build's record, under `root`."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    for m in MODULES:
        src = speedups.source_path(m, root)
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(f"NAME = {m!r}\n")
        src.with_name(src.stem + suffix).write_bytes(b"")
    return speedups.record_build(root, MODULES, root)


def test_a_complete_current_build_runs_compiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(speedups.PURE_ENV, raising=False)
    record = fake_build(tmp_path)
    assert json.loads(record.read_text()).keys() == set(MODULES)
    assert speedups.why_pure(MODULES, tmp_path, record) is None


def test_a_changed_source_a_missing_extension_or_record_falls_back(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(speedups.PURE_ENV, raising=False)
    record = fake_build(tmp_path)
    b = speedups.source_path("pkg.sub.b", tmp_path)
    b.write_text(b.read_text() + "# edited\n")
    assert speedups.why_pure(MODULES, tmp_path, record) == "sources changed since `make compile`: pkg.sub.b"
    record = fake_build(tmp_path)
    ext = speedups.extension_path("pkg.a", tmp_path)
    assert ext is not None
    ext.unlink()
    assert speedups.why_pure(MODULES, tmp_path, record) == "incomplete build: no extension for pkg.a"
    record = fake_build(tmp_path)
    record.unlink()
    assert "missing or unreadable" in (speedups.why_pure(MODULES, tmp_path, record) or "")
    monkeypatch.setenv(speedups.PURE_ENV, "1")
    fake_build(tmp_path)
    assert speedups.why_pure(MODULES, tmp_path, record) == "P4HANDOFF_PURE=1"


def test_nothing_compiled_is_plain_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(speedups.PURE_ENV, raising=False)
    for m in MODULES:
        src = speedups.source_path(m, tmp_path)
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text("")
    assert (speedups.why_pure(MODULES, tmp_path, tmp_path / "none.json") or "").startswith("not compiled")


def loaded_files(env: dict[str, str]) -> dict[str, str]:
    """Where a fresh interpreter loads every compiled module from, and the guard's status."""
    code = ("import importlib, json, p4handoff.speedups as s\n"
            "files = {m: importlib.import_module(m).__file__ for m in s.COMPILED}\n"
            "print(json.dumps({'status': s.status, **files}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **env}, timeout=120, check=True)
    out: dict[str, str] = json.loads(done.stdout)
    return out


def test_the_loaded_modules_are_what_the_guard_says() -> None:
    pure = loaded_files({speedups.PURE_ENV: "1"})
    assert pure.pop("status") == "pure Python (P4HANDOFF_PURE=1)"
    assert all(f.endswith(".py") for f in pure.values()), pure
    default = loaded_files({speedups.PURE_ENV: "0"})
    status = default.pop("status")
    compiled = [m for m, f in default.items() if not f.endswith(".py")]
    assert compiled == (list(speedups.COMPILED) if status == "compiled" else []), (status, default)


@pytest.mark.slow
def test_the_pure_fallback_gives_the_golden_run() -> None:
    """One golden case (tests/test_sim_golden.py) in a pure-Python interpreter; the suite runs them all with
    whatever this interpreter loaded (compiled after `make compile`)."""
    code = ("import sys, tempfile, pathlib\n"
            "import p4handoff.speedups as s\n"
            "from tests.test_sim_golden import CASES, digest\n"
            "(scn, until, variant, point, ov), want, n = CASES['vh-switching']\n"
            "got = digest(scn, until, variant, point, ov, pathlib.Path(tempfile.mkdtemp()))\n"
            "print(s.status, got == (want, n))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, speedups.PURE_ENV: "1"}, timeout=300)
    assert done.stdout.split() == ["pure", "Python", "(P4HANDOFF_PURE=1)", "True"], done.stderr[-2000:]
