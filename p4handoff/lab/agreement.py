"""Does one sweep agree with another? A lab set against the simulator, claim by claim and quantity by quantity.

A lab point of three repeats decides a claim by one repeat (docs/lab.md, "Each ACK at its own arrival
time"), so comparing its verdict with the simulator's says "agrees" or "disagrees" partly by chance. This
compares what the verdicts are made of instead. Per claim and sweep point: how often the claim holds repeat by
repeat in the reference (typically the simulator over many seeds) and in the other sets pooled, and Fisher's
exact test of whether those two rates differ. Per quantity of the table and variant: where the other sets'
runs fall in the reference's spread, and a Mann-Whitney test of whether both come from one distribution.
"Consistent" means only that the test could not tell them apart at `alpha` (docs/lab.md, "Agreement").
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from p4handoff.lab.claims import PointCheck, check
from p4handoff.lab.formats import fmt, unit
from p4handoff.lab.results import Results, point_label
from p4handoff.scenario.model import Quantity

ALPHA = 0.05


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p of Fisher's exact test on the 2×2 table [[a, b], [c, d]] (rows: samples; columns: held, not).

    The sum of the probabilities of every table with the same margins that is no more likely than this one."""
    if min(a, b, c, d) < 0:
        raise ValueError(f"a 2×2 table counts, it cannot hold {min(a, b, c, d)}")
    row, col, n = a + b, a + c, a + b + c + d
    if n == 0:
        return 1.0

    def prob(x: int) -> float:
        return math.comb(col, x) * math.comb(n - col, row - x) / math.comb(n, row)

    seen = prob(a)
    return min(1.0, sum(p for x in range(max(0, row + col - n), min(row, col) + 1)
                        if (p := prob(x)) <= seen * (1 + 1e-9)))


def mann_whitney(xs: list[float], ys: list[float]) -> float:
    """Two-sided p of the Mann-Whitney U test (normal approximation, ties averaged and corrected for,
    continuity-corrected): could both samples come from one distribution? 1.0 where one is empty."""
    n1, n2 = len(xs), len(ys)
    if not n1 or not n2:
        return 1.0
    ranked = sorted((v, i < n1) for i, v in enumerate([*xs, *ys]))
    rank_sum, ties, i = 0.0, 0.0, 0
    while i < len(ranked):
        j = i
        while j + 1 < len(ranked) and ranked[j + 1][0] == ranked[i][0]:
            j += 1
        mid = (i + j) / 2 + 1                                 # the average rank of a run of ties
        rank_sum += mid * sum(first for _, first in ranked[i:j + 1])
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    n = n1 + n2
    u = rank_sum - n1 * (n1 + 1) / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0                                            # every value equal
    z = max(0.0, abs(u - n1 * n2 / 2) - 0.5) / math.sqrt(var)
    return math.erfc(z / math.sqrt(2))


@dataclass(frozen=True)
class ClaimAgreement:
    """One claim at one sweep point: the reference's check and every other set's."""

    claim: str
    point: tuple
    reference: PointCheck
    others: tuple[PointCheck, ...]

    @property
    def pooled(self) -> tuple[int, int]:
        """(repeats where it holds, repeats measured) over the other sets together."""
        return sum(c.held_repeats for c in self.others), sum(c.measured_repeats for c in self.others)

    @property
    def p_value(self) -> float:
        k, n = self.pooled
        r = self.reference
        return fisher_exact(r.held_repeats, r.measured_repeats - r.held_repeats, k, n - k)

    @property
    def same_verdicts(self) -> int:
        """How many of the other sets reach the reference's verdict."""
        return sum(c.holds == self.reference.holds for c in self.others)


@dataclass(frozen=True)
class QuantityAgreement:
    """One quantity of one variant at one sweep point: the reference's runs and the other sets' runs pooled."""

    quantity: Quantity
    variant: str
    point: tuple
    reference: tuple[float, ...]
    others: tuple[float, ...]

    @property
    def inside(self) -> int:
        """The other sets' runs within the reference's range (min to max)."""
        lo, hi = min(self.reference), max(self.reference)
        return sum(lo <= v <= hi for v in self.others)

    @property
    def p_value(self) -> float:
        return mann_whitney(list(self.reference), list(self.others))


def compare(reference: Results, others: list[Results]) -> tuple[list[ClaimAgreement], list[QuantityAgreement]]:
    """Every claim and table quantity the reference and all the others share, at every shared sweep point.

    Claims match by their text, variants by label, points by their values. ValueError if nothing is shared."""
    if not others:
        raise ValueError("nothing to compare the reference with: give at least one other results directory")
    ref_sf = reference.scenario_file
    points = [p for p in ref_sf.points() if all(p in o.scenario_file.points() for o in others)]
    claims = []
    for e in (ref_sf.published.expect if ref_sf.published else ()):
        theirs = [next((x for x in (o.scenario_file.published.expect if o.scenario_file.published else ())
                        if x.claim == e.claim), None) for o in others]
        if any(t is None or t != e for t in theirs):
            continue                                   # a claim the others do not make, or make differently
        claims += [ClaimAgreement(e.claim, p, check(reference, e, p), tuple(check(o, e, p) for o in others))
                   for p in points]
    quantities = []
    for q in ref_sf.plan[0].scenario.measure.table:
        for variant in ref_sf.labels:
            for p in points:
                ref = tuple(reference.values(p, variant, q.key))
                oth = tuple(v for o in others for v in o.values(p, variant, q.key))
                if ref and oth:
                    quantities.append(QuantityAgreement(q, variant, p, ref, oth))
    if not claims and not quantities:
        raise ValueError(f"{reference.directory} and {', '.join(str(o.directory) for o in others)} share no claim "
                         "and no measured quantity at a common sweep point (same claims, variant labels and points?)")
    return claims, quantities


def render(reference: Results, others: list[Results], alpha: float = ALPHA) -> str:
    """The comparison as Markdown: a claims table, then a quantities table."""
    claims, quantities = compare(reference, others)
    sf = reference.scenario_file
    where = (lambda p: f" ({point_label(sf, p)})") if sf.sweep else (lambda p: "")
    ref_name = f"{reference.backend} {reference.directory.name}"
    lines = [f"# Agreement: {sf.name}", "",
             f"Reference: {ref_name} ({reference.repeats} repeats from seed {reference.seed}). Others, pooled: "
             + ", ".join(f"{o.backend} {o.directory.name} ({o.repeats} from seed {o.seed})" for o in others) + ".",
             "", f"*p*: Fisher's exact test on how often each claim holds per repeat; Mann-Whitney on each "
             f"quantity's runs. Below {alpha}: **differs**; otherwise the test cannot tell them apart "
             "(consistent, which is not proof of agreement with few repeats).", ""]
    if claims:
        lines += ["| claim | reference: verdict, repeats where it holds | others: verdicts | pooled repeats "
                  "| same verdict | p | |", "|---|---|---|---|---|---|---|"]
        for c in claims:
            k, n = c.pooled
            word = "not measured" if n == 0 else "**differs**" if c.p_value < alpha else "consistent"
            lines.append(f"| {c.claim}{where(c.point)} | {_word(c.reference)}, {c.reference.held_repeats} of "
                         f"{c.reference.measured_repeats} | {', '.join(_word(o) for o in c.others)} | {k} of {n} "
                         f"| {c.same_verdicts} of {len(c.others)} | {c.p_value:.3f} | {word} |")
        lines.append("")
    if quantities:
        lines += ["| quantity | variant | reference: min, median, max | others: median (n) | others in the "
                  "reference's range | p | |", "|---|---|---|---|---|---|---|"]
        for a in quantities:
            m = a.quantity.metric
            word = "**differs**" if a.p_value < alpha else "consistent"
            lines.append(f"| {a.quantity.key}{where(a.point)} | {a.variant} | {fmt(m, min(a.reference))}, "
                         f"{fmt(m, statistics.median(a.reference))}, {fmt(m, max(a.reference))} {unit(m)} | "
                         f"{fmt(m, statistics.median(a.others))} ({len(a.others)}) | {a.inside} of "
                         f"{len(a.others)} | {a.p_value:.3f} | {word} |")
        lines.append("")
    return "\n".join(lines)


def _word(c: PointCheck) -> str:
    return "n/a" if c.holds is None else "holds" if c.holds else "no"
