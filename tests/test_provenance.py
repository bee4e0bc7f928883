"""Every results directory records what produced it (issue 25): the commit and dirty flag, the command line,
Python and package versions, the lab's P4 tools where installed, the host; `--resume` with other code
refuses unless told. Real simulator runs of a shortened vertical handoff (16 s)."""
from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from p4handoff.lab import provenance
from p4handoff.lab.runner import resume_sweep, run_scenario
from p4handoff.lab.sim_backend import SimBackend
from p4handoff.scenario.loader import load

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
SHORT = (("duration", 16), ("measure.plot_range", [8, 16]))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sf = load(VH, SHORT, (), ("newreno",))
    res = run_scenario(sf, SimBackend(), results_root=tmp_path_factory.mktemp("prov"), run_id="r", progress_out=None,
                       make_plots=False)
    return res.directory


def test_metrics_and_report_say_what_produced_them(results: Path) -> None:
    (s,) = json.loads((results / "metrics.json").read_text())["provenance"]
    assert s == json.loads((results / provenance.FILE).read_text())[0]
    assert s["commit"] == _git("rev-parse", "HEAD")
    assert s["dirty"] == bool(_git("status", "--porcelain", "--untracked-files=normal"))
    assert s["command"].endswith(shlex.join(sys.argv[1:]))         # this process's command line
    assert s["python"].endswith(platform.python_version())
    assert {"pydantic", "pyyaml"} <= s["packages"].keys()
    assert s["host"]["cores"] == os.cpu_count() and s["host"]["kernel"] == f"Linux {platform.release()}"
    assert set(s["p4_tools"]) <= {"p4c", "p4c-bm2-ss", "simple_switch_grpc", "PI"}
    report = (results / "report.md").read_text()
    header = report.split("\n## ")[0]        # before the first section
    assert f"code {s['commit'][:12]}" in header and f"{os.cpu_count()} cores" in header
    assert f"`{s['command']}`" in header and s["python"] in header


@pytest.mark.slow
def test_resume_refuses_runs_from_other_code_unless_told(results: Path) -> None:
    sessions = json.loads((results / provenance.FILE).read_text())
    other = {**sessions[0], "commit": "0" * 40, "dirty": False, "diff_sha256": None}
    (results / provenance.FILE).write_text(json.dumps([other]))        # as if another commit had made the runs
    with pytest.raises(provenance.MixedCommits, match="produced by 000000000000, this is "):
        resume_sweep(results, SimBackend())
    assert len(json.loads((results / provenance.FILE).read_text())) == 1     # refused before anything changed
    cli = subprocess.run([sys.executable, "-m", "p4handoff", "run", "--resume", str(results), "--quiet",
                          "--no-plots"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert cli.returncode == 2 and "--allow-mixed-commits" in cli.stderr
    cli = subprocess.run([sys.executable, "-m", "p4handoff", "run", "--resume", str(results), "--quiet",
                          "--no-plots", "--allow-mixed-commits"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert cli.returncode == 0, cli.stderr
    kept = json.loads((results / "metrics.json").read_text())["provenance"]
    assert [s["commit"] for s in kept] == ["0" * 40, _git("rev-parse", "HEAD")]
    assert kept[1]["command"].startswith("python -m p4handoff run --resume")
    report = (results / "report.md").read_text()
    assert "Resumed " in report and "**Mixed code**" in report


def test_the_same_code_resumes_without_asking(results: Path, tmp_path: Path) -> None:
    now = provenance.session(["p4handoff", "run", "x"])
    (tmp_path / provenance.FILE).write_text(json.dumps([now]))
    assert len(provenance.record(tmp_path, provenance.session(["p4handoff", "run", "--resume", "x"]))) == 2


def test_allow_mixed_commits_needs_resume() -> None:
    cli = subprocess.run([sys.executable, "-m", "p4handoff", "run", str(VH), "--allow-mixed-commits", "--check"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert cli.returncode == 2 and "--allow-mixed-commits is for --resume" in cli.stderr
