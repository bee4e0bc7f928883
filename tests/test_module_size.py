"""No module of the product does several jobs in one long file (issue 14): at most about 600 lines.

The one exception is the TCP state machine (RFC 9293 in one file, as smoltcp
keeps its TCP socket), whose handoff hooks sit together in one marked section.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "p4handoff"
LIMIT = 600
EXEMPT = {"hosts/tcp/connection.py"}
GENERATED = "controller/p4runtime/generated"


def long_modules(root: Path, limit: int, exempt: set[str]) -> dict[str, int]:
    """Module (relative path) -> its line count, for every module over `limit` not exempt."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in exempt or rel.startswith(GENERATED):
            continue
        lines = len(path.read_text().splitlines())
        if lines > limit:
            out[rel] = lines
    return out


def test_no_product_module_is_over_the_limit() -> None:
    assert long_modules(PACKAGE, LIMIT, EXEMPT) == {}


HOOKS = ("force_rto", "freeze", "unfreeze", "close_receive_window", "open_receive_window", "notify")


def test_the_tcp_state_machine_keeps_its_handoff_hooks_in_one_section() -> None:
    text = (PACKAGE / "hosts" / "tcp" / "connection.py").read_text()
    start = text.index("# handoff hooks")
    section = text[start:text.index("# ====", text.index("# ====", start) + 1)]
    assert [h for h in HOOKS if f"    def {h}(" not in section] == []
    assert [h for h in HOOKS if text.count(f"    def {h}(") != 1] == []


def test_the_check_sees_a_long_module(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text("x = 1\n" * 11)
    (tmp_path / "short.py").write_text("x = 1\n" * 10)
    assert long_modules(tmp_path, 10, set()) == {"long.py": 11}
    assert long_modules(tmp_path, 10, {"long.py"}) == {}
