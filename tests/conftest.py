"""pytest configuration shared by the suites."""

# tests/p4/ holds a P4 program and PTF cases for the harness self-test; they
# are run by tests/test_ptf.py through ptf, never collected by pytest itself.
collect_ignore = ["p4"]
