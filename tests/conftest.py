"""pytest configuration shared by the suites."""
import os

import pytest

# the per-test time report behind the `slow` mark (--slow-threshold)
from tests.slow_report import (pytest_addoption, pytest_configure, pytest_runtest_makereport,  # noqa: F401
                               pytest_runtest_call, pytest_runtest_setup, pytest_runtest_teardown)

# tests/p4/ holds a P4 program and PTF cases for the harness self-test; they
# are run by tests/test_ptf.py through ptf, never collected by pytest itself.
collect_ignore = ["p4"]

SERIAL_GROUP = "namespaces"


@pytest.hookimpl(tryfirst=True)   # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `make test` (xdist, --dist loadgroup) the BMv2 and namespace tests run one after another on one worker.

    They build Mininet links under root-namespace names, pace real packets and start switches: run next to each
    other they would contend for names and time; next to the simulator tests on the other worker they run as on
    any shared machine.
    """
    for item in items:
        if item.get_closest_marker("netns") or item.get_closest_marker("bmv2"):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))


OTHERS_NICE = 10
_niced = False
_grouped = False


def pytest_sessionstart(session: pytest.Session) -> None:
    global _grouped
    _grouped = bool(getattr(session.config.option, "loadgroup", False))   # set on xdist workers of --dist loadgroup


def pytest_runtest_logstart(nodeid: str) -> None:
    """Under --dist loadgroup (make test), the tests outside the group run at a lower CPU priority (for good).

    The group's tests pace real packets and time them; on two cores the other worker's simulator runs would
    take CPU from them (an emulated 20 ms path measured 26 ms). A process may lower its own priority
    without privileges; the group's worker does so only once the group is done (the group is sent first).
    """
    global _niced
    if _grouped and not _niced and not nodeid.endswith(f"@{SERIAL_GROUP}"):
        os.nice(OTHERS_NICE)
        _niced = True
