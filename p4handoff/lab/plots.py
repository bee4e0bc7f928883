"""PNG figures of a results directory, laid out like the papers' figures.

- cwnd-<point>.png: congestion window (segments) vs time, one line per variant,
  measurement windows shaded, mobility events as vertical lines, the receiver
  window marked (cwnd above it is fast-recovery inflation: the sender still
  keeps at most the receiver window in flight);
- seq-<point>.png: sequence number (segments acknowledged) vs time;
- queue-<point>.png: queue and average queue vs time per sampled link and variant
  (the average wherever the backend keeps one: RED and M-RED queues, and
  every BMv2 port in the lab; the simulator's drop-tail queues keep none);
- throughput.png: throughput of each variant against the ideal and the published figure;
- sweep-<quantity>.png: a quantity vs the swept value, one line per variant (mean ± sd);
- claims-map.png (a sweep over two axes): each claim's verdict per cell, the map of where it holds; an
  ordering of two variants is drawn as wins / loses / ties (the reverse ordering holds by the same rule,
  or neither does), with the repeats it held in.

Only repeat 0 is drawn for time series; at most MAX_POINTS sweep points get them.
Every mark and shading has a legend entry; legends sit outside the axes, so
they never cover data, and category tick labels are turned so they never touch.
"""
from __future__ import annotations

import csv
import dataclasses
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from p4handoff.lab.compact import open_text  # noqa: E402
from p4handoff.lab.claims import check  # noqa: E402
from p4handoff.lab.formats import unit  # noqa: E402
from p4handoff.lab.report import published_value  # noqa: E402
from p4handoff.lab.results import Results, RunRecord, point_label, point_slug  # noqa: E402
from p4handoff.scenario.model import FRACTION_METRICS, RATE_METRICS  # noqa: E402

MAX_POINTS = 8
DPI = 110
WINDOW_SHADE = "0.92"
EVENT_STYLE = {"detach": ("--", "interface lost (detach)"), "handoff": (":", "handoff (new interface used)")}


def _series(path: Path | None, t0: float, t1: float) -> tuple[list[float], list[float], list[float]]:
    """(time, cwnd segments, snd_una segments) from a sender trace (None: the run kept none), within [t0, t1]."""
    ts: list[float] = []
    cw: list[float] = []
    seq: list[float] = []
    if path is None or not path.exists():
        return ts, cw, seq
    with open_text(path) as fh:
        for row in csv.DictReader(fh):
            t = float(row["time"])
            if t < t0:
                continue
            if t > t1:
                break
            mss = float(row["mss"]) or 1.0
            ts.append(t)
            cw.append(float(row["cwnd"]) / mss)
            seq.append(float(row["snd_una"]) / mss)
    return ts, cw, seq


def _decorate(ax: Any, rec: RunRecord) -> list[Any]:
    """Shade the measurement windows and mark the mobility events; their legend entries."""
    scn = rec.scenario
    lo, hi = scn.measure.plot_range
    shown = [w for w in scn.measure.windows if w.t0 < hi and w.t1 > lo]
    for w in shown:
        ax.axvspan(max(w.t0, lo), min(w.t1, hi), color=WINDOW_SHADE, zorder=0)
    events = []
    for op in scn.mobility:
        if lo <= op.at <= hi and op.op in EVENT_STYLE:
            ax.axvline(op.at, color="0.6", lw=0.8, ls=EVENT_STYLE[op.op][0], zorder=1)
            events.append(op.op)
    ax.set_xlim(lo, hi)
    ax.grid(True, lw=0.3)
    handles: list[Any] = []
    if shown:
        names = ", ".join(dict.fromkeys(w.name for w in shown))
        handles.append(Patch(facecolor=WINDOW_SHADE, label=f"measurement window{'s' if len(shown) > 1 else ''}: "
                                                             f"{names}"))
    for kind in EVENT_STYLE:
        if kind in events:
            handles.append(Line2D([], [], color="0.6", lw=0.8, ls=EVENT_STYLE[kind][0], label=EVENT_STYLE[kind][1]))
    return handles


def _figure(rows: int, cols: int, width: float, height: float, **kwargs: Any) -> tuple[Any, Any]:
    """A figure whose layout keeps the title, the axes and the outside legend apart."""
    return plt.subplots(rows, cols, figsize=(width, height), squeeze=False, layout="constrained", **kwargs)


def _legend(fig: Any, handles: list[Any]) -> None:
    """One legend for the figure, to the right of the axes (clear of the title), so it never covers data."""
    fig.legend(handles=handles, fontsize=8, loc="outside right center", ncols=1 + (len(handles) - 1) // 14)


def _save(fig: Any, path: Path) -> None:
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _rwnd_entry(windows: set[int], above: bool) -> Line2D:
    """The legend entry of the receiver-window lines; says why cwnd may be drawn above them."""
    note = "\ncwnd above it: fast-recovery inflation\n(RFC 6582); in flight stays ≤ rwnd" if above else ""
    sizes = "/".join(str(w) for w in sorted(windows))
    return Line2D([], [], color="k", lw=0.7, ls="-.", label=f"receiver window: {sizes} segments{note}")


def _points(res: Results) -> list[tuple]:
    pts = res.scenario_file.points()
    if len(pts) <= MAX_POINTS:
        return pts
    step = (len(pts) - 1) / (MAX_POINTS - 1)
    return [pts[round(k * step)] for k in range(MAX_POINTS)]


def _title(res: Results, point: tuple, what: str) -> str:
    extra = point_label(res.scenario_file, point)
    return f"{res.scenario_file.title}\n{what}" + (f" — {extra}" if extra else "")


def _time_series(res: Results, out: Path, point: tuple) -> list[str]:
    recs = [r for r in res.records if r.point == point and r.repeat == 0]
    scn = recs[0].scenario
    lo, hi = scn.measure.plot_range
    flows = list(scn.measure.flows)
    files = []
    for kind, col, ylabel in (("cwnd", 1, "cwnd (segments)"), ("seq", 2, "sequence number (segments acked)")):
        fig, axes = _figure(len(flows), 1, 10, 2.8 * len(flows) + 0.8, sharex=True)
        drawn = False
        legend: dict[str, Any] = {}          # label -> handle: one legend for every panel
        windows: set[int] = set()
        above = False                        # cwnd drawn above the receiver window somewhere
        for ax, flow in zip(axes[:, 0], flows):
            top = 0.0
            for rec in recs:
                data = rec.data.flows.get(flow) if rec.data else None
                series = _series(data.trace, lo, hi) if data else ([], [], [])
                if series[0]:
                    ax.plot(series[0], series[col], lw=1.0, label=rec.variant, drawstyle="steps-post")
                    top = max(top, *series[col])
                    drawn = True
            handles = ax.get_legend_handles_labels()[0] + _decorate(ax, recs[0])
            if kind == "cwnd":
                flow_windows = {r.scenario.flow(flow).tcp.window for r in recs}
                for w in flow_windows:
                    ax.axhline(w, color="k", lw=0.7, ls="-.", zorder=1)
                windows |= flow_windows
                above = above or top > min(flow_windows)
            ax.set_ylabel(ylabel if len(flows) == 1 else f"{flow}: {ylabel.split(' (')[0]}")
            for h in handles:
                legend.setdefault(h.get_label(), h)
        _legend(fig, list(legend.values()) + ([_rwnd_entry(windows, above)] if windows else []))
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(_title(res, point, ylabel.split(" (")[0]), fontsize=10)
        if drawn:
            name = f"{kind}-{point_slug(point)}.png"
            _save(fig, out / name)
            files.append(name)
        plt.close(fig)
    if scn.measure.queue_links:
        name = f"queue-{point_slug(point)}.png"
        _queues(res, recs, point, out / name)
        files.append(name)
    return files


def _queues(res: Results, recs: list[RunRecord], point: tuple, path: Path) -> None:
    """Queue and average queue of each sampled link (columns) for each variant (rows)."""
    scn = recs[0].scenario
    lo, hi = scn.measure.plot_range
    links = list(scn.measure.queue_links)
    fig, axes = _figure(len(recs), len(links), 6 * len(links) + 3.5, 2.3 * len(recs) + 0.8, sharex=True)
    legend: dict[str, Any] = {}          # label -> handle, in order of first appearance
    for i, rec in enumerate(recs):
        for j, link in enumerate(links):
            ax = axes[i, j]
            rows = [r for r in (rec.data.queue_rows if rec.data else []) if r[1] == link and lo <= r[0] <= hi]
            times = [r[0] for r in rows]
            (queue,) = ax.plot(times, [r[3] for r in rows], lw=0.8, color="C0", label="queue (data packets)")
            legend.setdefault("queue", queue)
            q = next((c.queue for c in rec.scenario.topology.cells if c.name == link), None)
            red = q is not None and q.aqm in ("red", "mred")
            if red or any(r[5] for r in rows):   # a drop-tail queue has an average where the backend keeps one
                label = {"mred": "average (non-priority, M-RED)", "red": "average (RED)"}.get(
                    q.aqm if q else "", "average (the switch's EWMA; drop-tail ignores it)")
                (average,) = ax.plot(times, [r[5] for r in rows], lw=1.2, color="C1", label=label)
                legend.setdefault(label, average)
            if red and q is not None:
                for th in (q.min_th, q.max_th):
                    ax.axhline(th, color="0.5", lw=0.6, ls=":")
                legend.setdefault("th", Line2D([], [], color="0.5", lw=0.6, ls=":", label="min_th, max_th"))
            for h in _decorate(ax, rec):
                legend.setdefault(h.get_label(), h)
            ax.set_title(f"{rec.variant}: {link}", fontsize=9)
            ax.set_ylabel("packets")
    for ax in axes[-1, :]:
        ax.set_xlabel("time (s)")
    _legend(fig, list(legend.values()))
    averaged = any(label.startswith("average") for label in legend)
    what = "queue and average queue" if averaged else "queue (drop-tail: no average kept)"
    fig.suptitle(_title(res, point, what), fontsize=10)
    _save(fig, path)


def _bars(res: Results, out: Path) -> list[str]:
    sf = res.scenario_file
    scn = res.records[0].scenario
    q = next((q for q in scn.measure.table if q.metric in ("throughput", "total_throughput")), None)
    if q is None or sf.sweep:
        return []
    labels = sf.labels
    means = [res.mean((), lab, q.key) / 1e6 for lab in labels]
    sds = [res.spread((), lab, q.key) / 1e6 for lab in labels]
    fig, axes = _figure(1, 1, 1.6 * len(labels) + 4.5, 3.8)
    ax = axes[0, 0]
    xs = range(len(labels))
    ax.bar(xs, means, yerr=sds if res.repeats > 1 else None, color="tab:blue", alpha=0.8,
           label="ours" + (f" (mean ± sd of {res.repeats})" if res.repeats > 1 else ""))
    pub = sf.published
    if pub is not None and pub.values:
        pv = [pub.values.get(lab, {}).get("throughput") for lab in labels]
        ax.scatter([x for x, v in zip(xs, pv) if v], [v / 1e6 for v in pv if v], marker="D", color="tab:red",
                   zorder=3, label="published")
    ideal = (res.records[0].detail.get("ideal_bps") or {}).get(q.window)
    if ideal:
        ax.axhline(ideal / 1e6, color="k", ls="--", lw=1, label=f"ideal {ideal / 1e6:.3f} Mb/s")
    # the numbers go under the bars, with their names: no line or marker can strike them
    ax.set_xticks(list(xs), [f"{lab}\n{m:.3f} Mb/s" + (f"\n{100 * m * 1e6 / ideal:.0f} % of ideal" if ideal else "")
                             for lab, m in zip(labels, means)], fontsize=8)
    ax.set_ylabel(f"{q.metric.replace('_', ' ')} (Mb/s), window {q.window}")
    ax.set_ylim(0, max([*means, ideal / 1e6 if ideal else 0]) * 1.1 or 1)
    _legend(fig, ax.get_legend_handles_labels()[0])
    fig.suptitle(sf.title, fontsize=10)
    _save(fig, out / "throughput.png")
    return ["throughput.png"]


def _sweeps(res: Results, out: Path) -> list[str]:
    sf = res.scenario_file
    if not sf.sweep:
        return []
    axis = sf.sweep[0]
    scn = res.records[0].scenario
    files = []
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in axis.values)
    for q in scn.measure.table:
        fig, axes = _figure(1, 1, 9, 4)
        ax = axes[0, 0]
        others = sf.points()
        scale = 1e6 if q.metric in RATE_METRICS else 0.01 if q.metric in FRACTION_METRICS else 1
        pub = sf.published
        marked = dashed = False
        for c, lab in enumerate(sf.labels):
            color = f"C{c % 10}"
            published = (pub.values.get(lab, {}).get(q.metric) if pub is not None and q.window == pub.window
                         else None)
            if published is not None:
                ax.axhline(published / scale, color=color, lw=0.8, ls="--")
                dashed = True
            at = [(p[0][1] if numeric else axis.values.index(p[0][1]), v) for p in others
                  if (v := published_value(res, p, lab, q)) is not None and v != published]
            if at:
                ax.scatter([x for x, _ in at], [v / scale for _, v in at], marker="D", s=28, color=color,
                           edgecolors="k", linewidths=0.5, zorder=4)
                marked = True
            # with several axes, draw one line per value of the others (first axis on x)
            groups: dict[tuple, list[tuple]] = {}
            for point in others:
                groups.setdefault(point[1:], []).append(point)
            for g, (rest, pts) in enumerate(groups.items()):
                xs = [p[0][1] for p in pts] if numeric else list(range(len(pts)))
                ys = [res.mean(p, lab, q.key) for p in pts]
                es = [res.spread(p, lab, q.key) for p in pts]
                tag = lab + (" " + ", ".join(f"{p.split('.')[-1]}={v}" for p, v in rest) if rest else "")
                ax.errorbar(xs, [y / scale for y in ys], yerr=[e / scale for e in es] if res.repeats > 1 else None,
                            marker="o", ms=3, lw=1, capsize=2, label=tag, color=color,
                            ls=("-", "-.", ":", (0, (5, 1)))[g % 4])
        if not numeric:
            ax.set_xticks(range(len(axis.values)), [str(v) for v in axis.values])
            if len(axis.values) > 4:    # e.g. 1Mbps .. 11Mbps: turned, they do not run into each other
                plt.setp(ax.get_xticklabels(), rotation=45, ha="right", rotation_mode="anchor")
        ax.set_xlabel(axis.label)
        ax.set_ylabel(f"{q.metric.replace('_', ' ')}{q.subject} ({unit(q.metric)})")
        ax.grid(True, lw=0.3)
        handles = ax.get_legend_handles_labels()[0]
        if dashed:
            handles.append(Line2D([], [], color="0.3", lw=0.8, ls="--", label="published (dashed, in the variant's "
                                                                              "colour)"))
        if marked:
            handles.append(Line2D([], [], marker="D", ms=5, ls="", color="0.5", markeredgecolor="k",
                                  label="published at that point"))
        _legend(fig, handles)
        fig.suptitle(sf.title, fontsize=10)
        name = f"sweep-{q.metric}-{q.about}.png".replace(">", "").replace("/", "-")
        _save(fig, out / name)
        files.append(name)
    return files


MAP_COLOURS = {"holds": "#4daf4a", "wins": "#4daf4a", "fails": "#e41a1c", "loses": "#e41a1c", "ties": "#ffd92f",
               "n/a": "0.8"}


def _map_cell(res: Results, e: Any, point: tuple) -> tuple[str, str]:
    """(outcome, text) of one claim at one point: holds/fails, or wins/loses/ties for an ordering of two."""
    c = check(res, e, point)
    text = f"{c.held_repeats}/{c.measured_repeats}" if res.repeats > 1 else ""
    if c.holds is None:
        return "n/a", text
    if e.kind != "order" or len(e.variants) != 2:
        return ("holds" if c.holds else "fails"), text
    if c.holds:
        return "wins", text
    reverse = check(res, dataclasses.replace(e, variants=e.variants[::-1]), point)
    return ("loses" if reverse.holds else "ties"), text


def _claims_map(res: Results, out: Path) -> list[str]:
    sf = res.scenario_file
    claims = sf.published.expect if sf.published else ()
    if len(sf.sweep) != 2 or not claims:
        return []
    rows_axis, cols_axis = sf.sweep
    cols = 2 if len(claims) > 1 else 1
    nrows = (len(claims) + cols - 1) // cols
    fig, axes = _figure(nrows, cols, 6.2 * cols, 2.9 * nrows)
    seen: set[str] = set()
    for k, e in enumerate(claims):
        ax = axes[k // cols, k % cols]
        for i, rv in enumerate(rows_axis.values):
            for j, cv in enumerate(cols_axis.values):
                point = next(p for p in sf.points() if dict(p) == {rows_axis.path: rv, cols_axis.path: cv})
                outcome, text = _map_cell(res, e, point)
                seen.add(outcome)
                ax.add_patch(plt.Rectangle((j, i), 1, 1, color=MAP_COLOURS[outcome], ec="w", lw=1.5))
                ax.text(j + 0.5, i + 0.5, text, ha="center", va="center", fontsize=7)
        ax.set_xlim(0, len(cols_axis.values))
        ax.set_ylim(0, len(rows_axis.values))
        ax.set_xticks([j + 0.5 for j in range(len(cols_axis.values))], [str(v) for v in cols_axis.values])
        ax.set_yticks([i + 0.5 for i in range(len(rows_axis.values))], [str(v) for v in rows_axis.values])
        ax.set_xlabel(cols_axis.label, fontsize=8)
        ax.set_ylabel(rows_axis.label, fontsize=8)
        ax.set_title("\n".join(textwrap.wrap(e.claim, 60)), fontsize=8)
        ax.tick_params(labelsize=7)
    for k in range(len(claims), nrows * cols):
        axes[k // cols, k % cols].axis("off")
    handles = [Patch(color=MAP_COLOURS[o], label=o) for o in MAP_COLOURS if o in seen]
    if res.repeats > 1:
        handles.append(Patch(color="w", label=f"k/n: repeats (of {res.repeats}) it holds in"))
    _legend(fig, handles)
    fig.suptitle(f"{sf.title}\nverdict per cell: on the means and in a majority of repeats (or as the claim asks)",
                 fontsize=9)
    _save(fig, out / "claims-map.png")
    return ["claims-map.png"]


def make_all(res: Results, out: Path) -> list[str]:
    """Draw every figure into `out`; returns paths relative to the results directory."""
    out.mkdir(parents=True, exist_ok=True)
    files = _bars(res, out) + _sweeps(res, out) + _claims_map(res, out)
    for point in _points(res):
        files += _time_series(res, out, point)
    return [f"{out.name}/{f}" for f in files]
