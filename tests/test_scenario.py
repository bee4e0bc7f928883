"""Scenario files: every file in traces/ loads; bad files are rejected with every problem named by path."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
import yaml

from tests.sim_papers import vertical_handoff
from p4handoff.lab import metrics
from p4handoff.scenario.rawdoc import expand_counts, with_path
from p4handoff.scenario import loader
from p4handoff.scenario.loader import SweepAxis, load, parse, read_document
from p4handoff.scenario.units import Errors, ScenarioError, parse_rate, parse_time

TRACES = Path(__file__).resolve().parent.parent / "traces"
VH = TRACES / "vh-wlan-to-3g.yaml"


def vh_doc() -> dict:
    return read_document(VH)


def errors_of(doc: dict, **kw) -> dict[str, str]:
    with pytest.raises(ScenarioError) as info:
        parse(doc, "test.yaml", **kw)
    return dict(info.value.errors)


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_trace_file_loads(path: Path) -> None:
    sf = load(path)
    assert sf.variants and sf.points()
    scn = sf.resolve(sf.variants[0], sf.points()[0])
    assert scn.flows and scn.measure.table
    # every file states the values the papers leave open
    assert scn.tcp.window and scn.tcp.min_rto and scn.tcp.iw and scn.tcp.delayed_ack is not None
    assert all(c.queue.limit for c in scn.topology.cells)


def test_there_is_a_file_for_every_experiment_of_the_papers() -> None:
    names = {p.stem for p in TRACES.glob("*.yaml")}
    assert {"vh-wlan-to-3g", "vh-3g-to-lan", "vh-switching", "vh-wlan-to-3g-buffers", "dsbp-capacity",
            "dsbp-speed", "ucc-loss", "ucc-friendliness", "ipf-burst", "ipf-visits", "ipf-mh-count"} <= names


def test_units() -> None:
    assert parse_rate("384kbps") == 384e3
    assert parse_rate("10 Mb/s") == 10e6
    assert parse_rate(2e6) == 2e6
    assert parse_time("70ms") == pytest.approx(0.070)
    assert parse_time("250us") == pytest.approx(250e-6)
    assert parse_time(3) == 3.0
    for bad in ("fast", "-1Mbps", 0, True):
        with pytest.raises(ValueError):
            parse_rate(bad)
    with pytest.raises(ValueError):
        parse_time("-5ms")


def test_all_errors_are_reported_with_their_paths() -> None:
    doc = vh_doc()
    doc["tcp"].pop("min_rto")
    doc["topology"]["cells"][1]["rate"] = "fast"
    doc["topology"]["cells"][0]["bs"] = "nowhere"
    doc["topology"]["cells"][0]["queu"] = {"limit": 5}
    doc["flows"][0]["to"] = "ghost"
    doc["measure"]["windows"][0]["to"] = 99
    errs = errors_of(doc)
    assert "tcp.min_rto" in errs and "required" in errs["tcp.min_rto"]
    assert "topology.cells[g3].rate" in errs and "not a rate" in errs["topology.cells[g3].rate"]
    assert "topology.cells[wlan].bs" in errs and "nowhere" in errs["topology.cells[wlan].bs"]
    assert "topology.cells[wlan].queu" in errs and "unknown field" in errs["topology.cells[wlan].queu"]


def test_flow_and_window_errors() -> None:
    doc = vh_doc()
    doc["flows"][0]["to"] = "ghost"
    doc["measure"]["windows"][0]["to"] = 99
    errs = errors_of(doc)
    assert "ghost" in errs["flows[main].to"]
    assert any("after the run" in m for p, m in errs.items() if p.startswith("measure.windows"))


def test_cell_buffer_is_required() -> None:
    doc = vh_doc()
    del doc["topology"]["cells"][1]["queue"]
    assert "required" in errors_of(doc)["topology.cells[g3].queue"]


def test_impossible_timeline_is_rejected() -> None:
    doc = vh_doc()
    doc["topology"]["mobile_hosts"][0]["moves"] = [{"handoff": {"iface": "g3"}, "at": 5}]
    errs = errors_of(doc)
    assert any("not attached" in m for p, m in errs.items() if "moves" in p)


def test_published_values_must_name_a_variant() -> None:
    doc = vh_doc()
    doc["published"]["values"]["Reno"] = {"throughput": 1}
    assert "no variant labelled 'Reno'" in errors_of(doc)["published.values.Reno"]


def test_unknown_scheme_and_bad_sweep_path() -> None:
    doc = vh_doc()
    doc["schemes"] = ["newreno", "cubic"]
    doc["sweep"] = [{"path": "topology.cells.g4.queue.limit", "values": [1]}]
    errs = errors_of(doc)
    assert "cubic" in errs["schemes[1]"]
    assert "no item named 'g4'" in errs["sweep[0].path"]


def test_invalid_sweep_point_is_reported_before_running() -> None:
    errs = errors_of(vh_doc(), extra_sweep=(SweepAxis("topology.cells.g3.queue.limit", "b", (10, 0)),))
    assert any("queue.limit" in p and "0" in m for p, m in errs.items())


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenario: x\ntopology: [unclosed\n")
    with pytest.raises(ScenarioError) as info:
        load(bad)
    assert str(info.value).startswith(f"{bad}: not valid YAML at line ") and "\n" not in str(info.value)


def test_extends_takes_the_base_and_replaces_fields(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text(VH.read_text())
    (tmp_path / "sweep.yaml").write_text("extends: base.yaml\nscenario: s2\ntitle: t2\n"
                                         "sweep: [{path: tcp.min_rto, values: [0.2, 1]}]\n")
    sf = load(tmp_path / "sweep.yaml")
    assert sf.name == "s2" and len(sf.points()) == 2
    assert sf.resolve(sf.variants[0], sf.points()[0]).tcp.min_rto == 0.2
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ScenarioError, match="cycle"):
        load(tmp_path / "a.yaml")


def test_count_expansion_with_steps() -> None:
    errors = Errors()
    items = expand_counts([{"name": "c{i}", "count": 3, "delay": {"first": "39ms", "step": "2ms"},
                            "rate": {"first": 1, "step": 1}}], "x", errors)
    assert not errors
    assert [i["name"] for i in items] == ["c1", "c2", "c3"]
    assert [i["delay"] for i in items] == ["39ms", "41ms", "43ms"]
    assert [i["rate"] for i in items] == [1, 2, 3]
    expand_counts([{"count": 0}], "x", errors)
    assert errors.items[0][0] == "x[0].count"


def test_override_by_name_and_index() -> None:
    doc = vh_doc()
    changed = with_path(with_path(doc, "topology.cells.g3.queue.limit", 40), "flows.0.scheme", "newreno")
    assert changed["topology"]["cells"][1]["queue"]["limit"] == 40 and changed["flows"][0]["scheme"] == "newreno"
    with pytest.raises(ValueError, match="no item named"):
        with_path(doc, "topology.cells.nope.rate", 1)
    with pytest.raises(ValueError, match="cannot set a field inside int"):
        with_path(doc, "duration.x", 1)


def test_an_override_copies_only_the_path_it_changes() -> None:
    doc = vh_doc()
    before = copy.deepcopy(doc)
    value = {"limit": 40, "aqm": "droptail"}
    changed = with_path(doc, "topology.cells.g3.queue", value)
    value["limit"] = 1                                          # the document keeps its own copy of the value
    assert doc == before                                        # the original is left as it was
    assert changed["topology"]["cells"][1]["queue"] == {"limit": 40, "aqm": "droptail"}
    assert changed["flows"] is doc["flows"] and changed["measure"] is doc["measure"]      # off the path: shared
    assert changed["topology"]["cells"][0] is doc["topology"]["cells"][0]
    assert changed["topology"]["cells"][1] is not doc["topology"]["cells"][1]


def test_each_distinct_run_document_is_validated_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three schemes at two sweep points are six runs but two documents (+ the file's own, checked first)."""
    calls: list[dict] = []
    real = loader.validate
    monkeypatch.setattr(loader, "validate", lambda raw, axes=(): calls.append(raw) or real(raw, axes))
    sf = parse(vh_doc(), "vh.yaml", extra_sweep=(SweepAxis("topology.cells.g3.queue.limit", "limit", (20, 40)),))
    assert len(sf.plan) == 6 and len(calls) == 3
    assert [c["topology"]["cells"][1]["queue"]["limit"] for c in calls[1:]] == [20, 40]
    assert {r.scenario.topology.cells[1].queue.limit for r in sf.plan} == {20, 40}
    assert [r.scenario.variant for r in sf.plan] == [v.label for v in sf.variants] * 2


def test_runs_sharing_a_document_still_report_their_problems_each() -> None:
    """A bad sweep point is one document but three runs: each names its variant, as if validated alone."""
    errors = errors_of(vh_doc(), extra_sweep=(SweepAxis("flows.0.start", "start", (1, 99)),))
    assert errors == {f"flows[main].start (variant {label} at flows.0.start=99)": "starts at 99 s, after the run "
                      "ends (60 s)" for label in ("TCP/mm", "Immediate", "Bandwidth-Aware")}


def test_values_equal_in_python_are_distinct_documents() -> None:
    """1 and True are equal in Python, not in a document: a sweep over both validates each."""
    errors = errors_of(vh_doc(), extra_sweep=(SweepAxis("tcp.window", "window", (1, True)),))
    assert errors and all("tcp.window=True" in path for path in errors), errors


def test_switching_timeline_and_ideal_match_the_paper_and_the_simulator() -> None:
    sf = load(TRACES / "vh-switching.yaml")
    scn = sf.resolve(sf.variants[0])
    handoffs = [(op.at, op.iface) for op in scn.mobility if op.op == "handoff"]
    assert handoffs == [(10.5, "g3"), (13.5, "wlan"), (16.5, "g3"), (19.5, "wlan")]
    assert metrics.ideal_bps(scn, 10, 20) == pytest.approx(3.192e6)
    exp = vertical_handoff("newreno", switches=(10, 13, 16, 19))
    exp.run(20.0)  # the simulator logs the path as it changes
    ours = metrics.path_intervals(scn, "mh", "ch")
    sims = exp.ideal_intervals()
    assert [(s, r) for s, _, r in ours] == [(s, r) for s, _, r in sims]


def test_credited_outage_normalises_to_the_new_link() -> None:
    sf = load(VH)
    scn = sf.resolve(sf.variants[0])
    assert metrics.ideal_bps(scn, 10, 15) == pytest.approx(384e3)
    doc = vh_doc()
    doc["measure"]["ideal"]["outages"] = "excluded"
    scn2 = parse(doc).resolve(sf.variants[0])
    assert metrics.ideal_bps(scn2, 10, 15) == pytest.approx(384e3 * 4.5 / 5)


def test_overlap_from_geometry_and_visits_come_back() -> None:
    scn = load(TRACES / "dsbp-capacity.yaml").resolve(load(TRACES / "dsbp-capacity.yaml").variants[0])
    assert scn.marks["ov.leave"] - scn.marks["ov.enter"] == pytest.approx(150 / (50 / 3.6))
    assert scn.marks["ov.handoff"] == pytest.approx(10 + 5.4)
    assert [(op.op, op.iface) for op in scn.mobility] == [("attach", "new"), ("handoff", "new"), ("detach", "old")]
    sf = load(TRACES / "ipf-visits.yaml")
    scn = sf.resolve(sf.variants[0], sf.points()[0])
    ops = [op for op in scn.mobility if op.mh == "mh2" and op.op == "attach"]
    assert [op.cell for op in ops] == ["new", "old"] * 3          # 3 visits at the first sweep point
    assert ops[0].at == pytest.approx(10 + 8 + 0.05)               # second MH starts 8 s later


def test_overlap_old_path_dropped_releases_the_old_cell_at_the_handoff() -> None:
    path = "topology.mobile_hosts.mh.moves.0.old_path"
    sf = load(TRACES / "dsbp-capacity.yaml", ((path, "dropped"),))
    scn = sf.resolve(sf.variants[0], sf.points()[0])
    detach = next(op for op in scn.mobility if op.op == "detach")
    assert detach.at == pytest.approx(scn.marks["ov.handoff"]) and detach.at < scn.marks["ov.leave"]
    # the radio leaves the old cell first, then the binding moves: an IPF old BS buffers and flushes
    assert [(op.op, op.iface) for op in scn.mobility] == [("attach", "new"), ("detach", "old"), ("handoff", "new")]
    with pytest.raises(ScenarioError) as exc:
        load(TRACES / "dsbp-capacity.yaml", ((path, "lost"),))
    assert "must be one of kept, dropped" in str(exc.value.errors)


def test_mobile_host_count_sweep_moves_flows_with_it() -> None:
    sf = load(TRACES / "ipf-mh-count.yaml")
    for point in sf.points():
        scn = sf.resolve(sf.variants[0], point)
        n = point[0][1]
        assert len(scn.topology.mobile_hosts) == n
        assert len([f for f in scn.flows if f.name.startswith("m")]) == n


def test_document_is_not_modified_by_resolving() -> None:
    sf = load(TRACES / "ipf-burst.yaml")
    before = copy.deepcopy(sf.doc)
    for _variant, _point, _ in sf.runs():
        pass
    assert sf.doc == before
    assert yaml.safe_dump(sf.doc)


def _cell(doc: dict, name: str) -> dict:
    return next(c for c in doc["topology"]["cells"] if c.get("name") == name)


def _rename(d: dict, old: str, new: str) -> None:
    d[new] = d.pop(old)


ONE_TYPO = {   # a change to vh-wlan-to-3g.yaml -> (the one error's path, words it contains)
    "misspelt field": (lambda d: _rename(_cell(d, "g3"), "rate", "rtae"),
                       "topology.cells[g3].rtae", "unknown field (did you mean rate?"),
    "misspelt name key": (lambda d: _rename(_cell(d, "g3"), "name", "nmae"),
                          "topology.cells[1].nmae", "did you mean name?"),
    "negative rate": (lambda d: _cell(d, "g3").update(rate="-384kbps"),
                      "topology.cells[g3].rate", "rate must be positive, got '-384kbps'"),
    "negative plain rate": (lambda d: _cell(d, "g3").update(rate=-384000),
                            "topology.cells[g3].rate", "must be positive"),
    "misspelt queue limit": (lambda d: _rename(_cell(d, "g3")["queue"], "limit", "limt"),
                             "topology.cells[g3].queue.limt", "did you mean limit?"),
    "bad MH address": (lambda d: d["topology"]["mobile_hosts"][0].update(home="10.0.9.x"),
                       "topology.mobile_hosts[mh].home", "must be an IPv4 address"),
    "bad correspondent address": (lambda d: d["topology"]["correspondents"][0].update(address="10.0.0.x"),
                                  "topology.correspondents[ch].address", "must be an IPv4 address"),
    "bad base station field": (lambda d: d["topology"]["base_stations"][0].update(ipf="maybe"),
                               "topology.base_stations[ar].ipf", "must be true or false"),
    "unnamed window": (lambda d: d["measure"]["windows"][0].pop("name"), "measure.windows[0].name", "required"),
    "backwards window": (lambda d: d["measure"]["windows"][0].update(to=5),
                         "measure.windows[handoff]", "before it starts"),
    "bad flow field": (lambda d: d["flows"][0].update(stop="soon"), "flows[main].stop", "not a time"),
}


@pytest.mark.parametrize("case", ONE_TYPO, ids=str)
def test_one_mistake_is_one_error_without_follow_ons(case: str) -> None:
    """A bad field in an item does not also make every reference to that item "unknown" (issue 14)."""
    change, path, words = ONE_TYPO[case]
    doc = vh_doc()
    change(doc)
    errs = errors_of(doc)
    assert list(errs) == [path], errs
    assert words in errs[path]


def test_a_reference_to_a_name_nothing_declares_is_still_an_error() -> None:
    doc = vh_doc()
    doc["topology"]["mobile_hosts"][0]["moves"][0]["switch"]["cell"] = "g4"
    doc["measure"]["queues"]["links"] = ["g5"]
    _cell(doc, "g3")["rate"] = "fast"    # an error elsewhere does not hide them
    errs = errors_of(doc)
    assert errs["topology.mobile_hosts[mh].moves[0].switch.cell"] == "no cell named 'g4'"
    assert "no link or cell named 'g5'" in errs["measure.queues.links[0]"]
    assert "not a rate" in errs["topology.cells[g3].rate"]


def test_a_variant_may_give_its_compared_flows_their_own_tcp_settings() -> None:
    """Scheme-specific windows (issue 25): the variant's tcp: reaches its compared flow only."""
    variants = [{"label": "NewReno rwnd 20", "scheme": "newreno", "tcp": {"window": 20, "min_rto": "200ms"}},
                {"label": "DSBP", "scheme": "dsbp"}]
    sf = load(TRACES / "dsbp-loaded-cell.yaml", (("schemes", None), ("variants", variants), ("sweep", []),
                                                ("published", None)))
    capped, dsbp = (sf.resolve(v) for v in sf.variants)
    flows = {f.name: f for f in capped.flows}
    assert (flows["main"].tcp.window, flows["main"].tcp.min_rto) == (20, 0.2)
    assert flows["bg1"].tcp == capped.tcp and capped.tcp.window == 128       # the other flow keeps the file's
    assert {f.name: f.tcp.window for f in dsbp.flows} == {"main": 128, "bg1": 128}
    with pytest.raises(ScenarioError) as exc:
        load(TRACES / "dsbp-loaded-cell.yaml", (("schemes", None), ("sweep", []), ("published", None),
                                                ("variants", [{"label": "x", "scheme": "dsbp", "tcp": {"windw": 20}}])))
    assert "variants[0].tcp.windw: unknown field" in str(exc.value)


def test_a_flows_start_jitter_draws_its_start_per_seed_and_flow() -> None:
    """start + a draw in [0, start_jitter) that the seed and the flow's name decide: repeats differ, reruns do not."""
    doc = vh_doc()
    doc["flows"][0]["start"] = 1
    doc["flows"][0]["start_jitter"] = "100ms"
    sf = parse(doc, "test.yaml")
    flow = sf.resolve(sf.variants[0], sf.points()[0]).flows[0]
    starts = [flow.start_at(seed) for seed in range(40)]
    assert all(1.0 <= s < 1.1 for s in starts) and max(starts) - min(starts) > 0.05
    assert len(set(starts)) == 40 and starts == [flow.start_at(seed) for seed in range(40)]
    assert [dataclasses.replace(flow, name="other").start_at(s) for s in range(40)] != starts
    assert dataclasses.replace(flow, start_jitter=0.0).start_at(7) == 1.0


def test_a_start_jitter_past_the_end_or_the_stop_or_below_zero_is_refused() -> None:
    doc = vh_doc()
    doc["flows"][0].update(start=doc["duration"] - 1, start_jitter=2)
    assert "start_jitter" in errors_of(doc)["flows[main].start"]
    doc = vh_doc()
    doc["flows"][0].update(start=1, start_jitter=1, stop=1.5)
    assert any("start_jitter" in m for p, m in errors_of(doc).items() if p.endswith(".stop"))
    doc = vh_doc()
    doc["flows"][0]["start_jitter"] = -0.1
    assert any(p.endswith(".start_jitter") for p in errors_of(doc))


def test_a_total_throughput_may_name_the_flows_it_sums_by_pattern() -> None:
    doc = read_document(TRACES / "combined-group-handoff.yaml")      # its table sums flows: ["m*"]
    sf = parse(doc, "test.yaml", extra_sweep=(SweepAxis(
        "topology.correspondents.0.count,topology.links.0.count,topology.mobile_hosts.0.count,flows.0.count",
        "K", (2, 5)),))
    for point, k in zip(sf.points(), (2, 5)):
        scn = sf.resolve(sf.variants[0], point)
        [q] = [q for q in scn.measure.table if q.flows]
        assert q.key == "total_throughput[m*]@after" and q.subject == " of m*"
        assert scn.summed_flows(q) == tuple(f"m{i}" for i in range(1, k + 1))     # however many the sweep makes
    for row, words in (({"metric": "total_throughput", "flows": ["x*"]}, "no flow matches 'x*'"),
                       ({"metric": "utilization", "link": "new", "flows": ["m*"]}, "only total_throughput")):
        doc = read_document(TRACES / "combined-group-handoff.yaml")
        doc["measure"]["table"].append(row)
        assert any(words in m for m in errors_of(doc).values()), errors_of(doc)
