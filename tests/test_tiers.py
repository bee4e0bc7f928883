"""The test tiers: `make test-quick` leaves out what is slow or needs BMv2 or namespaces, and the slow report names
an unmarked test that takes long (tests/slow_report.py). What cannot be checked here: that every test over ~2 s
carries the mark (that needs its time; the report names offenders at the end of every run instead)."""
from __future__ import annotations

import os
import re

import pytest
from _pytest.mark.expression import Expression

from tests.slow_report import LEFT_OUT
from tests.source_tree import REPO


def quick_marks() -> str:
    (expr,) = re.findall(r"^QUICK_MARKS\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    return expr.strip()


@pytest.mark.parametrize("marks, selected", [
    (set(), True), ({"slow"}, False), ({"bmv2"}, False), ({"netns"}, False),
    ({"bmv2", "netns", "slow"}, False), ({"hypothesis"}, True),
])
def test_the_quick_tier_leaves_out_slow_bmv2_and_netns(marks: set[str], selected: bool) -> None:
    expr = Expression.compile(quick_marks())
    assert expr.evaluate(lambda name, **kwargs: name in marks) is selected
    assert '-m "$(QUICK_MARKS)"' in (REPO / "Makefile").read_text()


def test_the_report_leaves_out_what_the_quick_tier_leaves_out() -> None:
    expr = Expression.compile(quick_marks())
    assert [m for m in LEFT_OUT if expr.evaluate(lambda name, m=m, **kwargs: name == m)] == []
    assert {"slow", "bmv2", "netns"} <= set(LEFT_OUT)


# a threshold of 1 s, not 0.2: under make test's load an empty test once read 0.49 s (load-corrected)
SLEEPERS = """
import time
import pytest

def test_sleeps():
    time.sleep(1.2)

@pytest.mark.slow
def test_sleeps_marked():
    time.sleep(1.2)

@pytest.mark.netns
def test_sleeps_in_a_namespace():
    time.sleep(1.2)

def test_quick():
    pass
"""


@pytest.mark.slow
def test_the_report_names_an_unmarked_test_over_the_threshold(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.slow_report import *  # noqa: F401,F403\n")
    pytester.makepyfile(test_sleepers=SLEEPERS)
    result = pytester.runpytest_inprocess("--slow-threshold", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert "over 1 s without the slow mark" in out
    assert re.search(r"\d\.\d\ds test_sleepers.py::test_sleeps$", out, re.M)
    assert "test_sleeps_marked" not in out and "test_sleeps_in_a_namespace" not in out and "::test_quick" not in out


@pytest.mark.slow
def test_no_report_when_every_long_test_is_marked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.slow_report import *  # noqa: F401,F403\n")
    pytester.makepyfile(test_sleepers=SLEEPERS.replace("def test_sleeps():\n    time.sleep(1.2)", "def test_sleeps():\n    pass"))
    result = pytester.runpytest_inprocess("--slow-threshold", "1", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    assert "without the slow mark" not in result.stdout.str()


GROUPED = """
import os
import pytest

BASE = int(os.environ["BASE_NICE"])

@pytest.mark.netns
@pytest.mark.parametrize("n", range(4))
def test_in_a_namespace(n):
    assert os.nice(0) == BASE          # the group keeps the CPU priority it was started with

@pytest.mark.netns
@pytest.mark.mininet
@pytest.mark.parametrize("n", range(3))
def test_in_mininet(n):
    assert os.nice(0) == BASE

@pytest.mark.parametrize("n", range(4))
def test_anywhere(n):
    assert os.nice(0) == min(BASE + 10, 19)
"""

PTF = """
import os
import pytest

@pytest.mark.bmv2
@pytest.mark.parametrize("n", range(3))
def test_ptf(n):
    base = int(os.environ["BASE_NICE"])
    assert os.nice(0) == (base - 5 if os.geteuid() == 0 and os.environ.get("P4HANDOFF_TEST_GROUPS") != "one" else base)
"""


@pytest.mark.slow   # three xdist workers start (two cores)
@pytest.mark.parametrize("one", [False, True], ids=["two groups", "P4HANDOFF_TEST_GROUPS=one"])
def test_make_test_runs_each_serial_group_on_one_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                        one: bool) -> None:
    """As `make test` runs: `-n auto --dist loadgroup`, which starts a worker per core and one more."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))   # the subprocess imports tests.conftest
    monkeypatch.setenv("BASE_NICE", str(os.nice(0)))
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    if one:
        monkeypatch.setenv("P4HANDOFF_TEST_GROUPS", "one")
    else:
        monkeypatch.delenv("P4HANDOFF_TEST_GROUPS", raising=False)
    pytester.makeconftest("from tests.conftest import (pytest_collection_modifyitems, pytest_runtest_logstart,  # noqa\n"
                          "                            pytest_sessionstart, pytest_xdist_auto_num_workers)\n")
    pytester.makepyfile(test_grouped=GROUPED, test_ptf=PTF)
    result = pytester.runpytest_subprocess("-n", "auto", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=14)
    workers = len(os.sched_getaffinity(0)) + 1
    assert f"created: {workers}/{workers} workers" in result.stdout.str()
    groups = {"test_grouped.py::test_in_a_namespace": "namespaces", "test_grouped.py::test_in_mininet": "ptf-mininet",
              "test_ptf.py::test_ptf": "ptf-mininet"}
    if one:
        groups = dict.fromkeys(groups, "namespaces")
    expected = {"namespaces": 10} if one else {"namespaces": 4, "ptf-mininet": 6}
    for group, n in expected.items():
        ran = [line for line in result.outlines if "PASSED" in line
               and any(f"{test}[" in line for test, g in groups.items() if g == group)]
        assert len(ran) == n, ran
        assert all(line.rstrip().endswith(f"@{group}") for line in ran), ran   # xdist saw the group
        assert len({line.split("]")[0] for line in ran}) == 1, ran           # and kept it on one worker


def test_only_make_test_gets_the_extra_worker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-n auto` without --dist loadgroup (make test-quick, make unit) is xdist's own: a worker per core."""
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    from tests.conftest import pytest_xdist_auto_num_workers
    assert pytest_xdist_auto_num_workers(pytester.parseconfig("-n", "auto")) is None
    assert pytest_xdist_auto_num_workers(pytester.parseconfig("-n", "auto", "--dist", "loadgroup")) == \
        len(os.sched_getaffinity(0)) + 1
