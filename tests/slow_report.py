"""The `slow` mark kept honest by measurement: tests that took over `--slow-threshold` seconds without it are named.

`make test-quick` runs the tests without the `slow`, `bmv2` and `netns` marks, so a test that grows slow
without its mark lengthens the edit loop unnoticed (tests with any of the three marks are not named).
Each test's time here (setup + call + teardown) is its wall time less the time its process waited for
a CPU (Linux schedstat): on a machine shared with other work, that estimates its time on a quiet one. The report only names tests; it
fails none (a timed test would fail with the machine's load, not with the code). Children's CPU
waits are not subtracted: a test that runs subprocesses may be named on a loaded machine.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

DEFAULT_THRESHOLD = 2.0  # seconds; the quick tier's budget is about 60 s for ~900 tests
_SCHEDSTAT = Path("/proc/thread-self/schedstat")
_KEY = "quiet_s"
LEFT_OUT = ("slow", "bmv2", "netns")   # the marks make test-quick leaves out


def runqueue_wait() -> float:
    """Seconds this thread has spent waiting for a CPU (0 where the kernel does not say)."""
    try:
        return int(_SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


class _Clock:
    """Wall time less run-queue wait, summed over a test's phases."""

    def __init__(self) -> None:
        self.total = 0.0

    @contextmanager
    def phase(self) -> Iterator[None]:
        wall, wait = time.perf_counter(), runqueue_wait()
        try:
            yield
        finally:
            self.total += max(0.0, (time.perf_counter() - wall) - (runqueue_wait() - wait))


_clocks: pytest.StashKey[_Clock] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow-threshold", type=float, default=DEFAULT_THRESHOLD, metavar="SECONDS",
                     help="name the tests without the slow mark that took longer (load-corrected; default "
                          f"{DEFAULT_THRESHOLD}); 0: no report")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with item.stash.setdefault(_clocks, _Clock()).phase():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with item.stash.setdefault(_clocks, _Clock()).phase():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    with item.stash.setdefault(_clocks, _Clock()).phase():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    report = yield
    if report.when == "teardown" and _clocks in item.stash:
        # user_properties travel with the report from an xdist worker to the controller
        report.user_properties.append((_KEY, round(item.stash[_clocks].total, 3)))
        report.user_properties.append(("left_out", any(item.get_closest_marker(m) for m in LEFT_OUT)))
    return report


class SlowReport:
    """Collects the teardown reports' times; names the unmarked tests over the threshold."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.unmarked: list[tuple[float, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if report.when == "teardown" and _KEY in props and not props["left_out"] \
                and props[_KEY] > self.threshold:
            self.unmarked.append((props[_KEY], report.nodeid))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.unmarked:
            return
        terminalreporter.section(f"over {self.threshold:g} s without the slow mark (load-corrected; tests/slow_report.py)")
        for seconds, nodeid in sorted(self.unmarked, reverse=True):
            terminalreporter.write_line(f"{seconds:7.2f}s {nodeid}")


def pytest_configure(config: pytest.Config) -> None:
    threshold = config.getoption("--slow-threshold")
    if threshold > 0 and not hasattr(config, "workerinput"):   # the xdist controller or a plain run
        config.pluginmanager.register(SlowReport(threshold), "slow-report")
