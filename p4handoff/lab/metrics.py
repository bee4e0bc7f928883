"""The papers' metrics, computed from a `RunData` and its `Scenario` (whatever backend ran).

- throughput: bytes delivered in order to the receiving application in the
  window / window length (Tsukamoto, Taleb: "bytes received"; Utsumi:
  cumulatively acknowledged bytes).
- ideal: Σ(bottleneck rate × time the MH's path exists) / window, the
  bottleneck being the slowest link from the source to the MH's cell;
  `outages: excluded` counts interruption time as 0 (the paper's switching
  case, 3.192 Mb/s), `credited` counts it at the next link's rate (the
  paper's single-switch cases, normalised to 0.384 and 10 Mb/s).
- loss_rate: data segments dropped in the window / data segments sent in it
  (DSBP's metric; dummies and pure ACKs are not counted).
- forwarded_resent: data segments the sender sent again in the window whose
  earlier copy the network forwarded (IPF) and did not drop afterwards: a
  second copy of a segment that was on its way (issue 20).
- utilization: bytes the link sent in the window × 8 / (rate × length);
  a packet whose transmission straddles an edge counts with the part
  transmitted inside, and the quotient is clamped to 1 against float
  rounding (so it never exceeds 100 %).
- max_queue, min_queue, max_avg_queue: over the queue samples in the window
  (min_queue 0 = the queue ran empty: RED's synchronisation collapse).
- priority_admitted: IPF priority packets the cell's queue admitted in the
  window (the flush, as the new BS's M-RED counts it); in the lab the
  switch's counter, so lab and simulator compare the same quantity.
"""
from __future__ import annotations

import math
from typing import Any

from p4handoff.hosts.sim import measure
from p4handoff.lab.rundata import RunData
from p4handoff.scenario.loader import Quantity, Scenario


def path_intervals(scn: Scenario, mh: str, source: str) -> list[tuple[float, float, float]]:
    """(start, end, bottleneck b/s) for each period in which `mh`'s home address has a path from `source`."""
    m = next(x for x in scn.topology.mobile_hosts if x.name == mh)
    periods: list[tuple[float, str | None]] = []   # (time, cell or None while detached)
    attached: dict[str, str] = {}
    active: str | None = None
    if m.start:
        attached[m.start[0]] = m.start[1]
        active = m.start[0]
        periods.append((0.0, m.start[1]))
    for op in scn.mobility:
        if op.mh != mh:
            continue
        if op.op == "attach":
            attached[op.iface] = op.attach_cell
        elif op.op == "detach":
            attached.pop(op.iface, None)
            if op.iface == active:
                active = None
                periods.append((op.at, None))
        else:
            active = op.iface
            periods.append((op.at, attached[op.iface]))
    out = []
    for k, (t, cell) in enumerate(periods):
        if cell is None:
            continue
        end = periods[k + 1][0] if k + 1 < len(periods) else math.inf
        out.append((t, end, bottleneck(scn, source, cell)))
    return out


def bottleneck(scn: Scenario, source: str, cell: str) -> float:
    """The slowest rate from `source` through the wired path to `cell`'s BS, and the cell itself."""
    c = scn.topology.cell(cell)
    path = scn.topology.wired_path(source, c.bs)
    if path is None:
        raise ValueError(f"no wired path from {source} to {c.bs}")
    rates = [c.rate_bps] + [link.rate_bps for link, _ in path if link.rate_bps is not None]
    return min(rates)


def ideal_bps(scn: Scenario, t0: float, t1: float) -> float:
    """The papers' ideal throughput over [t0, t1] under the scenario's outage rule."""
    spec = scn.measure.ideal
    if spec is None:
        raise ValueError("the scenario has no measure.ideal")
    intervals = path_intervals(scn, spec.mh, spec.source)
    if spec.outages == "credited":
        # each interruption counts at the rate of the link that follows it
        intervals = [(intervals[k - 1][1] if k else s, e, r) for k, (s, e, r) in enumerate(intervals)]
    return measure.ideal_bps(intervals, t0, t1)


_COUNTER_NAMES = {"bytes_sent": "byte", "drops": "drop", "admitted": "admission"}


def _link_counter(data: RunData, link: str, t: float, key: str, part: str | None = None) -> float:
    """Counter `key` of `link` at time `t`: all its parts (drops by cause), or only `part` (admitted by class:
    "np", "prio", "dummy"). The lab counts admissions only at a cell's queue: elsewhere, a clear error."""
    counters = data.snapshot(t).get(link)
    if counters is None or key not in counters:
        raise ValueError(f"no {_COUNTER_NAMES.get(key, key)} counters for link {link!r}")
    value = counters[key]
    if part is not None:
        return float(value.get(part, 0))
    return float(sum(value.values())) if isinstance(value, dict) else float(value)


def value(scn: Scenario, data: RunData, q: Quantity) -> float:
    """One quantity of one run (b/s for rates, % for percent_of_ideal, fractions for rates of loss)."""
    w = scn.measure.window(q.window)
    t0, t1 = w.t0, w.t1
    length = t1 - t0
    if q.metric in ("throughput", "delivered_bytes", "percent_of_ideal", "loss_rate", "data_losses", "dummies_sent",
                    "forwarded_resent"):
        if q.flow is None:
            raise ValueError(f"{q.key}: {q.metric} is a flow's metric but names no flow")
        f = data.flows[q.flow]
        if q.metric == "throughput":
            return (f.delivered(t1) - f.delivered(t0)) * 8 / length
        if q.metric == "delivered_bytes":
            return float(f.delivered(t1) - f.delivered(t0))
        if q.metric == "percent_of_ideal":
            ideal = ideal_bps(scn, t0, t1)
            return 100.0 * (f.delivered(t1) - f.delivered(t0)) * 8 / length / ideal if ideal else math.nan
        if q.metric in ("loss_rate", "data_losses", "dummies_sent", "forwarded_resent") and not f.losses_known:
            return math.nan
        if q.metric == "forwarded_resent":
            return float(f.forwarded_resent_between(t0, t1))
        if q.metric == "loss_rate":
            sent = f.sent_between(t0, t1)
            return f.dropped_between(t0, t1) / sent if sent else 0.0
        if q.metric == "data_losses":
            return float(f.dropped_between(t0, t1))
        return float(f.dummies_sent)
    if q.metric == "total_throughput":
        return sum((data.flows[n].delivered(t1) - data.flows[n].delivered(t0)) * 8 / length
                   for n in scn.summed_flows(q))
    if q.metric == "ideal":
        return ideal_bps(scn, t0, t1)
    link = q.link
    assert link is not None
    if q.metric == "utilization":
        rate = data.link_rates.get(link)
        if not rate:
            raise ValueError(f"link {link} has no rate: utilisation is undefined")
        sent_bytes = _link_counter(data, link, t1, "bytes_sent") - _link_counter(data, link, t0, "bytes_sent")
        # a backend that could not read the counters exactly at the edges says when it did
        a, b = (data.snapshot(t).get(link, {}).get("read_at", t) for t in (t0, t1))
        # bytes serialised in [t0, t1] never exceed rate x length, but their float sum can by an ulp or so
        # (1.0000000000003777 was stored): a share of the link's time is at most all of it
        return min(1.0, sent_bytes * 8 / (rate * (b - a if b > a else length)))
    if q.metric == "drops":
        return _link_counter(data, link, t1, "drops") - _link_counter(data, link, t0, "drops")
    if q.metric == "priority_admitted":
        return _link_counter(data, link, t1, "admitted", "prio") - _link_counter(data, link, t0, "admitted", "prio")
    rows = [r for r in data.queue_rows if r[1] == link and t0 <= r[0] <= t1]
    if not rows:
        raise ValueError(f"no queue samples of {link} in {t0:g}..{t1:g} s (list it under measure.queues)")
    if q.metric == "max_avg_queue":
        return max(r[5] for r in rows)
    if q.metric == "min_queue":
        return float(min(r[2] for r in rows))
    return float(max(r[2] for r in rows))


def compute(scn: Scenario, data: RunData) -> dict[str, Any]:
    """Every table quantity, per-flow summaries and the ideal of each window, as plain JSON data."""
    out: dict[str, Any] = {"quantities": {q.key: value(scn, data, q) for q in scn.measure.table}}
    flows = {}
    for name, f in data.flows.items():
        flows[name] = {"delivered_bytes": f.ack_bytes[-1] if f.ack_bytes else 0,
                       "data_segments_sent": len(f.send_times), "data_losses": len(f.drop_times),
                       "drops": dict(sorted(f.drops.items())), "dummies_sent": f.dummies_sent,
                       "dummy_acks_received": f.dummy_acks, "losses_known": f.losses_known,
                       "retransmits": f.retransmits, "forwarded_resent": len(f.forwarded_resent_times)}
        for w in scn.measure.windows:
            flows[name][f"throughput_bps@{w.name}"] = (f.delivered(w.t1) - f.delivered(w.t0)) * 8 / (w.t1 - w.t0)
    out["flows"] = flows
    if scn.measure.ideal is not None:
        out["ideal_bps"] = {w.name: ideal_bps(scn, w.t0, w.t1) for w in scn.measure.windows}
    return out
