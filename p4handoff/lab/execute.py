"""Where runs execute: in this process, in local worker processes, or on a Dask cluster.

A run is a pure function of its scenario and seed. `execute_run` performs
one in a scratch directory and returns everything its results directory
needs as picklable data (metrics, compacted files, queue samples,
counters), so the process that writes the results shares no file system
with the worker, and a run's directory appears only once it is complete.
"""
from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import socket
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from p4handoff.lab import compact, metrics
from p4handoff.lab.backend import Backend
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.scenario.loader import Scenario

LAB_RESOURCE = "lab"   # a Dask worker started with `--resources lab=1` takes one lab run at a time


@dataclass(frozen=True)
class RunTask:
    """One run to perform; `name` (scenario/point/variant/rK) names it in progress lines and errors."""

    name: str
    scenario: Scenario
    seed: int
    backend: Backend
    keep_data: bool = False      # return the delivery series too (repeat 0: the plots and report read it)
    scratch: Path | None = None  # where the backend writes (kept if the run fails); None: a temporary directory


@dataclass
class RunOutput:
    """What a run produced, ready to be written anywhere."""

    metrics_json: str            # metrics.compute's result as the run's metrics.json holds it
    files: dict[str, bytes]      # the backend's files, CSVs compacted (trace-<flow>.csv.xz, ...)
    traces: dict[str, str]       # flow -> its trace's name in `files`
    data: RunData                # queue rows decimated as written; delivery series only if keep_data
    host: str
    wall_seconds: float
    cpu_seconds: float           # this process's CPU time for the run (the lab's other processes not included)


class RunFailed(Exception):
    """A run raised; plain strings only, so it crosses process and network boundaries intact."""

    def __init__(self, run: str, error: str, trace: str = "") -> None:
        super().__init__(run, error, trace)
        self.run, self.error, self.trace = run, error, trace

    def __str__(self) -> str:
        return f"run {self.run} failed: {self.error}"


def _packed_name(rel: str) -> str:
    return rel + compact.SUFFIX if rel.endswith(".csv") else rel


def _pack(scratch: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(p for p in scratch.rglob("*") if p.is_file()):
        rel = path.relative_to(scratch).as_posix()
        files[_packed_name(rel)] = (compact.compact_csv(path.read_text()) if rel.endswith(".csv")
                                    else path.read_bytes())
    return files


def execute_run(task: RunTask, progress: Callable[[float], None] | None = None) -> RunOutput:
    """Perform one run in its scratch directory (RunFailed, naming the run, if anything in it raises).

    A local run's scratch directory is its `.partial` results directory:
    what a failed or interrupted lab run left there stays for a look.
    """
    try:
        start, cpu_start = time.perf_counter(), time.process_time()
        with contextlib.ExitStack() as stack:
            scratch = task.scratch or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="p4handoff-")))
            scratch.mkdir(parents=True, exist_ok=True)
            data = task.backend.run(task.scenario, task.seed, scratch, progress or (lambda _t: None))
            computed = metrics.compute(task.scenario, data)
            files = _pack(scratch)
            traces = {name: _packed_name(fd.trace.relative_to(scratch).as_posix())
                      for name, fd in data.flows.items() if fd.trace is not None and fd.trace.is_file()}
        lo, hi = task.scenario.measure.plot_range
        data.queue_rows = [(round(t, 6), link, q, d, dm, round(avg, 4))
                           for t, link, q, d, dm, avg in compact.decimate(data.queue_rows, lo, hi)]
        data.flows = {name: fd if task.keep_data else FlowData(name, losses_known=fd.losses_known)
                      for name, fd in data.flows.items()}
        for fd in data.flows.values():
            fd.trace = None        # a path in the scratch directory, gone now; the writer sets the real one
        return RunOutput(json.dumps(computed, indent=1, sort_keys=True), files, traces, data,
                         socket.gethostname(), time.perf_counter() - start, time.process_time() - cpu_start)
    except Exception as exc:
        kept = f" (its files so far: {task.scratch})" if task.scratch else ""
        raise RunFailed(task.name, f"{type(exc).__name__}: {exc}{kept}", traceback.format_exc()) from None


Outcome = tuple[RunTask, "RunOutput | RunFailed"]


class Pool(Protocol):
    """Runs tasks and yields each outcome as it completes.

    `slots`: runs at once; `where`: for the report; `local`: shares this
    file system (the runs write into their `.partial` directories).
    """

    slots: int
    where: str
    local: bool

    def run(self, tasks: Sequence[RunTask], progress: Callable[[str, float], Callable[[float], None]] | None
            ) -> Iterator[Outcome]: ...

    def close(self) -> None: ...


class InProcess:
    """One run after another in this process: lab runs (they need the whole machine, and Ctrl-C must
    reach their teardown), `--jobs 1`, and the interactive `--mininet-cli`."""

    slots = 1
    where = "this process, one run at a time"
    local = True

    def run(self, tasks: Sequence[RunTask], progress: Callable[[str, float], Callable[[float], None]] | None
            ) -> Iterator[Outcome]:
        for task in tasks:
            update = progress(task.name, task.scenario.duration) if progress else None
            try:
                yield task, execute_run(task, update)
            except RunFailed as exc:
                yield task, exc

    def close(self) -> None:
        pass


def _worker_init() -> None:
    """Ctrl-C reaches the whole process group: only the parent handles it (and stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def cpu_count() -> int:
    """Cores this process may use (its affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


class LocalProcesses:
    """`jobs` worker processes on this machine (forkserver: no fork of a threaded parent)."""

    def __init__(self, jobs: int) -> None:
        self.slots = jobs
        self.where = f"{jobs} local worker processes on {socket.gethostname()}"
        self.local = True
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["p4handoff.lab.execute", "p4handoff.lab.sim_backend"])
        self._executor = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_init)
        self._pending: dict[Future[RunOutput], RunTask] = {}

    def run(self, tasks: Sequence[RunTask], progress: Callable[[str, float], Callable[[float], None]] | None
            ) -> Iterator[Outcome]:
        self._pending = {self._executor.submit(execute_run, t): t for t in tasks}
        try:
            while self._pending:
                done, _ = wait(self._pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: self._pending[f].name):
                    task = self._pending.pop(fut)
                    exc = fut.exception()
                    if exc is None:
                        yield task, fut.result()
                    else:   # RunFailed from the run, or the pool broke (a worker was killed)
                        yield task, exc if isinstance(exc, RunFailed) else RunFailed(
                            task.name, f"{type(exc).__name__}: {exc}")
        finally:
            self._stop()

    def _stop(self) -> None:
        """Interrupted (Ctrl-C, SIGTERM, an error here): drop the queued runs and stop the running ones."""
        if not self._pending:
            return
        for fut in self._pending:
            fut.cancel()
        self._pending = {}
        # ProcessPoolExecutor has no public way to stop running work before Python 3.14; these are our children
        for proc in list(getattr(self._executor, "_processes", {}).values()):
            proc.terminate()
        self._executor.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self._stop()
        self._executor.shutdown(wait=True)


class DaskCluster:
    """Runs submitted to a Dask distributed scheduler; lab runs take the `lab` resource (one per worker)."""

    def __init__(self, address: str, lab: bool, timeout: float = 20.0) -> None:
        from distributed import Client
        self._client = Client(address, timeout=timeout)
        info = self._client.scheduler_info(n_workers=-1)["workers"]
        self.lab = lab
        if lab and not any(w.get("resources", {}).get(LAB_RESOURCE) for w in info.values()):
            self._client.close()
            raise ValueError(f"no worker of the Dask scheduler at {address} offers the '{LAB_RESOURCE}' resource "
                             f"(start one per lab machine with `dask worker {address} --nthreads 1 "
                             f"--resources {LAB_RESOURCE}=1`)")
        self.local = False
        self.slots = max(1, sum(w.get("nthreads", 1) for w in info.values()))
        self.where = f"the Dask scheduler at {address} ({len(info)} workers)"

    def run(self, tasks: Sequence[RunTask], progress: Callable[[str, float], Callable[[float], None]] | None
            ) -> Iterator[Outcome]:
        from distributed import as_completed
        resources = {LAB_RESOURCE: 1} if self.lab else None
        futures = {self._client.submit(execute_run, t, key=f"{t.name}-{os.getpid()}-{time.time_ns()}",
                                       pure=False, resources=resources, retries=0): t for t in tasks}
        finished = 0
        try:
            for fut in as_completed(list(futures)):
                task = futures[fut]
                finished += 1
                if fut.status == "finished":
                    yield task, fut.result()
                else:
                    exc = fut.exception()
                    yield task, exc if isinstance(exc, RunFailed) else RunFailed(
                        task.name, f"{type(exc).__name__}: {exc}")
                fut.release()
        finally:
            if finished < len(futures):
                self._client.cancel(list(futures))

    def close(self) -> None:
        self._client.close()


def make_pool(jobs: int, cluster: str | None, lab: bool) -> Pool:
    """The pool for a `p4handoff run`: a cluster if given, else local processes (lab: this process)."""
    if cluster:
        return DaskCluster(cluster, lab)
    if lab or jobs == 1:
        return InProcess()
    return LocalProcesses(jobs)

