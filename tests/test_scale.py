"""Sweeps that scale: local worker processes, a Dask cluster, resuming, failures, compact results.

Every run here is a real simulator run of a shortened vertical handoff
(16 s, the WLAN at 2 Mb/s instead of 20: a tenth of the packets, and these
tests compare runs with each other, not with the paper); equality is checked
on the bytes of every file a run writes, except run.json (host and wall
time) and the report's wall-time line.
"""
from __future__ import annotations

import json
import lzma
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4handoff.cli.main import main
from p4handoff.lab import compact
from p4handoff.lab.execute import DaskCluster, LocalProcesses
from p4handoff.lab.results import Results
from p4handoff.lab.runner import run_scenario
from p4handoff.scenario.loader import SweepAxis, load
from p4handoff.lab.sim_backend import SimBackend

ROOT = Path(__file__).resolve().parent.parent
VH = ROOT / "traces" / "vh-wlan-to-3g.yaml"
SHORT = (("duration", 16), ("measure.plot_range", [8, 16]), ("topology.cells.wlan.rate", "2Mbps"))
SCHEMES = ("newreno", "bwaware")
LIMITS = (5, 20)
CLI_PLAN = [str(VH), "--backend", "sim", "--set", "duration=16", "--set", "measure.plot_range=[8, 16]",
            "--set", "topology.cells.wlan.rate=2Mbps",
            "--schemes", ",".join(SCHEMES), "--sweep", f"topology.cells.g3.queue.limit={','.join(map(str, LIMITS))}"]


def sweep(tmp: Path, run_id: str, **kw) -> Results:
    sf = load(str(VH), SHORT, (SweepAxis("topology.cells.g3.queue.limit", "limit", LIMITS),), SCHEMES)
    return run_scenario(sf, SimBackend(), results_root=tmp, run_id=run_id, progress_out=None, make_plots=False, **kw)


def files(directory: Path) -> dict[str, bytes]:
    """Every file of a results directory that must not depend on where or how fast the runs ran."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.name not in ("run.json", "provenance.json"):
            body = path.read_bytes()
            if path.name == "report.md":   # its wall time, provenance and Execution section say how it ran
                text = body.decode().split("\n## Execution")[0]
                body = "\n".join(line for line in text.splitlines()
                                 if " s wall" not in line and not line.startswith(("Produced ", "Resumed "))).encode()
            elif path.name == "metrics.json" and path.parent == directory:   # when and by which command
                body = json.dumps({**json.loads(body), "provenance": None}).encode()
            out[str(path.relative_to(directory))] = body
    return out


@pytest.fixture(scope="module")
def serial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    res = sweep(tmp_path_factory.mktemp("serial"), "r")
    return files(res.directory)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "p4handoff", "run", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_parallel_runs_equal_serial_runs(tmp_path: Path, serial: dict[str, bytes]) -> None:
    pool = LocalProcesses(2)
    try:
        res = sweep(tmp_path, "r", pool=pool)
    finally:
        pool.close()
    got = files(res.directory)
    assert len([k for k in got if k.endswith("trace-main.csv.xz")]) == 4
    assert got == serial
    assert "4 run(s) on 2 local worker processes" in (res.directory / "report.md").read_text()


@pytest.mark.slow
def test_a_dask_cluster_gives_the_same_results(tmp_path: Path, serial: dict[str, bytes]) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as lc:
        pool = DaskCluster(lc.scheduler_address, lab=False)
        try:
            res = sweep(tmp_path, "r", pool=pool)
        finally:
            pool.close()
        with pytest.raises(ValueError, match="offers the 'lab' resource"):   # lab runs need `--resources lab=1`
            DaskCluster(lc.scheduler_address, lab=True)
        # with --cluster the lab is looked for on the workers, not on the submitting machine
        lab = cli(str(VH), "--backend", "lab", "--cluster", lc.scheduler_address, "--results", str(tmp_path / "lab"))
        assert lab.returncode == 1 and "offers the 'lab' resource" in lab.stderr, lab.stderr
    assert files(res.directory) == serial
    hosts = {json.loads(p.read_text())["host"] for p in res.directory.glob("runs/*/*/r0/run.json")}
    assert len(hosts) == 1 and f"host `{hosts.pop()}`" in (res.directory / "report.md").read_text()


@pytest.mark.slow
def test_a_killed_sweep_resumes_to_the_same_results(tmp_path: Path, serial: dict[str, bytes]) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "p4handoff", "run", *CLI_PLAN, "--results", str(tmp_path),
                             "--jobs", "2", "--quiet", "--no-plots"], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while not list(tmp_path.glob("*/*/runs/*/*/r0/metrics.json")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()[-2000:]
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)   # the runner, its forkserver and workers: its own session
        proc.wait(timeout=30)
        proc.stderr.close()
    (run_dir,) = tmp_path.glob("*/*")
    done = list(run_dir.glob("runs/*/*/r0/metrics.json"))
    assert 1 <= len(done) < 4 and not (run_dir / "report.md").exists()
    kept = {p: p.stat().st_mtime_ns for p in done}
    res = cli("--resume", str(run_dir), "--quiet", "--no-plots")
    assert res.returncode == 0, res.stderr
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())     # finished runs were not run again
    assert not list(run_dir.glob("runs/*/*/*.partial"))
    report = (run_dir / "report.md").read_text()
    assert "kept from an interrupted session" in report
    assert f"{4 - len(done)} runs in " in report and f"s wall, {len(done)} kept from an earlier session" in report
    got = files(run_dir)
    assert {k: v for k, v in got.items() if k not in ("plan.yaml", "scenario.yaml")} == \
        {k: v for k, v in serial.items() if k not in ("plan.yaml", "scenario.yaml")}


@pytest.mark.slow
def test_a_failing_run_is_named_and_the_others_finish(tmp_path: Path) -> None:
    # a 20 s queue sampling interval leaves no sample in the 10-15 s window: the metric raises in the worker
    table = "measure.table=[{metric: throughput, flow: main}, {metric: max_queue, link: g3}]"
    res = cli(*CLI_PLAN[:-2], "--set", table, "--sweep", "measure.queues.interval=10ms,20s", "--results", str(tmp_path), "--jobs", "2", "--quiet")
    assert res.returncode == 1
    for variant in ("TCP-mm", "Bandwidth-Aware"):
        assert f"run vh-wlan-to-3g/interval=20s/{variant}/r0 failed: ValueError: no queue samples of g3" in res.stderr
    (run_dir,) = tmp_path.glob("*/*")
    assert len(list(run_dir.glob("runs/interval=10ms/*/r0/metrics.json"))) == 2
    assert not (run_dir / "report.md").exists() and f"--resume DIR` ({run_dir})" in res.stderr


def test_bad_command_lines_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    for args, message in (((), "give scenario file(s), or --resume RESULTS_DIR"),
                          ((str(VH), "--jobs", "0"), "--jobs: must be >= 1, got 0"),
                          (("--resume", str(tmp_path), "--seed", "3"), "drop --seed"),
                          (("--resume", str(tmp_path)), "is not a results directory"),
                          ((str(VH), "--cluster", "tcp://127.0.0.1:1", "--jobs", "2"), "--jobs is for local runs")):
        try:   # in this process: a usage error is found before anything runs (a subprocess: 1 s to start)
            code = main(["run", *args])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and message in err, (args, err)


def test_compact_traces_round_floats_and_are_reproducible() -> None:
    text = "time,cwnd,srtt,detail\n0.009510399999999999,4000,0.0046894531250000005,acked=1000\n1e-07,1,2.5,x\n"
    packed = compact.compact_csv(text)
    assert packed == compact.compact_csv(text)             # the same bytes every time
    assert lzma.decompress(packed).decode() == "time,cwnd,srtt,detail\n0.00951,4000,0.004689,acked=1000\n0.0,1,2.5,x\n"


def test_queue_samples_keep_what_a_plot_shows() -> None:
    rows = [(k / 1024, "g3", k % 7, k % 5, 0, (k % 11) / 2) for k in range(32_000)]   # ~1 ms samples over 31 s
    kept = compact.decimate(rows, 0.0, 15.625)              # buckets of 1/64 s: 16 samples each
    assert len(kept) < len(rows) / 1.5
    by_bucket: dict[int, list[tuple]] = {}
    for r in kept:
        by_bucket.setdefault(int(r[0] * 1024) // 16, []).append(r)
    for b in range(0, len(rows), 16):                       # every bucket keeps its lowest and highest values
        bucket, got = rows[b:b + 16], by_bucket[b // 16]
        for col in (2, 3, 5):
            assert max(r[col] for r in got) == max(r[col] for r in bucket)
            assert min(r[col] for r in got) == min(r[col] for r in bucket)
    few = rows[::50]                                        # already coarser than the buckets: unchanged
    assert compact.decimate(few, 0.0, 15.625) == few


class _TimedSim(SimBackend):
    """The simulator, noting which Dask worker ran each run and when (a fake in addition to the real runs above)."""

    spans: list[tuple[str, float, float]] = []

    def run(self, scn, seed, out_dir, progress):
        from distributed import get_worker
        start = time.monotonic()
        data = super().run(scn, seed, out_dir, progress)
        self.spans.append((get_worker().address, start, time.monotonic()))
        return data


@pytest.mark.slow
def test_lab_runs_take_one_lab_resource_per_worker(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    _TimedSim.spans.clear()
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=False, dashboard_address=":0",
                                  resources={"lab": 1}) as lc:
        pool = DaskCluster(lc.scheduler_address, lab=True)
        try:
            sf = load(str(VH), SHORT, (SweepAxis("topology.cells.g3.queue.limit", "limit", LIMITS),), SCHEMES)
            run_scenario(sf, _TimedSim(), results_root=tmp_path, run_id="r", progress_out=None, make_plots=False,
                         pool=pool)
        finally:
            pool.close()
    spans = sorted(_TimedSim.spans)
    assert len(spans) == 4
    for (w1, _, end), (w2, start, _) in zip(spans, spans[1:]):
        assert w1 != w2 or start >= end                 # two threads each, yet one run at a time per worker
