"""The controller's JSON-lines log (controller/eventlog.py): each line out at once, or a held block's at its end.

The daemon holds the log while it handles a batch (thousands of lines for a
group of registrations: one write instead of one each) and flushes it before
each step's packets leave, so whoever sees a packet finds what led to it in
the log.
"""
from __future__ import annotations

import json
import threading

from p4handoff.controller.eventlog import JsonLog, flush, held


def lines(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_each_line_is_out_at_once_unless_held(tmp_path):
    path = tmp_path / "log.jsonl"
    with open(path, "a") as out:              # not line-buffered, as `ctl run` opens it
        log = JsonLog(out)
        log("a", {"n": 1})
        assert [r["event"] for r in lines(path)] == ["a"]
        with held(log):
            log("b", {})
            log("c", {})
            assert [r["event"] for r in lines(path)] == ["a"]         # held
            with held(log):                                            # nested: the outer block decides
                log("d", {})
            assert [r["event"] for r in lines(path)] == ["a"]
            flush(log)                                                 # before a step's packets leave
            assert [r["event"] for r in lines(path)] == ["a", "b", "c", "d"]
            log("e", {})
        assert [r["event"] for r in lines(path)] == ["a", "b", "c", "d", "e"]
        stamps = [r["ts"] for r in lines(path)]
        assert stamps == sorted(stamps)                                # stamped when logged, not when written


def test_other_threads_lines_wait_for_the_held_block_and_none_is_torn(tmp_path):
    path = tmp_path / "log.jsonl"
    with open(path, "a") as out:
        log = JsonLog(out)
        with held(log):
            workers = [threading.Thread(target=lambda k=k: [log("w", {"k": k, "i": i}) for i in range(200)])
                       for k in range(4)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        got = lines(path)
        assert len(got) == 800 and {(r["k"], r["i"]) for r in got} == {(k, i) for k in range(4) for i in range(200)}


def test_a_plain_log_function_is_left_alone():
    seen: list = []
    log = lambda e, f: seen.append(e)      # noqa: E731  (the parts' tests log into a list)
    with held(log):
        log("x", {})
    flush(log)
    assert seen == ["x"]
