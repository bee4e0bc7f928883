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
# two groups may run at once, on two workers. What they build cannot collide across groups: namespaces are
# named p4h-<pid>-... (netns.Sandbox), root-namespace interfaces carry the pid, switch ports are picked by the
# kernel or live in the test's own namespace, logs and sockets go to temporary directories (docs/testing.md).
PTF_GROUP, MININET_GROUP, NETNS_GROUP = "ptf", "mininet", "namespaces"
SERIAL_GROUPS = (PTF_GROUP, MININET_GROUP, NETNS_GROUP)


def serial_group(item: pytest.Item) -> str | None:
    """The serial group of a BMv2 or namespace test, None for the others (any worker, any time).

    The PTF suite has one switch and build/ptf/ for all its tests; the Mininet lab runs one network at a
    time (as the lab's users are asked to: a run paces real packets for a minute or more); the other
    BMv2 and namespace tests pace real packets too, so they do not run beside each other either.
    """
    if not (item.get_closest_marker("netns") or item.get_closest_marker("bmv2")):
        return None
    if os.environ.get("P4HANDOFF_TEST_GROUPS") == "one":     # all of them one after another (docs/testing.md)
        return NETNS_GROUP
    if item.get_closest_marker("mininet"):
        return MININET_GROUP
    return PTF_GROUP if item.path.name == "test_ptf.py" else NETNS_GROUP


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


OTHERS_NICE = 10
_niced = False
_grouped = False


def pytest_sessionstart(session: pytest.Session) -> None:
    global _grouped
    _grouped = bool(getattr(session.config.option, "loadgroup", False))   # set on xdist workers of --dist loadgroup


def pytest_runtest_logstart(nodeid: str) -> None:
    """Under --dist loadgroup (make test), the tests outside the groups run at a lower CPU priority (for good).

    The groups' tests pace real packets and time them; on two cores the other worker's simulator runs would
    take CPU from them (an emulated 20 ms path measured 26 ms). A process may lower its own priority
    without privileges; a group's worker does so only once its groups are done (the scheduler sends the
    largest units, the groups, first).
    """
    global _niced
    if _grouped and not _niced and nodeid.rpartition("@")[2] not in SERIAL_GROUPS:
        os.nice(OTHERS_NICE)
        _niced = True
