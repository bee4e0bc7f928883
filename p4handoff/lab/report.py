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

from p4handoff.lab.provenance import header as provenance_header
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
            "dummies_sent": "segments"}.get(metric, "")


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
    subject = f" of {q.flow}" if q.flow else f" on {q.link}" if q.link else ""
    lines = [f"**{q.metric.replace('_', ' ')}{subject}**", ""] if q.metric != "throughput" else []
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


def _judge(e: Expectation, values: dict[str, float]) -> tuple[bool | None, float, str]:
    """(holds, margin, what we measured) of a claim on one value per variant: the means, or one repeat's.

    The margin is how far inside its bound the claim is (negative or zero where it fails), in the
    claim's own unit: the worst repeat is the one with the smallest. holds is None if a value is n/a.
    """
    metric = e.quantity.metric
    if any(m is None or math.isnan(m) for m in values.values()):
        return None, math.nan, ", ".join(f"{v} {fmt(metric, values[v])}" for v in e.variants)
    if e.kind == "order":
        gaps = [values[a] - values[b] for a, b in zip(e.variants, e.variants[1:])]
        texts = fmt_apart(metric, [values[v] for v in e.variants])
        shown = f"{e.variants[0]} {texts[0]}"
        for k in range(1, len(e.variants)):
            before, after = values[e.variants[k - 1]], values[e.variants[k]]
            shown += f" {'>' if before > after else '=' if before == after else '<'} {e.variants[k]} {texts[k]}"
        return all(g > 0 for g in gaps), min(gaps), f"{shown} {unit(metric)}"
    if e.kind == "ratio":
        a, b = e.variants
        v = values[a] / values[b] if values[b] else math.inf
        shown_metric, suffix = "ratio", ""
    else:
        v = values[e.variants[0]]
        shown_metric, suffix = metric, f" {unit(metric)}"
    margins = [x for x in (v - e.at_least if e.at_least is not None else None,
                           e.at_most - v if e.at_most is not None else None) if x is not None]
    bounds = [x for x in (e.at_least, e.at_most) if x is not None]
    return all(m >= 0 for m in margins), min(margins), fmt_apart(shown_metric, [v, *bounds])[0] + suffix


def evaluate(res: Results, e: Expectation, point: tuple) -> tuple[bool | None, str]:
    """(holds, what we measured) for one claim at one sweep point on the means over repeats; holds is None if
    a value is not measurable (n/a). Decided on unrounded means; shown with the digits that tell them apart."""
    holds, _, shown = _judge(e, {v: res.mean(point, v, e.quantity.key) for v in e.variants})
    return holds, shown


@dataclass(frozen=True)
class RepeatCheck:
    """A claim judged on one repeat: every variant's run with the same seed (paired by seed)."""

    repeat: int
    seed: int
    holds: bool | None
    margin: float
    shown: str


@dataclass(frozen=True)
class PointCheck:
    """A claim at one sweep point: on the means, in each repeat, and the two together under the claim's rule."""

    on_means: bool | None
    shown: str
    repeats: tuple[RepeatCheck, ...]
    rule: str                       # REPEAT_RULES: majority | all | means

    @property
    def held_repeats(self) -> int:
        return sum(r.holds is True for r in self.repeats)

    @property
    def measured_repeats(self) -> int:
        return sum(r.holds is not None for r in self.repeats)

    @property
    def holds(self) -> bool | None:
        """Holds on the means and, unless the rule is `means`, in more than half (or all) of the repeats."""
        if self.on_means is None:
            return None
        k, n = self.held_repeats, self.measured_repeats
        return self.on_means and (self.rule == "means" or (k == n if self.rule == "all" else 2 * k > n))

    @property
    def worst(self) -> RepeatCheck | None:
        """The failing repeat with the smallest margin (None if the claim holds in every repeat measured)."""
        failed = [r for r in self.repeats if r.holds is False]
        return min(failed, key=lambda r: r.margin) if failed else None


def check(res: Results, e: Expectation, point: tuple) -> PointCheck:
    """One claim at one sweep point, on the means and repeat by repeat (paired by seed)."""
    key = e.quantity.key
    on_means, shown = evaluate(res, e, point)
    repeats = []
    for k in range(res.repeats):
        holds, margin, text = _judge(e, {v: res.in_repeat(point, v, key, k) for v in e.variants})
        repeats.append(RepeatCheck(k, res.seed_of(k), holds, margin, text))
    return PointCheck(on_means, shown, tuple(repeats), e.repeats)


def required(e: Expectation) -> str:
    """The claim's bound in the unit its values are shown in (a ratio is a plain number)."""
    metric = "ratio" if e.kind == "ratio" else e.quantity.metric
    suffix = "" if e.kind == "ratio" else f" {unit(metric)}"
    parts = [f"≥ {fmt(metric, e.at_least)}{suffix}" if e.at_least is not None else "",
             f"≤ {fmt(metric, e.at_most)}{suffix}" if e.at_most is not None else ""]
    return " and ".join(x for x in parts if x) or "as stated"


@dataclass(frozen=True)
class Verdict:
    """One published claim over every sweep point: how many points measured it and where it held, and
    how many (point, repeat) pairs it held in."""

    claim: str
    held: int
    measured: int
    points: int
    example: str          # what we measured at the first point where it failed (or the only point)
    repeats_held: int = 0
    repeats_measured: int = 0
    worst: str = ""       # the worst repeat, if the claim fails in any

    @property
    def word(self) -> str:
        if self.measured == 0:
            return "not measurable here"
        if self.held == self.measured:
            return "holds"
        if self.held == 0:
            return "does not hold"
        return f"holds at {self.held} of {self.measured} points"

    @property
    def in_repeats(self) -> str:
        """'holds in k of n repeats' (over every sweep point), or '' for a single run."""
        if self.repeats_measured <= 1:
            return ""
        return f"holds in {self.repeats_held} of {self.repeats_measured} repeats"


def _repeat_text(res: Results, point: tuple, r: RepeatCheck) -> str:
    where = f"{point_label(res.scenario_file, point)}, " if res.scenario_file.sweep else ""
    return f"{where}repeat {r.repeat} (seed {r.seed}): {r.shown}"


def _rule_text(c: PointCheck) -> str:
    if c.rule == "means" or c.on_means is not True or c.holds:
        return ""
    need = "every repeat" if c.rule == "all" else "a majority of repeats"
    return f" — holds on the means but in {c.held_repeats} of {c.measured_repeats} repeats (needs {need})"


def verdicts(res: Results) -> list[Verdict]:
    """A verdict for every checkable claim of the scenario's paper (published.expect)."""
    sf = res.scenario_file
    out = []
    for e in (sf.published.expect if sf.published else ()):
        held = measured = k = n = 0
        first = failed = ""
        worst: tuple[float, str] | None = None
        for point in sf.points():
            c = check(res, e, point)
            where = f"{point_label(sf, point)}: " if sf.sweep else ""
            first = first or where + c.shown
            if c.holds is not None:
                measured += 1
                held += c.holds
            k, n = k + c.held_repeats, n + c.measured_repeats
            if c.holds is False and not failed:
                failed = (f"fails at {where}" if sf.sweep else "") + c.shown + _rule_text(c)
            w = c.worst
            if w is not None and (worst is None or w.margin < worst[0]):
                worst = (w.margin, _repeat_text(res, point, w))
        repeated = res.repeats > 1          # a single run per point is judged on itself: no count of repeats
        out.append(Verdict(e.claim, held, measured, len(sf.points()), failed or first, k if repeated else 0,
                           n if repeated else 0, worst[1] if worst and repeated else ""))
    return out


def claims_console(res: Results) -> str:
    """The verdicts as `p4handoff run` prints them: one loud line per claim, with its count over repeats and,
    where it fails in any repeat, the worst one."""
    sf = res.scenario_file
    vs = verdicts(res)
    if not vs and not (sf.published and sf.published.findings):
        return ""
    lines = [f"Claims of the paper ({sf.paper}), {res.backend}"
             + (f", {res.repeats} repeats paired by seed" if res.repeats > 1 else "") + ":"]
    for v in vs:
        lines.append(f"  {v.word.upper():<22} {v.claim} ({v.example})" + (f"; {v.in_repeats}" if v.in_repeats else ""))
        if v.worst:
            lines.append(f"  {'':<22}   worst repeat: {v.worst}")
    unchecked = len(sf.published.findings) if sf.published else 0
    if unchecked:
        lines.append(f"  {unchecked} published finding(s) in figure form only: listed in report.md, compare the plots")
    return "\n".join(lines)


def _claims_section(res: Results) -> list[str]:
    """One table: each claim once, with its verdict, then (for a sweep) a row per point."""
    sf = res.scenario_file
    pub = sf.published
    if pub is None or (not pub.expect and not pub.findings):
        return []
    lines = ["## The paper's claims", ""]
    repeated = res.repeats > 1
    if pub.expect:
        lines += [_RULE_SENTENCE.format(n=res.repeats) if repeated else "Decided on the one run at each point.", ""]
        head = ("| claim | verdict | " + ("sweep point | " if sf.sweep else "") + "ours (mean) | published | required | "
                + ("on the means | repeats where it holds | worst failing repeat | " if repeated else "")
                + "holds |")
        lines += [head, "|" + "---|" * (head.count("|") - 1)]
        for e, v in zip(pub.expect, verdicts(res)):
            for i, point in enumerate(sf.points()):
                c = check(res, e, point)
                word = "not measurable" if c.holds is None else "yes" if c.holds else "**no**"
                row = (f"| {e.claim} | **{v.word}**" + (f" ({v.in_repeats})" if v.in_repeats else "") + " | "
                       if i == 0 else "| | | ")
                row += f"{point_label(sf, point)} | " if sf.sweep else ""
                rule = {"all": ", in every repeat", "means": ", on the means only"}.get(e.repeats, "") if repeated else ""
                row += f"{c.shown} | {e.published if e.published is not None else '—'} | {required(e)}{rule} | "
                if repeated:
                    w = c.worst
                    row += (f"{'n/a' if c.on_means is None else 'yes' if c.on_means else 'no'} | "
                            f"{c.held_repeats} of {c.measured_repeats} | "
                            f"{f'repeat {w.repeat} (seed {w.seed}): {w.shown}' if w else '—'} | ")
                lines.append(row + word + " |")
        lines.append("")
    if pub.findings:
        lines += ["Published findings (figures; compare with the plots):", ""]
        lines += [f"- {f}" for f in pub.findings]
        lines.append("")
    return lines


_RULE_SENTENCE = ("A claim holds at a point when it holds on the means over the {n} repeats *and* in more than half "
                  "of the repeats (variants paired by seed: repeat k of each runs with seed + k), unless its "
                  "`required` column asks for every repeat (`repeats: all`) or the means only (`repeats: means`).")


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
    lines += _claims_section(res)
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


