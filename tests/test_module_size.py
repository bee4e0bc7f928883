"""No module of the product does several jobs in one long file (issue 14): at most about 600 lines.

The one exception is the TCP state machine (RFC 9293 in one file, as smoltcp
keeps its TCP socket), whose handoff hooks sit together in one marked section.
"""
from __future__ import annotations

from pathlib import Path

from tests.source_tree import REPO, product_modules

LIMIT = 600
EXEMPT = {"p4handoff.hosts.tcp.connection"}


def long_modules(files: dict[str, Path], limit: int, exempt: set[str]) -> dict[str, int]:
    """Module -> its line count, for every module over `limit` not exempt."""
    out = {}
    for name, path in sorted(files.items()):
        lines = len(path.read_text().splitlines())
        if name not in exempt and lines > limit:
            out[name] = lines
    return out


def test_no_product_module_is_over_the_limit() -> None:
    assert long_modules(product_modules(), LIMIT, EXEMPT) == {}


HOOKS = ("force_rto", "hold_flight", "pace", "freeze", "unfreeze", "close_receive_window", "open_receive_window", "notify")


def test_the_tcp_state_machine_keeps_its_handoff_hooks_in_one_section() -> None:
    text = (REPO / "p4handoff" / "hosts" / "tcp" / "connection.py").read_text()
    start = text.index("# handoff hooks")
    section = text[start:text.index("# ====", text.index("# ====", start) + 1)]
    assert [h for h in HOOKS if f"    def {h}(" not in section] == []
    assert [h for h in HOOKS if text.count(f"    def {h}(") != 1] == []


def test_the_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * 11)
    (tmp_path / "short.py").write_text("x = 1\n" * 10)
    files = {"long": tmp_path / "long.py", "short": tmp_path / "short.py"}
    assert long_modules(files, 10, set()) == {"long": 11}
    assert long_modules(files, 10, {"long"}) == {}
