"""The paper's claims judged on our numbers (issue 9; repeat by repeat since issue 25).

A claim holds at a sweep point when it holds on the means over the repeats and, by its rule
(`repeats: majority | all | means`), in more than half, or all, of the repeats, variants paired by seed.
The console line, the report's claims table and the claims map all read `check` and `verdicts`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from p4handoff.lab.formats import fmt, fmt_apart, unit
from p4handoff.lab.results import Results, point_label
from p4handoff.scenario.loader import Expectation


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
    width = max([22, *(len(v.word) for v in vs)])      # "HOLDS AT 16 OF 24 POINTS" keeps its column
    for v in vs:
        lines.append(f"  {v.word.upper():<{width}} {v.claim} ({v.example})" + (f"; {v.in_repeats}" if v.in_repeats else ""))
        if v.worst:
            lines.append(f"  {'':<{width}}   worst repeat: {v.worst}")
    unchecked = len(sf.published.findings) if sf.published else 0
    if unchecked:
        lines.append(f"  {unchecked} published finding(s) in figure form only: listed in report.md, compare the plots")
    return "\n".join(lines)


def claims_section(res: Results) -> list[str]:
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
