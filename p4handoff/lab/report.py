"""`report.md`: our numbers in the paper's own format, beside the published ones, gaps stated.

Sections: what ran (backend and why, seeds, wall time); the settings the
paper leaves open (so a reader can judge every comparison); ours vs
published (Mb/s and % of ideal, ratio ours/published, the gap in words);
the paper's claims (orderings, ratios, bounds) checked at every sweep
point; every measured quantity (mean ± sd over repeats); losses by cause;
the plots.
"""
from __future__ import annotations


from p4handoff.lab.claims import claims_section
from p4handoff.lab.formats import describe, fmt, fmt_apart, unit
from p4handoff.lab.provenance import header as provenance_header
from p4handoff.lab.results import Results, point_label
from p4handoff.scenario.loader import Quantity, QueueSpec, Scenario
from p4handoff.scenario.model import FRACTION_METRICS, RATE_METRICS, paper_ref
from p4handoff.scenario.units import format_rate


def _queue_text(q: QueueSpec | None) -> str:
    if q is None:
        return "none (ideal wire)"
    if q.aqm == "droptail":
        return f"drop-tail, {q.limit} packets"
    return (f"{q.aqm.upper()}, {q.limit} packets, min_th {q.min_th:g}, max_th {q.max_th:g}, max_p {q.max_p:g}, "
            f"w_q {q.w_q:g}")


def settings(scn: Scenario) -> list[str]:
    t = scn.tcp
    lines = ["| setting | value |", "|---|---|",
             f"| packet size (TCP payload) | {t.packet_size} B ({t.packet_size + 52} B on the wire) |",
             f"| receiver window (cwnd cap) | {t.window} segments |",
             f"| initial window | {t.iw} segments |",
             f"| minimum RTO | {t.min_rto:g} s (initial {t.initial_rto:g} s) |",
             f"| delayed ACKs | {'on' if t.delayed_ack else 'off'} |",
             f"| SACK / timestamps | {'on' if t.sack else 'off'} / {'on' if t.timestamps else 'off'} |"]
    for f in scn.flows:
        if f.tcp != t:
            lines.append(f"| flow {f.name} | {f.tcp.packet_size} B, window {f.tcp.window}, IW {f.tcp.iw}, "
                         f"min RTO {f.tcp.min_rto:g} s |")
    for c in scn.topology.cells:
        lines.append(f"| cell {c.name} ({c.bs}) | {format_rate(c.rate_bps)}, {c.delay * 1e3:g} ms one way, "
                     f"loss {c.loss:g}; buffer: {_queue_text(c.queue)} |")
    for link in scn.topology.links:
        if link.rate_bps is not None:
            lines.append(f"| link {link.a} → {link.b} | {format_rate(link.rate_bps)}, {link.delay * 1e3:g} ms; "
                         f"buffer: {_queue_text(link.queue)} |")
    for b in scn.topology.base_stations:
        if b.ipf:
            lines.append(f"| base station {b.name} | IPF buffering, {b.ipf_limit} packets per MH |")
    return lines


def _ours(res: Results, point: tuple, variant: str, key: str, metric: str) -> str:
    m = res.mean(point, variant, key)
    text = fmt(metric, m)
    if res.repeats > 1 and text != "n/a":      # no spread of what was not measured ("n/a ± 0.00")
        text += f" ± {fmt(metric, res.spread(point, variant, key))}"
    return text


def published_value(res: Results, point: tuple, label: str, q: Quantity) -> float | None:
    """The paper's value of table quantity `q` for `label` at `point`: a value read off a
    figure at that sweep point, else the file's value for the label (in the published window)."""
    pub = res.scenario_file.published
    if pub is None:
        return None
    here = set(point)
    for at, lab, metric, value in pub.points:
        if lab == label and metric == q.metric and set(at) <= here:
            return value
    window = pub.window or res.records[0].scenario.measure.windows[0].name
    return pub.values.get(label, {}).get(q.metric) if q.window == window else None


def _ours_vs_published(res: Results, point: tuple, label: str, q: Quantity) -> str:
    text = _ours(res, point, label, q.key, q.metric)
    p = published_value(res, point, label, q)
    return text if p is None else f"{text} (published {fmt(q.metric, p)})"


def _headline(res: Results, window: str) -> list[Quantity]:
    """The table quantities of the published window that the paper gives a number for, in table order
    (percent_of_ideal goes beside throughput): a sum where the paper gives a sum (total_throughput)."""
    pub = res.scenario_file.published
    assert pub is not None
    given = {m for v in pub.values.values() for m in v}
    table = res.records[0].scenario.measure.table
    out = [q for q in table if q.window == window and q.metric in given and q.metric != "percent_of_ideal"]
    if "percent_of_ideal" in given and not any(q.metric == "throughput" for q in out):
        out += [q for q in table if q.window == window and q.metric == "percent_of_ideal"]
    return out


def _ratio_text(ours: float, published: float) -> str:
    """ours / published with the digits that keep it apart from 1 (0.9998 is not "1.00")."""
    return fmt_apart("ratio", [ours / published, 1.0])[0]


def _gap(metric: str, ours: float, published: float) -> str:
    diff = ours - published
    size = (f"{abs(diff) / 1e6:.3f} Mb/s" if metric in RATE_METRICS else
            f"{100 * abs(diff):.2f} points" if metric in FRACTION_METRICS else f"{fmt(metric, abs(diff))} {unit(metric)}")
    return f"{'+' if diff >= 0 else '−'}{size} ({100 * diff / published:+.0f} %)"


def _published_section(res: Results) -> list[str]:
    sf = res.scenario_file
    pub = sf.published
    if pub is None or not pub.values:
        return []
    scn0 = res.records[0].scenario
    window = pub.window or scn0.measure.windows[0].name
    heads = _headline(res, window)
    if not heads:
        return []
    pq = next((q for q in scn0.measure.table if q.metric == "percent_of_ideal" and q.window == window), None)
    w = scn0.measure.window(window)
    lines = ["## Ours vs published", "", f"Source: {pub.source}. Window {w.t0:g}–{w.t1:g} s.", ""]
    if sf.sweep:
        for q in heads:
            lines += _published_sweep(res, q, pq if q.metric == "throughput" else None)
        return lines
    for point in sf.points():
        rec = next(r for r in res.records if r.point == point)
        if point:
            lines += [f"### {point_label(sf, point)}", ""]
        ideal = (rec.detail.get("ideal_bps") or {}).get(window)
        if ideal is not None or pub.ideal_bps is not None:
            rule = rec.scenario.measure.ideal.outages if rec.scenario.measure.ideal else ""
            lines.append(f"Ideal: ours {fmt('ideal', ideal) if ideal is not None else 'n/a'} Mb/s "
                         f"(outage time {rule}), published {fmt('ideal', pub.ideal_bps) if pub.ideal_bps else 'n/a'} Mb/s.")
            lines.append("")
        for q in heads:
            lines += _published_table(res, point, q, pq if q.metric == "throughput" else None)
    return lines


def _published_table(res: Results, point: tuple, q: Quantity, pq: Quantity | None) -> list[str]:
    """Each scheme's value of `q` beside the paper's (and % of ideal beside a throughput)."""
    pub = res.scenario_file.published
    assert pub is not None
    u = unit(q.metric)
    lines = [f"**{q.metric.replace('_', ' ')}{q.subject}**", ""] if q.metric != "throughput" else []
    lines += [f"| scheme | ours {u} | " + ("ours % of ideal | " if pq else "") + f"published {u} | "
              + ("published % | " if pq else "") + "ours / published | gap |",
              "|" + "---|" * (7 if pq else 5)]
    for label in res.scenario_file.labels:
        p = pub.values.get(label, {})
        ours = res.mean(point, label, q.key)
        pt, pp = p.get(q.metric), p.get("percent_of_ideal")
        row = f"| {label} | {_ours(res, point, label, q.key, q.metric)} | "
        if pq:
            row += f"{_ours(res, point, label, pq.key, 'percent_of_ideal')} | "
        row += f"{fmt(q.metric, pt) if pt is not None else '—'} | "
        if pq:
            row += f"{f'{pp:.1f}' if pp is not None else '—'} | "
        row += (f"{_ratio_text(ours, pt)} | {_gap(q.metric, ours, pt)} |" if pt else "n/a | no published number |")
        lines.append(row)
    return lines + ["", _gap_sentence(res, point, q, pub.values), ""]


def _published_sweep(res: Results, q: Quantity, pq: Quantity | None) -> list[str]:
    """One row per sweep point: each scheme's value of `q` (and % of ideal), its ratio to the published figure."""
    sf = res.scenario_file
    pub = sf.published
    assert pub is not None
    labels = sf.labels
    u = unit(q.metric)
    head = "| " + " / ".join(a.label for a in sf.sweep) + " | " + " | ".join(
        f"{lab}: {u}" + (" (% ideal, × published)" if pq else " (× published)") for lab in labels) + " | ordering |"
    lines = [] if q.metric == "throughput" else [f"**{describe(q)}**", ""]
    lines += [head, "|" + "---|" * (len(labels) + 2)]
    pub_order = sorted((lab for lab in labels if pub.values.get(lab, {}).get(q.metric)),
                       key=lambda lab: -pub.values[lab][q.metric])
    cells = []
    for lab in labels:
        p = pub.values.get(lab, {})
        cells.append(f"{fmt(q.metric, p[q.metric]) if q.metric in p else '—'}"
                     + (f" ({p['percent_of_ideal']:.1f} %)" if pq and "percent_of_ideal" in p else ""))
    lines.append("| published | " + " | ".join(cells) + f" | {' > '.join(pub_order)} |")
    reproduced = 0
    for point in sf.points():
        cells = []
        for lab in labels:
            ours = res.mean(point, lab, q.key)
            pt = pub.values.get(lab, {}).get(q.metric)
            parts = ([f"{res.mean(point, lab, pq.key):.1f} %"] if pq else []) + \
                ([f"{_ratio_text(ours, pt)}×"] if pt else [])
            cells.append(_ours(res, point, lab, q.key, q.metric) + (f" ({', '.join(parts)})" if parts else ""))
        order = sorted(pub_order, key=lambda lab: -res.mean(point, lab, q.key))
        same = order == pub_order
        reproduced += same
        lines.append("| " + " / ".join(str(v) for _, v in point) + " | " + " | ".join(cells)
                     + f" | {'reproduced' if same else '**differs**: ' + ' > '.join(order)} |")
    lines += ["", f"The published ordering ({' > '.join(pub_order)}) holds at {reproduced} of "
              f"{len(sf.points())} sweep points. Ratios above 1 mean we measured more than the paper.", ""]
    return lines


def _gap_sentence(res: Results, point: tuple, tq: Quantity, values: dict[str, dict[str, float]]) -> str:
    m = tq.metric
    labels = [lab for lab in res.scenario_file.labels if values.get(lab, {}).get(m)]
    if not labels:
        return ""
    ours_order = sorted(labels, key=lambda lab: -res.mean(point, lab, tq.key))
    pub_order = sorted(labels, key=lambda lab: -values[lab][m])
    same = ours_order == pub_order
    worst = max(labels, key=lambda lab: abs(res.mean(point, lab, tq.key) / values[lab][m] - 1))
    wr = res.mean(point, worst, tq.key) / values[worst][m]
    return (f"Ordering of schemes: ours {' > '.join(ours_order)}; published {' > '.join(pub_order)} — "
            f"{'reproduced' if same else 'NOT reproduced'}{_resolution(res, point, tq, ours_order)}. Largest gap: "
            f"{worst}, ours is {_ratio_text(wr, 1.0)}× the published figure ({100 * (wr - 1):+.0f} %).")


def _resolution(res: Results, point: tuple, tq: Quantity, order: list[str]) -> str:
    """Which neighbours in our ordering the repeats cannot tell apart (means closer than their two sds added).

    A real-time lab run lands wherever the connection's state happens to be
    at the handoff (docs/lab.md: the sawtooth phase), so one lab run cannot
    order schemes whose difference is smaller than that run-to-run spread.
    """
    if res.repeats < 2:
        return (" (one real-time run: its run-to-run spread is unknown; `--repeat K` measures it)"
                if res.backend == "lab" else "")
    close = [f"{a} and {b}" for a, b in zip(order, order[1:])
             if abs(res.mean(point, a, tq.key) - res.mean(point, b, tq.key))
             < res.spread(point, a, tq.key) + res.spread(point, b, tq.key)]
    if not close:
        return f" (every step of it larger than the spread over {res.repeats} repeats)"
    return f" ({'; '.join(close)} differ by less than their spread over {res.repeats} repeats: not resolved)"


def _quantities_section(res: Results) -> list[str]:
    sf = res.scenario_file
    scn0 = res.records[0].scenario
    rep = f" (mean ± sd over {res.repeats} repeats, seeds {res.seed}–{res.seed + res.repeats - 1})" \
        if res.repeats > 1 else f" (seed {res.seed})"
    lines = ["## Measured" + rep, ""]
    if not sf.sweep:
        head = "| variant | " + " | ".join(describe(q) for q in scn0.measure.table) + " |"
        lines += [head, "|" + "---|" * (len(scn0.measure.table) + 1)]
        for label in sf.labels:
            lines.append(f"| {label} | " + " | ".join(_ours_vs_published(res, (), label, q)
                                                       for q in scn0.measure.table) + " |")
        return lines + [""]
    for q in scn0.measure.table:
        lines += [f"**{describe(q)}**", "",
                  "| " + " / ".join(a.label for a in sf.sweep) + " | " + " | ".join(sf.labels) + " |",
                  "|" + "---|" * (len(sf.labels) + 1)]
        for point in sf.points():
            lines.append("| " + " / ".join(str(v) for _, v in point) + " | "
                         + " | ".join(_ours_vs_published(res, point, lab, q) for lab in sf.labels) + " |")
        lines.append("")
    return lines


def _losses_section(res: Results) -> list[str]:
    lines = ["## Data losses by cause (repeat 0, whole run)", "", "| run | flow | sent | lost | causes |",
             "|---|---|---|---|---|"]
    for r in res.records:
        if r.repeat:
            continue
        where = r.variant + (f" ({point_label(res.scenario_file, r.point)})" if r.point else "")
        for name, f in r.detail["flows"].items():
            if not f.get("losses_known", True):
                rtx = f.get("retransmits")
                lines.append(f"| {where} | {name} | n/a | n/a | not observable per flow"
                             + (f"; the sender retransmitted {rtx} segments" if rtx is not None else "") + " |")
                continue
            causes = ", ".join(f"{k} {v}" for k, v in f["drops"].items()) or "—"
            lines.append(f"| {where} | {name} | {f['data_segments_sent']} | {f['data_losses']} | {causes} |")
    notes = sorted({n for r in res.records if r.data is not None for n in r.data.notes})
    if notes:
        lines += ["", "Notes from the backend:", ""] + [f"- {n}" for n in notes]
    return lines + [""]


def _diff(a: dict, b: dict) -> dict[str, float]:
    return {k: b.get(k, 0) - a.get(k, 0) for k in sorted(set(a) | set(b)) if b.get(k, 0) - a.get(k, 0)}


def _cell_counters_section(res: Results) -> list[str]:
    """What each sampled cell's queue admitted (by class: non-priority, IPF priority, DSBP dummy) and
    dropped (by cause) in each window: the switch's own counters in the lab, the queue's in the simulator."""
    rows = []
    for r in res.records:
        data = r.data
        if r.repeat or data is None or not data.link_snapshots:
            continue
        where = r.variant + (f" ({point_label(res.scenario_file, r.point)})" if r.point else "")
        for link in r.scenario.measure.queue_links:
            for w in r.scenario.measure.windows:
                a, b = (data.snapshot(t).get(link) for t in (w.t0, w.t1))
                if a is None or b is None:
                    continue
                admitted = _diff(a.get("admitted") or {}, b.get("admitted") or {})
                drops = _diff(a.get("drops") or {}, b.get("drops") or {})
                rows.append(f"| {where} | {link} | {w.name} | "
                            + " | ".join(f"{admitted.get(k, 0):.0f}" for k in ("np", "prio", "dummy")) + " | "
                            + (", ".join(f"{k} {v:.0f}" for k, v in drops.items()) or "—") + " |")
    if not rows:
        return []
    source = ("the BMv2 switches' counters (aqm_enqueued by class, aqm_*_dropped)" if res.backend == "lab"
              else "the simulated queues")
    return ["## Cell queues: admitted and dropped (repeat 0)", "",
            f"From {source} at the window edges. Priority = IPF's forwarded packets, dummies = DSBP's.", "",
            "| run | cell | window | admitted non-priority | admitted priority | admitted dummies | dropped, by cause |",
            "|---|---|---|---|---|---|---|", *rows, ""]


def _runs_and_wall(res: Results) -> str:
    """How many runs took how long; runs kept by `--resume` ran in an earlier session, outside this wall time."""
    ran = len(res.records) - res.resumed
    kept = f", {res.resumed} kept from an earlier session" if res.resumed else ""
    return f"{ran} runs in {res.wall_seconds:.1f} s wall{kept}"


def render(res: Results, figures: list[str]) -> str:
    sf = res.scenario_file
    scn0 = res.records[0].scenario
    lines = [f"# {sf.title}", "",
             f"Scenario `{sf.source}` (paper: `{paper_ref(sf.paper)}`) · backend **{res.backend}**"
             + (f" ({res.backend_reason})" if res.backend_reason else "")
             + f" · run `{res.run_id}` · {_runs_and_wall(res)}", ""]
    prov = provenance_header(res.provenance)
    if prov:
        lines += [*[f"{line}  " for line in prov[:-1]], prov[-1], ""]
    if sf.overrides:
        lines += ["Overrides: " + ", ".join(f"`{p}={v}`" for p, v in sf.overrides), ""]
    if sf.description:
        lines += [sf.description.strip(), ""]
    lines += _published_section(res)
    lines += claims_section(res)
    lines += _quantities_section(res)
    lines += ["## Settings (the paper leaves these open)", ""] + settings(scn0) + [
        f"| variant {v.label} | its compared flows: " + ", ".join(f"{k} {val}" for k, val in v.tcp) + " |"
        for v in sf.variants if v.tcp] + [""]
    if scn0.assumptions:
        lines += [f"- {a}" for a in scn0.assumptions] + [""]
    if sf.sweep:
        lines += ["Swept: " + "; ".join(f"`{a.path}` ({a.label}) over {list(a.values)}" for a in sf.sweep), ""]
    lines += _losses_section(res)
    lines += _cell_counters_section(res)
    if figures:
        lines += ["## Plots", ""] + [f"![{f}]({f})" for f in figures] + [""]
    return "\n".join(lines)


def summary_table(res: Results) -> str:
    """The ours-vs-published table alone (what `p4handoff run` prints at the end)."""
    section = _published_section(res)
    if section:
        return "\n".join(section[2:])
    return "\n".join(_quantities_section(res)[2:])


