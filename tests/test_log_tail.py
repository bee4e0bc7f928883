"""`topo/testbed.py`'s LogTail: a JSON-lines log read as it grows, each line parsed once.

The benchmarks and BMv2 tests poll the controller's log many times a second;
each poll must see exactly the finished lines, none twice, and start over when
the file is replaced or truncated.
"""
from __future__ import annotations

import json
import os

from p4handoff.topo.testbed import LogTail


def line(n: int) -> str:
    return json.dumps({"event": "e", "n": n}) + "\n"


def test_only_finished_lines_count_and_none_is_parsed_twice(tmp_path):
    path = tmp_path / "controller.log"
    tail = LogTail(path)
    assert tail.rows() == []                                  # not there yet
    path.write_text(line(1) + line(2)[:7])                    # the daemon is writing line 2
    assert [r["n"] for r in tail.rows()] == [1]
    with open(path, "a") as f:
        f.write(line(2)[7:] + line(3))
    assert [r["n"] for r in tail.rows()] == [1, 2, 3]
    assert [r["n"] for r in tail.rows()] == [1, 2, 3]        # nothing new: the same rows


def test_a_replaced_or_truncated_log_is_read_from_its_start(tmp_path):
    path = tmp_path / "controller.log"
    path.write_text(line(1) + line(2))
    tail = LogTail(path)
    assert len(tail.rows()) == 2
    path.write_text(line(7))                                  # truncated in place and rewritten
    assert [r["n"] for r in tail.rows()] == [7]
    other = tmp_path / "new.log"
    other.write_text(line(8) + line(9))
    os.replace(other, path)                                   # another file under the same name
    assert [r["n"] for r in tail.rows()] == [8, 9]


def test_log_events_filter_the_tail(tmp_path):
    path = tmp_path / "controller.log"
    path.write_text(json.dumps({"event": "a"}) + "\n" + json.dumps({"event": "b"}) + "\n")
    assert LogTail(path).events("b") == [{"event": "b"}]
    assert len(LogTail(path).events()) == 2
