"""Scenario documents as models (p4handoff.scenario.doc): every problem at once, each once, at its path."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.scenario.loader import parse, read_document
from p4handoff.scenario.units import ScenarioError

VH = Path(__file__).resolve().parent.parent / "traces" / "vh-wlan-to-3g.yaml"
MOVE = "topology.mobile_hosts[mh].moves[0]"


def errors_of(change) -> dict[str, str]:
    doc = read_document(VH)
    change(doc)
    with pytest.raises(ScenarioError) as info:
        parse(doc, "test.yaml")
    return dict(info.value.errors)


def _cell(doc: dict, name: str) -> dict:
    return next(c for c in doc["topology"]["cells"] if c["name"] == name)


def _move(doc: dict) -> dict:
    return doc["topology"]["mobile_hosts"][0]["moves"][0]


def test_a_move_names_exactly_one_kind() -> None:
    errs = errors_of(lambda d: _move(d).update(attach={"iface": "g3", "cell": "g3"}))
    assert list(errs) == [MOVE] and "exactly one of switch, alternate, visits" in errs[MOVE]


def test_a_misspelt_key_of_a_move_is_one_error_against_that_kind() -> None:
    errs = errors_of(lambda d: _move(d).update(outge=_move(d).pop("outage")))
    assert list(errs) == [f"{MOVE}.outge"]
    assert errs[f"{MOVE}.outge"].startswith("unknown field (did you mean outage? known: label, at, outage, warn, switch")


def test_a_move_naming_an_interface_the_host_lacks() -> None:
    errs = errors_of(lambda d: _move(d)["switch"].update(to="lte"))
    assert errs == {f"{MOVE}.switch.to": "mh has no interface 'lte' (has: wlan, g3)"}


def test_every_problem_of_one_queue_at_once() -> None:
    errs = errors_of(lambda d: _cell(d, "g3").update(queue={"aqm": "red", "limit": 0, "dummy_threshold": 5}))
    queue = "topology.cells[g3].queue"
    assert set(errs) == {f"{queue}.{k}" for k in ("limit", "min_th", "max_th", "max_p", "w_q")}
    assert errs[f"{queue}.min_th"] == "required: average queue (packets) where early drops begin (red and mred " \
                                      "only, required there)"
    errs = errors_of(lambda d: _cell(d, "g3").update(queue={"limit": 10, "max_p": 0.1, "dummy_threshold": 11}))
    assert errs == {"topology.cells[g3].queue.max_p": "only for aqm red or mred (this queue is droptail)",
                    "topology.cells[g3].queue.dummy_threshold": "must not exceed limit (10), got 11"}


def test_schemes_and_variants_together_are_one_error() -> None:
    errs = errors_of(lambda d: d.update(variants=[{"label": "a", "scheme": "reno"}]))
    assert errs == {"(top).schemes": "give schemes or variants, not both (a variant may set a scheme)"}


def test_a_claim_with_a_wrong_bound_is_still_checked_against_the_table() -> None:
    claim = {"claim": "x", "variant": "TCP/mm", "metric": "loss_rate", "flow": "main", "at_most": "lots"}
    errs = errors_of(lambda d: d["published"].update(expect=[claim]))
    assert set(errs) == {"published.expect[0]", "published.expect[0].at_most"}
    assert "not in measure.table" in errs["published.expect[0]"]


def test_a_link_whose_ends_cannot_be_read_does_not_make_its_directions_unknown() -> None:
    def change(d: dict) -> None:
        d["topology"]["links"][1]["between"] = "gw ar"
        d["measure"]["queues"]["links"] = ["g3", "gw->ar"]
    assert errors_of(change) == {"topology.links[1].between": "must be a list of two node names, got 'gw ar'"}


def test_resolving_problems_of_valid_sections_come_with_the_others() -> None:
    """A flow naming no host and a window past the run's end: one is the flow's, the other needs the timeline."""
    def change(d: dict) -> None:
        d["flows"][0]["to"] = "ghost"
        d["measure"]["windows"][0]["from"] = "handoff.end"
        d["measure"]["windows"][0]["to"] = 99
    errs = errors_of(change)
    assert errs["flows[main].to"] == "no host named 'ghost' (hosts: ch, mh)"
    assert errs["measure.windows[handoff]"] == "window ends at 99 s, after the run (60 s)"
    assert len(errs) == 2


def test_every_run_is_resolved_when_the_file_is_read_and_the_runner_takes_them(tmp_path: Path) -> None:
    from p4handoff.lab.runner import plan_sweep
    from p4handoff.scenario.loader import load
    from p4handoff.lab.sim_backend import SimBackend

    sf = load(VH.with_name("vh-wlan-to-3g-buffers.yaml"))
    assert [(r.variant, r.point) for r in sf.plan] == [(v, p) for p in sf.points() for v in sf.variants]
    assert len(sf.plan) > 1 and all(r.scenario.variant == r.variant.label and r.scenario.point == r.point
                                    for r in sf.plan)
    sweep = plan_sweep(sf, SimBackend(), repeats=2, results_root=tmp_path)
    assert len(sweep.runs) == 2 * len(sf.plan)
    assert all(any(run.scenario is r.scenario for r in sf.plan) for run in sweep.runs)   # not resolved again
