"""PNG figures of a results directory, laid out like the papers' figures.

- cwnd-<point>.png: congestion window (segments) vs time, one line per variant,
  measurement windows shaded, mobility events as vertical lines;
- seq-<point>.png: sequence number (segments acknowledged) vs time;
- queue-<point>.png: queue and average queue vs time per sampled link and variant;
- throughput.png: throughput of each variant against the ideal and the published figure;
- sweep-<quantity>.png: a quantity vs the swept value, one line per variant (mean ± sd).

Only repeat 0 is drawn for time series; at most MAX_POINTS sweep points get them.
"""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from topo.compact import open_text  # noqa: E402
from topo.report import published_value, unit  # noqa: E402
from topo.runner import Results, RunRecord, point_label, point_slug  # noqa: E402
from topo.scenario_model import FRACTION_METRICS, RATE_METRICS  # noqa: E402

MAX_POINTS = 8
DPI = 110


def _series(path: Path, t0: float, t1: float) -> tuple[list[float], list[float], list[float]]:
    """(time, cwnd segments, snd_una segments) from a sender trace, within [t0, t1]."""
    ts, cw, seq = [], [], []
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


def _decorate(ax, rec: RunRecord) -> None:
    scn = rec.scenario
    lo, hi = scn.measure.plot_range
    for w in scn.measure.windows:
        ax.axvspan(max(w.t0, lo), min(w.t1, hi), color="0.92", zorder=0)
    for op in scn.mobility:
        if lo <= op.at <= hi and op.op in ("detach", "handoff"):
            ax.axvline(op.at, color="0.6", lw=0.8, ls="--" if op.op == "detach" else ":", zorder=1)
    ax.set_xlim(lo, hi)
    ax.grid(True, lw=0.3)


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
        fig, axes = plt.subplots(len(flows), 1, figsize=(8, 2.8 * len(flows) + 0.8), squeeze=False, sharex=True)
        drawn = False
        for ax, flow in zip(axes[:, 0], flows):
            for rec in recs:
                data = rec.data.flows.get(flow) if rec.data else None
                series = _series(data.trace, lo, hi) if data else ([], [], [])
                if series[0]:
                    ax.plot(series[0], series[col], lw=1.0, label=rec.variant, drawstyle="steps-post")
                    drawn = True
            _decorate(ax, recs[0])
            ax.set_ylabel(ylabel if len(flows) == 1 else f"{flow}: {ylabel.split(' (')[0]}")
            ax.legend(fontsize=8, loc="best")
        axes[-1, 0].set_xlabel("time (s)")
        fig.suptitle(_title(res, point, ylabel.split(" (")[0]), fontsize=10)
        fig.tight_layout()
        if drawn:
            name = f"{kind}-{point_slug(point)}.png"
            fig.savefig(out / name, dpi=DPI)
            files.append(name)
        plt.close(fig)
    links = list(scn.measure.queue_links)
    if links:
        fig, axes = plt.subplots(len(recs), len(links), figsize=(6 * len(links) + 1, 2.3 * len(recs) + 0.8),
                                 squeeze=False, sharex=True)
        for i, rec in enumerate(recs):
            for j, link in enumerate(links):
                ax = axes[i, j]
                rows = [r for r in (rec.data.queue_rows if rec.data else []) if r[1] == link and lo <= r[0] <= hi]
                ax.plot([r[0] for r in rows], [r[3] for r in rows], lw=0.8, label="queue (data)")
                q = next((c.queue for c in scn.topology.cells if c.name == link), None)
                if q is not None and q.aqm != "droptail":  # drop-tail keeps no average
                    ax.plot([r[0] for r in rows], [r[5] for r in rows], lw=1.2,
                            label="average (non-priority)" if q.aqm == "mred" else "average")
                    for th in (q.min_th, q.max_th):
                        ax.axhline(th, color="0.5", lw=0.6, ls=":")
                _decorate(ax, rec)
                ax.set_title(f"{rec.variant}: {link}", fontsize=9)
                ax.set_ylabel("packets")
                if i == 0 and j == 0:
                    ax.legend(fontsize=8, loc="upper left")
        for ax in axes[-1, :]:
            ax.set_xlabel("time (s)")
        fig.suptitle(_title(res, point, "queue and average queue"), fontsize=10)
        fig.tight_layout()
        name = f"queue-{point_slug(point)}.png"
        fig.savefig(out / name, dpi=DPI)
        plt.close(fig)
        files.append(name)
    return files


def _bars(res: Results, out: Path) -> list[str]:
    sf = res.scenario_file
    scn = res.records[0].scenario
    q = next((q for q in scn.measure.table if q.metric in ("throughput", "total_throughput")), None)
    if q is None or sf.sweep:
        return []
    labels = sf.labels
    means = [res.mean((), lab, q.key) / 1e6 for lab in labels]
    sds = [res.spread((), lab, q.key) / 1e6 for lab in labels]
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 3, 3.8))
    xs = range(len(labels))
    ax.bar(xs, means, yerr=sds if res.repeats > 1 else None, color="tab:blue", alpha=0.8, label="ours")
    pub = sf.published
    if pub is not None and pub.values:
        pv = [pub.values.get(lab, {}).get("throughput") for lab in labels]
        ax.scatter([x for x, v in zip(xs, pv) if v], [v / 1e6 for v in pv if v], marker="D", color="tab:red",
                   zorder=3, label="published")
    ideal = (res.records[0].detail.get("ideal_bps") or {}).get(q.window)
    if ideal:
        ax.axhline(ideal / 1e6, color="k", ls="--", lw=1, label=f"ideal {ideal / 1e6:.3f} Mb/s")
    for x, m in zip(xs, means):
        ax.annotate(f"{m:.3f}" + (f"\n{100 * m * 1e6 / ideal:.0f} %" if ideal else ""), (x, m),
                    ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), labels)
    ax.set_ylabel(f"{q.metric.replace('_', ' ')} (Mb/s), window {q.window}")
    ax.set_ylim(0, max([*means, ideal / 1e6 if ideal else 0]) * 1.25 or 1)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(sf.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=DPI)
    plt.close(fig)
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
        fig, ax = plt.subplots(figsize=(7, 4))
        others = sf.points()
        scale = 1e6 if q.metric in RATE_METRICS else 0.01 if q.metric in FRACTION_METRICS else 1
        pub = sf.published
        marked = False
        for c, lab in enumerate(sf.labels):
            color = f"C{c % 10}"
            published = (pub.values.get(lab, {}).get(q.metric) if pub is not None and q.window == pub.window
                         else None)
            if published is not None:
                ax.axhline(published / scale, color=color, lw=0.8, ls="--")
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
        ax.set_xlabel(axis.label)
        ax.set_ylabel(f"{q.metric.replace('_', ' ')}" + (f" of {q.flow}" if q.flow else f" on {q.link}" if q.link else "")
                      + f" ({unit(q.metric)})")
        ax.grid(True, lw=0.3)
        ax.legend(fontsize=7)
        notes = [n for n, on in (("dashed: published", pub is not None and any(
            q.metric in v for v in pub.values.values()) and q.window == pub.window),
            ("◆: published at that point", marked)) if on]
        ax.set_title(sf.title + (f"\n({'; '.join(notes)})" if notes else ""), fontsize=10)
        fig.tight_layout()
        name = f"sweep-{q.metric}-{q.flow or q.link or 'all'}.png".replace(">", "").replace("/", "-")
        fig.savefig(out / name, dpi=DPI)
        plt.close(fig)
        files.append(name)
    return files


def make_all(res: Results, out: Path) -> list[str]:
    """Draw every figure into `out`; returns paths relative to the results directory."""
    out.mkdir(parents=True, exist_ok=True)
    files = _bars(res, out) + _sweeps(res, out)
    for point in _points(res):
        files += _time_series(res, out, point)
    return [f"{out.name}/{f}" for f in files]
