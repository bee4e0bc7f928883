"""What produced a results directory (issue 25, as Pantheon's reports do): the project's commit and whether the
tree was dirty, the command line, Python and the key packages, the P4 tools in the lab, the host.

A results directory may be finished in several sessions (`--resume`); each session is one record in
`provenance.json`, and metrics.json and report.md's header carry them all. Sessions of different code
(another commit, or other uncommitted changes) are refused unless asked for: their runs would not be
comparable without saying so.
"""
from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import os
import platform
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FILE = "provenance.json"
PROJECT = Path(__file__).resolve().parents[2]    # the checkout this module runs from (no git in a wheel install)
PACKAGES = ("p4handoff", "pydantic", "pyyaml", "matplotlib", "numpy", "grpcio", "protobuf", "p4runtime", "dask",
            "distributed")
#: The lab's P4 tools and the argument that prints their version.
TOOLS = (("p4c", "--version"), ("p4c-bm2-ss", "--version"), ("simple_switch_grpc", "--version"))


def _output(cmd: list[str], cwd: Path | None = None) -> str | None:
    """A command's stdout (None if it is not installed, fails or hangs)."""
    try:
        done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code() -> dict[str, Any]:
    """The project's commit, whether the tree differs from it, and a digest of the difference (which code ran)."""
    commit = _output(["git", "rev-parse", "HEAD"], PROJECT)
    if commit is None:
        return {"commit": None, "dirty": None, "diff_sha256": None}
    diff = _output(["git", "diff", "HEAD", "--no-ext-diff", "--binary"], PROJECT) or ""
    untracked = _output(["git", "ls-files", "--others", "--exclude-standard"], PROJECT) or ""
    dirty = bool(diff or untracked)
    digest = hashlib.sha256((diff + "\n" + untracked).encode()).hexdigest() if dirty else None
    return {"commit": commit, "dirty": dirty, "diff_sha256": digest}


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _tools() -> dict[str, str]:
    """Versions of the P4 compiler, BMv2 and PI where installed (the lab's; the simulator needs none)."""
    out = {}
    for tool, arg in TOOLS:
        text = _output([tool, arg])
        if text is not None:
            out[tool] = text.splitlines()[0] if text else "installed (no version printed)"
    libs = sorted(glob.glob("/usr/local/lib/libpi.so.*") + glob.glob("/usr/lib/*/libpi.so.*"), key=len)
    if libs:
        out["PI"] = f"libpi.so.{libs[-1].split('libpi.so.', 1)[1]} ({os.path.dirname(libs[-1])})"
    return out


def _command() -> list[str]:
    """This process's command line as typed (`p4handoff run ...`, `python -m p4handoff run ...`, `pytest ...`)."""
    prog = Path(sys.argv[0]).name
    if prog == "__main__.py":
        prog = f"python -m {Path(sys.argv[0]).parent.name}"
        return [*prog.split(), *sys.argv[1:]]
    return [prog, *sys.argv[1:]]


def session(argv: list[str] | None = None) -> dict[str, Any]:
    """This session's record: code, command, software, host, and when it started (UTC)."""
    uname = platform.uname()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    return {
        **code(),
        "command": shlex.join(argv if argv is not None else _command()),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": _versions(),
        "p4_tools": _tools(),
        "host": {"name": socket.gethostname(), "cores": os.cpu_count(), "cores_usable": usable,
                 "kernel": f"{uname.system} {uname.release}", "machine": uname.machine},
    }


def same_code(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a.get("commit"), a.get("diff_sha256")) == (b.get("commit"), b.get("diff_sha256"))


def describe_code(s: dict[str, Any]) -> str:
    if s.get("commit") is None:
        return "no git checkout"
    return s["commit"][:12] + (f" + uncommitted changes (diff {s['diff_sha256'][:12]})" if s.get("dirty") else "")


class MixedCommits(ValueError):
    """`--resume` with other code than the directory's runs were made with."""


def read(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / FILE
    return json.loads(path.read_text()) if path.exists() else []


def record(run_dir: Path, now: dict[str, Any], *, allow_mixed: bool = False) -> list[dict[str, Any]]:
    """Append this session to the directory's sessions; refuse other code than theirs unless `allow_mixed`."""
    sessions = read(run_dir)
    other = [s for s in sessions if not same_code(s, now)]
    if other and not allow_mixed:
        raise MixedCommits(
            f"{run_dir} was produced by {describe_code(other[0])}, this is {describe_code(now)}: its finished runs "
            "and the ones this session would add would come from different code. Run the sweep anew, check out "
            "that commit, or pass --allow-mixed-commits (the report then lists every session's code)")
    sessions.append(now)
    (run_dir / FILE).write_text(json.dumps(sessions, indent=1))
    return sessions


def header(sessions: list[dict[str, Any]]) -> list[str]:
    """report.md's provenance lines: one per session (two when resumed)."""
    lines = []
    for k, s in enumerate(sessions):
        pk = ", ".join(f"{n} {v}" for n, v in s["packages"].items() if n != "p4handoff")
        tools = "; ".join(f"{n}: {v}" for n, v in s["p4_tools"].items()) or "none installed"
        h = s["host"]
        lines.append(f"{'Produced' if k == 0 else 'Resumed'} {s['started_utc']} by `{s['command']}` · code "
                     f"{describe_code(s)} · {s['python']} ({pk}) · P4 tools: {tools} · host {h['name']}: "
                     f"{h['cores']} cores ({h['cores_usable']} usable), {h['kernel']} {h['machine']}")
    if len({(s.get("commit"), s.get("diff_sha256")) for s in sessions}) > 1:
        lines.append("**Mixed code**: the runs of this directory were made by different sessions' code "
                     "(--allow-mixed-commits).")
    return lines
