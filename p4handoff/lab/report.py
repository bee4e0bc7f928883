"""`report.md`: our numbers in the paper's own format, beside the published ones, gaps stated.

Sections: what ran (backend and why, seeds, wall time); the settings the
paper leaves open (so a reader can judge every comparison); ours vs
published (Mb/s and % of ideal, ratio ours/published, the gap in words);
the paper's claims (orderings, ratios, bounds) checked at every sweep
point; every measured quantity (mean ± sd over repeats); losses by cause;
the plots.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from p4handoff.lab.results import Results, point_label
from p4handoff.scenario.loader import Expectation, Quantity, QueueSpec, Scenario
from p4handoff.scenario.model import FRACTION_METRICS, RATE_METRICS, paper_ref
from p4handoff.scenario.units import format_rate


def fmt(metric: str, v: float | None, extra: int = 0) -> str:
    """A value in the unit the papers use: Mb/s, %, packets, counts (`extra` more decimals)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if metric in RATE_METRICS:
        return f"{v / 1e6:.{3 + extra}f}"
    if metric in ("percent_of_ideal", "max_avg_queue"):
        return f"{v:.{1 + extra}f}"
    if metric == "ratio":
        return f"{v:.{2 + extra}f}"
    if metric in FRACTION_METRICS:
        return f"{100 * v:.{2 + extra}f}"
    if extra == 0 and float(v).is_integer():
        return f"{v:.0f}"
    return f"{v:.{1 + extra}f}"


def fmt_apart(metric: str, values: list[float]) -> list[str]:
    """`values` formatted with as many decimals as it takes for different values to read
    differently (a claim is never decided on digits the reader cannot see)."""
    for extra in range(7):
        texts = [fmt(metric, v, extra) for v in values]
        if all(a != b for (a, x), (b, y) in itertools.combinations(zip(texts, values), 2) if x != y):
            return texts
    return texts


def unit(metric: str) -> str:
    return {"throughput": "Mb/s", "total_throughput": "Mb/s", "ideal": "Mb/s", "percent_of_ideal": "% of ideal",
            "loss_rate": "%", "utilization": "%", "max_avg_queue": "packets", "max_queue": "packets",
            "min_queue": "packets",
            "data_losses": "packets", "drops": "packets", "delivered_bytes": "bytes",
            "dummies_sent": "segments", "forwarded_resent": "segments"}.get(metric, "")


def describe(q: Quantity) -> str:
    subject = f" of {q.flow}" if q.flow else f" on {q.link}" if q.link else ""
    return f"{q.metric.replace('_', ' ')}{subject} ({unit(q.metric)}, window {q.window})"


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


def _published_section(res: Results) -> list[str]:
    sf = res.scenario_file
    pub = sf.published
    if pub is None or not pub.values:
        return []
    scn0 = res.records[0].scenario
    window = pub.window or scn0.measure.windows[0].name
    tq = next((q for q in scn0.measure.table if q.metric == "throughput" and q.window == window), None)
    pq = next((q for q in scn0.measure.table if q.metric == "percent_of_ideal" and q.window == window), None)
    if tq is None:
        return []
    w = scn0.measure.window(window)
    lines = ["## Ours vs published", "", f"Source: {pub.source}. Window {w.t0:g}–{w.t1:g} s.", ""]
    if sf.sweep:
        return lines + _published_sweep(res, tq, pq, window)
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
        lines += ["| scheme | ours Mb/s | ours % of ideal | published Mb/s | published % | ours / published | gap |",
                  "|---|---|---|---|---|---|---|"]
        for label in sf.labels:
            p = pub.values.get(label, {})
            ours = res.mean(point, label, tq.key)
            ours_pct = _ours(res, point, label, pq.key, "percent_of_ideal") if pq else "n/a"
            pt, pp = p.get("throughput"), p.get("percent_of_ideal")
            ratio = f"{ours / pt:.2f}" if pt else "n/a"
            if pt:
                diff = ours - pt
                gap = f"{'+' if diff >= 0 else '−'}{abs(diff) / 1e6:.3f} Mb/s ({100 * diff / pt:+.0f} %)"
            else:
                gap = "no published number"
            lines.append(f"| {label} | {_ours(res, point, label, tq.key, 'throughput')} | {ours_pct} | "
                         f"{fmt('throughput', pt) if pt else '—'} | {f'{pp:.1f}' if pp is not None else '—'} | "
                         f"{ratio} | {gap} |")
        lines += ["", _gap_sentence(res, point, tq, pub.values), ""]
    return lines


def _published_sweep(res: Results, tq: Quantity, pq: Quantity | None, window: str) -> list[str]:
    """One row per sweep point: each scheme's Mb/s, % of ideal and ratio to the published figure."""
    sf = res.scenario_file
    pub = sf.published
    assert pub is not None
    labels = sf.labels
    head = "| " + " / ".join(a.label for a in sf.sweep) + " | " + " | ".join(
        f"{lab}: Mb/s (% ideal, × published)" for lab in labels) + " | ordering |"
    lines = [head, "|" + "---|" * (len(labels) + 2)]
    pub_order = sorted((lab for lab in labels if pub.values.get(lab, {}).get("throughput")),
                       key=lambda lab: -pub.values[lab]["throughput"])
    cells = []
    for lab in labels:
        p = pub.values.get(lab, {})
        cells.append(f"{fmt('throughput', p['throughput']) if 'throughput' in p else '—'}"
                     + (f" ({p['percent_of_ideal']:.1f} %)" if "percent_of_ideal" in p else ""))
    lines.append("| published | " + " | ".join(cells) + f" | {' > '.join(pub_order)} |")
    reproduced = 0
    for point in sf.points():
        cells = []
        for lab in labels:
            ours = res.mean(point, lab, tq.key)
            pt = pub.values.get(lab, {}).get("throughput")
            pct = f"{res.mean(point, lab, pq.key):.1f} %" if pq else ""
            cells.append(f"{_ours(res, point, lab, tq.key, 'throughput')} ({pct}"
                         + (f", {ours / pt:.2f}×" if pt else "") + ")")
        order = sorted(pub_order, key=lambda lab: -res.mean(point, lab, tq.key))
        same = order == pub_order
        reproduced += same
        lines.append("| " + " / ".join(str(v) for _, v in point) + " | " + " | ".join(cells)
                     + f" | {'reproduced' if same else '**differs**: ' + ' > '.join(order)} |")
    lines += ["", f"The published ordering ({' > '.join(pub_order)}) holds at {reproduced} of "
              f"{len(sf.points())} sweep points. Ratios above 1 mean we measured more than the paper.", ""]
    return lines


def _gap_sentence(res: Results, point: tuple, tq: Quantity, values: dict[str, dict[str, float]]) -> str:
    labels = [lab for lab in res.scenario_file.labels if values.get(lab, {}).get("throughput")]
    if not labels:
        return ""
    ours_order = sorted(labels, key=lambda lab: -res.mean(point, lab, tq.key))
    pub_order = sorted(labels, key=lambda lab: -values[lab]["throughput"])
    same = ours_order == pub_order
    worst = max(labels, key=lambda lab: abs(res.mean(point, lab, tq.key) / values[lab]["throughput"] - 1))
    wr = res.mean(point, worst, tq.key) / values[worst]["throughput"]
    return (f"Ordering of schemes: ours {' > '.join(ours_order)}; published {' > '.join(pub_order)} — "
            f"{'reproduced' if same else 'NOT reproduced'}{_resolution(res, point, tq, ours_order)}. Largest gap: "
            f"{worst}, ours is {wr:.2f}× the published figure ({100 * (wr - 1):+.0f} %).")


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


def evaluate(res: Results, e: Expectation, point: tuple) -> tuple[bool | None, str]:
    """(holds, what we measured) for one claim at one sweep point; holds is None if a value
    is not measurable (n/a). Decided on unrounded means; shown with the digits that tell them apart."""
    key, metric = e.quantity.key, e.quantity.metric
    means = {v: res.mean(point, v, key) for v in e.variants}
    if any(m is None or math.isnan(m) for m in means.values()):
        return None, ", ".join(f"{v} {fmt(metric, means[v])}" for v in e.variants)
    if e.kind == "order":
        holds = all(means[a] > means[b] for a, b in zip(e.variants, e.variants[1:]))
        texts = fmt_apart(metric, [means[v] for v in e.variants])
        shown = f"{e.variants[0]} {texts[0]}"
        for k in range(1, len(e.variants)):
            before, after = means[e.variants[k - 1]], means[e.variants[k]]
            shown += f" {'>' if before > after else '=' if before == after else '<'} {e.variants[k]} {texts[k]}"
        return holds, f"{shown} {unit(metric)}"
    if e.kind == "ratio":
        a, b = e.variants
        r = means[a] / means[b] if means[b] else math.inf
        holds = (e.at_least is None or r >= e.at_least) and (e.at_most is None or r <= e.at_most)
        bounds = [x for x in (e.at_least, e.at_most) if x is not None]
        return holds, fmt_apart("ratio", [r, *bounds])[0]
    v = means[e.variants[0]]
    holds = (e.at_least is None or v >= e.at_least) and (e.at_most is None or v <= e.at_most)
    bounds = [x for x in (e.at_least, e.at_most) if x is not None]
    return holds, f"{fmt_apart(metric, [v, *bounds])[0]} {unit(metric)}"


def required(e: Expectation) -> str:
    """The claim's bound in the unit its values are shown in (a ratio is a plain number)."""
    metric = "ratio" if e.kind == "ratio" else e.quantity.metric
    suffix = "" if e.kind == "ratio" else f" {unit(metric)}"
    parts = [f"≥ {fmt(metric, e.at_least)}{suffix}" if e.at_least is not None else "",
             f"≤ {fmt(metric, e.at_most)}{suffix}" if e.at_most is not None else ""]
    return " and ".join(x for x in parts if x) or "as stated"


@dataclass(frozen=True)
class Verdict:
    """One published claim over every sweep point: how many points measured it and where it held."""

    claim: str
    held: int
    measured: int
    points: int
    example: str          # what we measured at the first point where it failed (or the only point)

    @property
    def word(self) -> str:
        if self.measured == 0:
            return "not measurable here"
        if self.held == self.measured:
            return "holds"
        if self.held == 0:
            return "does not hold"
        return f"holds at {self.held} of {self.measured} points"


def verdicts(res: Results) -> list[Verdict]:
    """A verdict for every checkable claim of the scenario's paper (published.expect)."""
    sf = res.scenario_file
    out = []
    for e in (sf.published.expect if sf.published else ()):
        held = measured = 0
        first = failed = ""
        for point in sf.points():
            holds, ours = evaluate(res, e, point)
            where = f"{point_label(sf, point)}: " if sf.sweep else ""
            first = first or where + ours
            if holds is not None:
                measured += 1
                held += holds
            if holds is False and not failed:
                failed = f"fails at {where}{ours}" if sf.sweep else ours
        out.append(Verdict(e.claim, held, measured, len(sf.points()), failed or first))
    return out


def claims_console(res: Results) -> str:
    """The verdicts as `p4handoff run` prints them: one loud line per claim."""
    sf = res.scenario_file
    vs = verdicts(res)
    if not vs and not (sf.published and sf.published.findings):
        return ""
    lines = [f"Claims of the paper ({sf.paper}), {res.backend}:"]
    for v in vs:
        lines.append(f"  {v.word.upper():<22} {v.claim} ({v.example})")
    unchecked = len(sf.published.findings) if sf.published else 0
    if unchecked:
        lines.append(f"  {unchecked} published finding(s) in figure form only: listed in report.md, compare the plots")
    return "\n".join(lines)


def _claims_section(res: Results) -> list[str]:
    sf = res.scenario_file
    pub = sf.published
    if pub is None or (not pub.expect and not pub.findings):
        return []
    lines = ["## The paper's claims", ""]
    vs = verdicts(res)
    if vs:
        lines += ["| verdict | claim | where it fails, or what we measured |", "|---|---|---|"]
        lines += [f"| **{v.word}** | {v.claim} | {v.example} |" for v in vs]
        lines.append("")
    if pub.expect:
        head = "| claim | " + ("sweep point | " if sf.sweep else "") + "ours | published | required | holds |"
        lines += [head, "|" + "---|" * (head.count("|") - 1)]
        for e in pub.expect:
            for point in sf.points():
                holds, ours = evaluate(res, e, point)
                row = f"| {e.claim} | " + (f"{point_label(sf, point)} | " if sf.sweep else "")
                row += f"{ours} | {e.published if e.published is not None else '—'} | {required(e)} | " \
                       f"{'not measurable' if holds is None else 'yes' if holds else '**no**'} |"
                lines.append(row)
        lines.append("")
    if pub.findings:
        lines += ["Published findings (figures; compare with the plots):", ""]
        lines += [f"- {f}" for f in pub.findings]
        lines.append("")
    return lines


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
    if sf.overrides:
        lines += ["Overrides: " + ", ".join(f"`{p}={v}`" for p, v in sf.overrides), ""]
    if sf.description:
        lines += [sf.description.strip(), ""]
    lines += _published_section(res)
    lines += _claims_section(res)
    lines += _quantities_section(res)
    lines += ["## Settings (the paper leaves these open)", ""] + settings(scn0) + [""]
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


