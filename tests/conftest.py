"""pytest configuration shared by the suites."""
import os

import pytest

# the per-test time report behind the `slow` mark (--slow-threshold)
from tests.slow_report import (pytest_addoption, pytest_configure, pytest_runtest_makereport,  # noqa: F401
                               pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown)

# tests/p4/ holds a P4 program and PTF cases for the harness self-test; they
# are run by tests/test_ptf.py through ptf, never collected by pytest itself.
collect_ignore = ["p4"]

# The serial groups of `make test` (xdist --dist loadgroup): each runs on one worker, one test after another;
# the two groups run at once, on two workers, and the other tests on the rest (one worker more than the cores:
# `pytest_xdist_auto_num_workers`). What they build cannot collide across groups: namespaces are named
# p4h-<pid>-... (netns.Sandbox), root-namespace interfaces carry the pid, switch ports are picked by the kernel or
# live in the test's own namespace, logs and sockets go to temporary directories (docs/testing.md).
SWITCHES_GROUP, NETNS_GROUP = "ptf-mininet", "namespaces"
SERIAL_GROUPS = (SWITCHES_GROUP, NETNS_GROUP)
PTF_MODULE = "test_ptf.py"


def serial_group(item: pytest.Item) -> str | None:
    """The serial group of a BMv2 or namespace test, None for the others (any worker, any time).

    The PTF suite has one switch and build/ptf/ for all its tests, and its AQM and DSBP bursts must outrun
    BMv2's paced queues; the Mininet lab runs one network at a time (as the lab's users are asked to: a run paces
    real packets for a minute or more). They run one after the other, beside the other BMv2 and namespace tests,
    which pace real packets too and so do not run beside each other either.
    """
    if not (item.get_closest_marker("netns") or item.get_closest_marker("bmv2")):
        return None
    if os.environ.get("P4HANDOFF_TEST_GROUPS") == "one":     # all of them one after another (docs/testing.md)
        return NETNS_GROUP
    if item.get_closest_marker("mininet") or item.path.name == PTF_MODULE:
        return SWITCHES_GROUP
    return NETNS_GROUP


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's hook
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` under --dist loadgroup (make test): a worker per core, and one more.

    The two serial groups wait for paced packets most of the time (0.15-0.3 of a core each, docs/testing.md),
    so with a worker per core both cores sit mostly idle while the groups run; the extra worker takes the other
    tests meanwhile, at the lower priority they have anyway (`group_nice`). Elsewhere xdist decides (None).
    """
    if config.getoption("dist", None) != "loadgroup" or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make test` (xdist, --dist loadgroup) each serial group's tests run one after another on one worker.

    Run next to each other they would contend for names and time; next to the simulator tests on the other
    worker they run as on any shared machine.
    """
    for item in items:
        group = serial_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


OTHERS_NICE = 10   # the tests outside the groups, below the groups
PTF_BOOST = 5      # the PTF suite, above the other group (root only; PTF needs root anyway)
_grouped = False
_base_nice = 0


def pytest_sessionstart(session: pytest.Session) -> None:
    global _grouped, _base_nice
    _grouped = bool(getattr(session.config.option, "loadgroup", False))   # set on xdist workers of --dist loadgroup
    _base_nice = os.getpriority(os.PRIO_PROCESS, 0)


def group_nice(nodeid: str, base: int, root: bool) -> int:
    """The CPU priority (nice value) a worker runs test `nodeid` at under --dist loadgroup (make test).

    The groups' tests pace real packets and time them. On two cores the other workers' simulator runs
    would take CPU from them (an emulated 20 ms path measured 26 ms), so those run 10 lower. The PTF
    suite's bursts must outrun BMv2's paced queues, and its processes start and send in Python. When
    the other group runs beside it, the PTF suite is 5 above (at load 11, its AQM and DSBP tests failed
    1 of 10 beside the namespace group and 0 of 10 alone). Its switch and `ptf` processes inherit the
    worker's priority.
    """
    module, _, rest = nodeid.partition("::")
    group = rest.rpartition("@")[2] if "@" in rest else None
    if group == SWITCHES_GROUP and module.rpartition("/")[2] == PTF_MODULE:
        return base - PTF_BOOST if root else base
    return base if group in SERIAL_GROUPS else min(base + OTHERS_NICE, 19)


def pytest_runtest_logstart(nodeid: str) -> None:
    """Set the worker's priority for the test about to run (`group_nice`). Groups come first (the scheduler
    sends the largest units first), so a worker only ever lowers its priority, except to enter the PTF
    suite after the Mininet tests of its group, which needs root anyway."""
    if not _grouped:
        return
    want = group_nice(nodeid, _base_nice, os.geteuid() == 0)
    if os.getpriority(os.PRIO_PROCESS, 0) != want:
        os.setpriority(os.PRIO_PROCESS, 0, want)
