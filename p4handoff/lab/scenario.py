"""Scenario files (`traces/*.yaml`): schema, validation and the runs one file stands for.

A scenario is one experiment of the papers (or any other): topology,
mobility timeline, flows, what to measure, and the published numbers to
compare with. `load(path)` reads and validates it — every problem is
reported at once with its field path (`topology.cells[g3].queue.limit`) —
and returns a `ScenarioFile`; `ScenarioFile.runs()` lists the concrete
`Scenario`s (one per variant × sweep point) the runner executes. The full
schema with an example is in docs/lab.md.

Values the papers leave open (buffer sizes, receiver window, minimum RTO,
initial window, delayed ACKs) are *required* fields, so every file states
them and every report prints them.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterator

from p4handoff.hosts.cc import SCHEMES
from p4handoff.yamlfile import read_yaml
from p4handoff.lab.fields import (Declared, Known, Obj, a_list, address, boolean, item_path, name_of, number, positive_time, probability,
                         rate_or_none, text, time_value, whole)
from p4handoff.lab.rawdoc import expand_counts, get_path, set_path, split_path
from p4handoff.lab.scenario_model import (AQMS, COMPARED, FLOW_METRICS, FRACTION_METRICS, HEADER_BYTES, LINK_METRICS, METRICS,
                                 OUTAGE_RULES, PAPERS, RATE_METRICS, SCENARIO_RE, BackgroundHostSpec, BaseStationSpec,
                                 CellSpec, Expectation,
                                 FlowSpec, HostSpec, IdealSpec, LinkSpec, Measure, MobileHostSpec, MobilityOp,
                                 Published, Quantity, QueueSpec, Scenario, SweepAxis, TcpSpec, Topology, Variant,
                                 Window)
from p4handoff.lab.timeline import moves, resolve_mobility
from p4handoff.lab.units import Errors, ScenarioError, parse_fraction, parse_rate, parse_time

# -- sections -------------------------------------------------------------------------------------------

_TCP_KEYS = ("packet_size", "window", "iw", "min_rto", "delayed_ack", "initial_rto", "sack", "timestamps")
_TCP_OPEN = ("packet_size", "window", "iw", "min_rto", "delayed_ack")


def _tcp(data: Any, path: str, errors: Errors, base: TcpSpec | None) -> TcpSpec | None:
    o = Obj(data, path, errors, _TCP_KEYS)
    req = base is None
    values = {
        "packet_size": o.get("packet_size", whole(1, 1460), required=req),
        "window": o.get("window", whole(1, 1 << 14), required=req),
        "iw": o.get("iw", whole(1, 64), required=req),
        "min_rto": o.get("min_rto", positive_time, required=req),
        "delayed_ack": o.get("delayed_ack", boolean, required=req),
        "initial_rto": o.get("initial_rto", positive_time),
        "sack": o.get("sack", boolean),
        "timestamps": o.get("timestamps", boolean),
    }
    if base is not None:
        for key, value in values.items():
            if value is None:
                values[key] = getattr(base, key)
        return TcpSpec(**values)
    if any(values[k] is None for k in _TCP_OPEN):
        return None
    return TcpSpec(**{k: v for k, v in values.items() if v is not None})


_QUEUE_KEYS = ("aqm", "limit", "min_th", "max_th", "max_p", "w_q", "mean_pkt_size", "dummy_threshold")


def _queue(data: Any, path: str, errors: Errors, mean_pkt: int) -> QueueSpec | None:
    o = Obj(data, path, errors, _QUEUE_KEYS)
    if not o.ok:
        return None
    aqm = o.get("aqm", lambda v: v if v in AQMS else (_ for _ in ()).throw(
        ValueError(f"must be one of {', '.join(AQMS)}, got {v!r}")), default="droptail")
    limit = o.get("limit", whole(1, 65535), required=True)
    dummy = o.get("dummy_threshold", whole(0, 65535))
    if limit is not None and dummy is not None and dummy > limit:
        errors.add(f"{path}.dummy_threshold", f"must not exceed limit ({limit}), got {dummy}")
    if aqm in ("red", "mred"):
        min_th = o.get("min_th", number(0.0), required=True)
        max_th = o.get("max_th", number(0.0), required=True)
        max_p = o.get("max_p", number(0.0, 1.0, open_lo=True), required=True)
        w_q = o.get("w_q", number(0.0, 1.0, open_lo=True), required=True)
        mean = o.get("mean_pkt_size", whole(1, 65535), default=mean_pkt)
        if min_th is not None and max_th is not None and not min_th < max_th:
            errors.add(f"{path}.max_th", f"must be greater than min_th ({min_th}), got {max_th}")
        if None in (limit, min_th, max_th, max_p, w_q):
            return None
        return QueueSpec(aqm, limit, min_th, max_th, max_p, w_q, mean, dummy)
    for key in ("min_th", "max_th", "max_p", "w_q", "mean_pkt_size"):
        if o.has(key):
            errors.add(f"{path}.{key}", f"only for aqm red or mred (this queue is {aqm})")
    return QueueSpec(aqm, limit, dummy_threshold=dummy) if limit is not None and aqm else None


def _topology(data: Any, errors: Errors, mean_pkt: int, declared: Declared) -> Topology | None:
    path = "topology"
    o = Obj(data, path, errors, ("correspondents", "routers", "base_stations", "links", "cells",
                                  "mobile_hosts", "background_hosts"))
    if not o.ok:
        return None
    sections: dict[str, list] = {}
    for key in ("correspondents", "routers", "base_stations", "links", "cells", "mobile_hosts", "background_hosts"):
        raw = o.get(key, a_list, required=key in ("correspondents", "base_stations", "cells"), default=[])
        sections[key] = expand_counts(raw, f"{path}.{key}", errors)
        declared.declare(key, sections[key])
    names: dict[str, str] = {}
    addrs: dict[str, str] = {}

    def claim_name(name: str | None, where: str) -> None:
        if name is None:
            return
        if name in names:
            errors.add(f"{where}.name", f"{name!r} is already used by {names[name]}")
        else:
            names[name] = where

    def claim_addr(addr: str | None, where: str) -> None:
        if addr is None:
            return
        if addr in addrs:
            errors.add(where, f"address {addr} is already used by {addrs[addr]}")
        else:
            addrs[addr] = where

    hosts: list[HostSpec] = []
    for k, item in enumerate(sections["correspondents"]):
        p = item_path(f"{path}.correspondents", k, item)
        h = Obj(item, p, errors, ("name", "address"))
        name, addr = h.get("name", name_of, required=True), h.get("address", address, required=True)
        claim_name(name, p)
        claim_addr(addr, f"{p}.address")
        if name and addr:
            hosts.append(HostSpec(name, addr))
    routers: list[str] = []
    for k, item in enumerate(sections["routers"]):
        p = item_path(f"{path}.routers", k, item)
        r = Obj(item, p, errors, ("name",))
        name = r.get("name", name_of, required=True)
        claim_name(name, p)
        if name:
            routers.append(name)
    bss: list[BaseStationSpec] = []
    for k, item in enumerate(sections["base_stations"]):
        p = item_path(f"{path}.base_stations", k, item)
        b = Obj(item, p, errors, ("name", "ipf", "ipf_limit", "forward_delay"))
        name = b.get("name", name_of, required=True)
        claim_name(name, p)
        if name:
            bss.append(BaseStationSpec(name, b.get("ipf", boolean, default=False),
                                       b.get("ipf_limit", whole(1, 65535), default=64),
                                       b.get("forward_delay", time_value, default=0.0)))
    bs_names = declared("base_stations")
    cells: list[CellSpec] = []
    for k, item in enumerate(sections["cells"]):
        p = item_path(f"{path}.cells", k, item)
        c = Obj(item, p, errors, ("name", "bs", "rate", "delay", "loss", "queue", "uplink"))
        name = c.get("name", name_of, required=True)
        claim_name(name, p)
        bs = c.get("bs", name_of, required=True)
        if bs is not None and bs not in bs_names:
            errors.add(f"{p}.bs", f"no base station named {bs!r} (base stations: {', '.join(bs_names) or 'none'})")
        rate = c.get("rate", parse_rate, required=True)
        delay = c.get("delay", time_value, required=True)
        loss = c.get("loss", probability, default=0.0)
        queue = _queue(c.raw("queue"), f"{p}.queue", errors, mean_pkt) if c.has("queue") else None
        if not c.has("queue") and c.ok:
            errors.add(f"{p}.queue", "required: the cell's buffer (the papers leave it open, so state it)")
        up = Obj(c.raw("uplink", {}), f"{p}.uplink", errors, ("rate", "loss", "queue_limit"))
        up_rate = up.get("rate", parse_rate, default=rate)
        up_loss = up.get("loss", probability, default=loss)
        up_limit = up.get("queue_limit", whole(1, 65535), default=100)
        if None not in (name, bs, rate, delay, queue):
            cells.append(CellSpec(name, bs, rate, delay, loss, queue, up_rate, up_loss, up_limit))
    cell_names = declared("cells")
    mhs: list[MobileHostSpec] = []
    for k, item in enumerate(sections["mobile_hosts"]):
        p = item_path(f"{path}.mobile_hosts", k, item)
        m = Obj(item, p, errors, ("name", "home", "interfaces", "start", "moves"))
        name = m.get("name", name_of, required=True)
        claim_name(name, p)
        home = m.get("home", address, required=True)
        claim_addr(home, f"{p}.home")
        ifaces: dict[str, str] = {}
        raw_ifaces = m.get("interfaces", lambda v: v if isinstance(v, dict) and v else (_ for _ in ()).throw(
            ValueError("must map interface names to care-of addresses, e.g. {wlan: 10.0.1.9}")), required=True)
        for iface, coa in (raw_ifaces or {}).items():
            try:
                name_of(iface)
                ifaces[iface] = address(coa)
                claim_addr(ifaces[iface], f"{p}.interfaces.{iface}")
            except ValueError as exc:
                errors.add(f"{p}.interfaces.{iface}", str(exc))
        start = None
        if m.has("start"):
            s = Obj(m.raw("start"), f"{p}.start", errors, ("iface", "cell"))
            iface, cell = s.get("iface", name_of, required=True), s.get("cell", name_of, required=True)
            if iface is not None and iface not in ifaces and raw_ifaces:
                errors.add(f"{p}.start.iface", f"{name} has no interface {iface!r} (has: {', '.join(ifaces)})")
            if cell is not None and cell not in cell_names:
                errors.add(f"{p}.start.cell", f"no cell named {cell!r}")
            if iface and cell:
                start = (iface, cell)
        if name and home and ifaces:
            mhs.append(MobileHostSpec(name, home, ifaces, start))
    bgs: list[BackgroundHostSpec] = []
    for k, item in enumerate(sections["background_hosts"]):
        p = item_path(f"{path}.background_hosts", k, item)
        b = Obj(item, p, errors, ("name", "address", "cell"))
        name, addr = b.get("name", name_of, required=True), b.get("address", address, required=True)
        cell = b.get("cell", name_of, required=True)
        claim_name(name, p)
        claim_addr(addr, f"{p}.address")
        if cell is not None and cell not in cell_names:
            errors.add(f"{p}.cell", f"no cell named {cell!r}")
        if name and addr and cell:
            bgs.append(BackgroundHostSpec(name, addr, cell))
    wired_nodes = declared("correspondents", "routers", "base_stations")
    links: list[LinkSpec] = []
    host_links: dict[str, int] = {}
    for k, item in enumerate(sections["links"]):
        p = f"{path}.links[{k}]"
        li = Obj(item, p, errors, ("between", "rate", "delay", "loss", "queue", "reverse_queue", "reverse_loss"))
        ends = li.get("between", lambda v: v if isinstance(v, list) and len(v) == 2 else (_ for _ in ()).throw(
            ValueError(f"must be a list of two node names, got {v!r}")), required=True)
        ok_ends = True
        if ends:
            for j, end in enumerate(ends):
                if end not in wired_nodes:
                    ok_ends = False
                    errors.add(f"{p}.between[{j}]", f"{end!r} is not a correspondent, router or base station"
                               + (" (mobile and background hosts reach the network through cells)"
                                  if end in {m.name for m in mhs} | {b.name for b in bgs} else ""))
            if ends[0] == ends[1]:
                ok_ends = False
                errors.add(f"{p}.between", "a link needs two different nodes")
            if ok_ends and ends[0] in {h.name for h in hosts} and ends[1] in {h.name for h in hosts}:
                ok_ends = False
                errors.add(f"{p}.between", "hosts do not forward: connect them through a router")
        if "rate" not in li.data and li.ok:
            errors.add(f"{p}.rate", "required (b/s, '10Mbps', or null for an ideal wire)")
        rate = li.get("rate", rate_or_none)
        delay = li.get("delay", time_value, required=True)
        loss = li.get("loss", probability, default=0.0)
        queue = rqueue = None
        for key in ("queue", "reverse_queue"):
            if li.has(key):
                if rate is None and "rate" in li.data:
                    errors.add(f"{p}.{key}", "an ideal wire (rate null) has no queue")
                else:
                    q = _queue(li.raw(key), f"{p}.{key}", errors, mean_pkt)
                    queue, rqueue = (q, rqueue) if key == "queue" else (queue, q)
        if rate is not None and not li.has("queue") and li.ok:
            errors.add(f"{p}.queue", "required for a link with a rate: its buffer (e.g. {limit: 50})")
        rloss = li.get("reverse_loss", probability, default=loss)
        if ends and ok_ends and delay is not None:
            for end in ends:
                if end in {h.name for h in hosts}:
                    host_links[end] = host_links.get(end, 0) + 1
                    if host_links[end] == 2:
                        errors.add(f"{p}.between", f"host {end} already has a link (hosts have exactly one)")
            links.append(LinkSpec(ends[0], ends[1], rate, delay, loss, queue, rqueue, rloss))
    for h in hosts:
        if h.name not in host_links:
            errors.add(f"{path}.correspondents[{h.name}]", "has no link (add one under topology.links)")
    topo = Topology(tuple(hosts), tuple(routers), tuple(bss), tuple(links), tuple(cells), tuple(mhs), tuple(bgs))
    if not errors:
        for h in hosts:
            for b in bss:
                if topo.wired_path(h.name, b.name) is None:
                    errors.add(f"{path}.links", f"no wired path from {h.name} to base station {b.name}")
    return topo


# -- flows, measurement, published ------------------------------------------------------------------------

def _flows(raw: Any, errors: Errors, declared: Declared, tcp: TcpSpec, scheme: str | None,
           duration: float) -> list[FlowSpec]:
    items = expand_counts(raw if isinstance(raw, list) else [], "flows", errors)
    declared.declare("flows", items)
    if not isinstance(raw, list) or not raw:
        errors.add("flows", "required: at least one flow")
        return []
    hosts = declared("correspondents", "mobile_hosts", "background_hosts")
    seen: set[str] = set()
    out: list[FlowSpec] = []
    for k, item in enumerate(items):
        p = item_path("flows", k, item)
        o = Obj(item, p, errors, ("name", "from", "to", "scheme", "start", "stop", *_TCP_KEYS))
        name = o.get("name", name_of, required=True)
        if name in seen:
            errors.add(f"{p}.name", f"{name!r} is already used by another flow")
        seen.add(name)
        src, dst = o.get("from", name_of, required=True), o.get("to", name_of, required=True)
        for key, host in (("from", src), ("to", dst)):
            if host is not None and host not in hosts:
                errors.add(f"{p}.{key}", f"no host named {host!r} (hosts: {', '.join(hosts)})")
        if src is not None and src == dst:
            errors.add(f"{p}.to", "a flow needs two different hosts")
        sch = o.get("scheme", text, required=True)
        if sch == COMPARED:
            if scheme is None:
                errors.add(f"{p}.scheme", "'compared' needs a schemes: list or variants with a scheme")
            sch = scheme
        elif sch is not None and sch not in SCHEMES:
            errors.add(f"{p}.scheme", f"unknown scheme {sch!r} (known: {', '.join(sorted(SCHEMES))}, or 'compared')")
            sch = None
        start = o.get("start", time_value, default=0.0)
        stop = o.get("stop", positive_time)
        if start is not None and start >= duration:
            errors.add(f"{p}.start", f"starts at {start:g} s, after the run ends ({duration:g} s)")
        if stop is not None and start is not None and stop <= start:
            errors.add(f"{p}.stop", f"must be after start ({start:g} s), got {stop:g}")
        overrides = {key: item[key] for key in _TCP_KEYS if isinstance(item, dict) and key in item}
        ftcp = _tcp(overrides, p, errors, tcp) if overrides else tcp
        if None not in (name, src, dst, sch, start, ftcp):
            out.append(FlowSpec(name, src, dst, sch, start, stop, ftcp))
    return out


def _window_time(v: Any, marks: dict[str, float]) -> float:
    if isinstance(v, str) and v in marks:
        return marks[v]
    try:
        return parse_time(v)
    except ValueError:
        raise ValueError(f"not a time or a timeline mark: {v!r} (marks: {', '.join(sorted(marks)) or 'none'})") from None


def _link_names(topo: Topology, declared: Declared | None = None) -> Collection[str]:
    """Cells and wired directions ('a->b') a quantity may name (with `declared`: every cell the file declares)."""
    names = {c.name for c in topo.cells}
    for link in topo.links:
        names |= {f"{link.a}->{link.b}", f"{link.b}->{link.a}"}
    return names if declared is None else declared("cells") | Known(names)


def _quantity(data: Any, path: str, errors: Errors, flows: Collection[str], links: Collection[str],
              windows: Collection[str], default_window: str | None) -> Quantity | None:
    o = Obj(data, path, errors, ("metric", "flow", "link", "window"))
    metric = o.get("metric", lambda v: v if v in METRICS else (_ for _ in ()).throw(
        ValueError(f"must be one of {', '.join(METRICS)}, got {v!r}")), required=True)
    flow, link = o.get("flow", name_of), o.get("link", text)
    window = o.get("window", text, default=default_window)
    if window is None and o.ok:
        if not (isinstance(windows, Known) and windows.open):   # else the unnamed window is the default
            errors.add(f"{path}.window", "required (no measurement window is defined)")
    elif window not in windows and window is not None:
        errors.add(f"{path}.window", f"no window named {window!r} (windows: {', '.join(sorted(windows))})")
    if metric in FLOW_METRICS and flow is None:
        errors.add(f"{path}.flow", f"required for the per-flow metric {metric}")
    if metric in LINK_METRICS and link is None:
        errors.add(f"{path}.link", f"required for the per-link metric {metric}")
    if flow is not None and flow not in flows:
        errors.add(f"{path}.flow", f"no flow named {flow!r}")
    if link is not None and link not in links:
        errors.add(f"{path}.link", f"no link or cell named {link!r} (cells, or 'a->b' for a wired direction)")
    if None in (metric, window):
        return None
    return Quantity(metric, window, flow if metric in FLOW_METRICS else None,
                    link if metric in LINK_METRICS else None)


def _measure(data: Any, errors: Errors, topo: Topology, declared: Declared, flows: list[FlowSpec],
             marks: dict[str, float], duration: float) -> Measure | None:
    path = "measure"
    o = Obj(data, path, errors, ("windows", "flows", "ideal", "table", "queues", "series_interval", "plot_range"))
    if not o.ok:
        return None
    windows: list[Window] = []
    declared.declare("windows", o.raw("windows"))
    for k, item in enumerate(o.get("windows", a_list, required=True) or []):
        p = item_path(f"{path}.windows", k, item)
        w = Obj(item, p, errors, ("name", "from", "to", "length"))
        name = w.get("name", name_of, required=True)
        t0 = w.get("from", lambda v: _window_time(v, marks), required=True)
        if w.has("to") == w.has("length"):
            errors.add(p, "give exactly one of to or length")
            continue
        t1 = w.get("to", lambda v: _window_time(v, marks)) if w.has("to") else (
            None if t0 is None else t0 + (w.get("length", positive_time) or 0.0))
        if None in (name, t0, t1):
            continue
        if t1 <= t0:
            errors.add(p, f"window ends ({t1:g} s) before it starts ({t0:g} s)")
        elif t1 > duration + 1e-9:
            errors.add(p, f"window ends at {t1:g} s, after the run ({duration:g} s)")
        else:
            windows.append(Window(name, t0, t1))
    wnames = declared("windows")
    flow_names = declared("flows")
    measured = o.get("flows", a_list, default=[f.name for f in flows]) or []
    for k, f in enumerate(measured):
        if f not in flow_names:
            errors.add(f"{path}.flows[{k}]", f"no flow named {f!r}")
    ideal = None
    if o.has("ideal"):
        i = Obj(o.raw("ideal"), f"{path}.ideal", errors, ("mh", "source", "outages"))
        mh = i.get("mh", name_of, required=True)
        if mh is not None and mh not in declared("mobile_hosts"):
            errors.add(f"{path}.ideal.mh", f"no mobile host named {mh!r}")
        source = i.get("source", name_of, default=next((f.src for f in flows if f.dst == mh), None))
        if source is not None and source not in declared("correspondents"):
            errors.add(f"{path}.ideal.source", f"no correspondent named {source!r}")
        elif source is None and i.ok:
            errors.add(f"{path}.ideal.source", "required (no flow goes to the mobile host)")
        outages = i.get("outages", lambda v: v if v in OUTAGE_RULES else (_ for _ in ()).throw(
            ValueError(f"must be one of {', '.join(OUTAGE_RULES)}, got {v!r}")), required=True)
        if None not in (mh, source, outages):
            ideal = IdealSpec(mh, source, outages)
    links = _link_names(topo, declared)
    first = (o.raw("windows") or [None])[0] if isinstance(o.raw("windows"), list) else None
    default_window = first.get("name") if isinstance(first, dict) else None   # even if that window has errors
    table = []
    for k, item in enumerate(o.get("table", a_list, required=True) or []):
        q = _quantity(item, f"{path}.table[{k}]", errors, flow_names, links, wnames, default_window)
        if q is not None:
            if q.metric in ("ideal", "percent_of_ideal") and ideal is None:
                errors.add(f"{path}.table[{k}].metric", f"{q.metric} needs measure.ideal")
            table.append(q)
    queue_links: list[str] = []
    interval = 0.01
    if o.has("queues"):
        qo = Obj(o.raw("queues"), f"{path}.queues", errors, ("links", "interval"))
        for k, name in enumerate(qo.get("links", a_list, required=True) or []):
            if name not in links:
                errors.add(f"{path}.queues.links[{k}]", f"no link or cell named {name!r}")
            else:
                queue_links.append(name)
        interval = qo.get("interval", positive_time, default=0.01)
    series = o.get("series_interval", positive_time, default=0.1)
    plot_range = (0.0, duration)
    if o.has("plot_range"):
        pr = o.get("plot_range", lambda v: [_window_time(t, marks) for t in v] if isinstance(v, list) and len(v) == 2
                   else (_ for _ in ()).throw(ValueError("must be [from, to]")))
        if pr and pr[0] < pr[1]:
            plot_range = (pr[0], min(pr[1], duration))
        elif pr:
            errors.add(f"{path}.plot_range", "must be [from, to] with from < to")
    return Measure(tuple(windows), tuple(measured), ideal, tuple(table), tuple(queue_links), interval,
                   series, plot_range)


def metric_value(metric: str) -> Callable[[Any], float]:
    """The parser of a published value or bound of `metric`, in the unit the metrics compute:
    b/s for rates ('2Mbps'), fractions for rates of loss and utilisation ('5%'), else numbers."""
    if metric in RATE_METRICS:
        return parse_rate
    if metric in FRACTION_METRICS:
        return parse_fraction
    return number()


def _metric_values(entry: Any, p: str, errors: Errors) -> dict[str, float]:
    v = Obj(entry, p, errors, METRICS)
    return {m: v.get(m, metric_value(m)) for m in METRICS if v.has(m)}


def _published(data: Any, errors: Errors, labels: list[str], windows: set[str], flows: set[str],
               links: Collection[str], sweep: tuple[SweepAxis, ...] = (),
               table: tuple[Quantity, ...] = ()) -> Published | None:
    path = "published"
    o = Obj(data, path, errors, ("source", "window", "ideal", "values", "points", "findings", "expect"))
    if not o.ok:
        return None
    source = o.get("source", text, required=True)
    window = o.get("window", text)
    if window is not None and window not in windows:
        errors.add(f"{path}.window", f"no window named {window!r}")
    ideal = o.get("ideal", parse_rate)
    values: dict[str, dict[str, float]] = {}
    for label, entry in (o.raw("values") or {}).items():
        p = f"{path}.values.{label}"
        if label not in labels:
            errors.add(p, f"no variant labelled {label!r} (variants: {', '.join(labels)})")
            continue
        values[label] = _metric_values(entry, p, errors)
    points = []
    axes = {a.label: a for a in sweep} | {a.path: a for a in sweep}
    for k, item in enumerate(o.get("points", a_list, default=[]) or []):
        p = f"{path}.points[{k}]"
        pt = Obj(item, p, errors, ("at", "values"))
        at = pt.get("at", lambda v: v if isinstance(v, dict) and v else (_ for _ in ()).throw(
            ValueError("must map sweep axes (label or path) to a swept value")), required=True) or {}
        key = []
        for name, value in at.items():
            axis = axes.get(name)
            if axis is None:
                names = ", ".join(a.label for a in sweep) or "none"
                errors.add(f"{p}.at.{name}", f"no sweep axis {name!r} (axes: {names})")
            elif value not in axis.values:
                errors.add(f"{p}.at.{name}", f"{value!r} is not one of the swept values {list(axis.values)}")
            else:
                key.append((axis.path, value))
        for label, entry in (pt.raw("values") or {}).items():
            if label not in labels:
                errors.add(f"{p}.values.{label}", f"no variant labelled {label!r}")
                continue
            for metric, value in _metric_values(entry, f"{p}.values.{label}", errors).items():
                if value is not None:
                    points.append((tuple(sorted(key)), label, metric, value))
    findings = tuple(str(f) for f in (o.get("findings", a_list, default=[]) or []))
    expect: list[Expectation] = []
    for k, item in enumerate(o.get("expect", a_list, default=[]) or []):
        p = f"{path}.expect[{k}]"
        e = Obj(item, p, errors, ("claim", "order", "ratio", "variant", "metric", "flow", "link", "window",
                                   "at_least", "at_most", "published"))
        kinds = [key for key in ("order", "ratio", "variant") if e.has(key)]
        if len(kinds) != 1:
            errors.add(p, "needs exactly one of order (list of variants), ratio ([a, b]) or variant (a bound)")
            continue
        kind = {"order": "order", "ratio": "ratio", "variant": "bound"}[kinds[0]]
        raw = e.raw(kinds[0])
        variants = tuple(raw if isinstance(raw, list) else [raw])
        for v in variants:
            if v not in labels:
                errors.add(f"{p}.{kinds[0]}", f"no variant labelled {v!r} (variants: {', '.join(labels)})")
        if kind == "ratio" and len(variants) != 2:
            errors.add(f"{p}.ratio", "must name two variants [numerator, denominator]")
        qdata = {key: item[key] for key in ("metric", "flow", "link", "window") if key in item}
        q = _quantity(qdata, p, errors, flows, links, windows, window or (sorted(windows)[0] if windows else None))
        claim = e.get("claim", text, required=True)
        parse = metric_value(q.metric) if q is not None else number()
        at_least, at_most = e.get("at_least", parse), e.get("at_most", parse)
        pub = e.get("published", number())
        if kind == "bound" and not e.has("at_least") and not e.has("at_most"):
            errors.add(p, "a bound needs at_least or at_most")
        if q is not None and q not in table:
            errors.add(p, f"{q.metric} of {q.flow or q.link or 'all flows'} in window {q.window} is not in "
                          "measure.table: a claim is checked on a quantity the report measures")
        elif q is not None and claim is not None:
            expect.append(Expectation(kind, q, variants, claim, at_least, at_most, pub))
    if source is None:
        return None
    return Published(source, window, ideal, values, findings, tuple(expect), tuple(points))


# -- the file ----------------------------------------------------------------------------------------------

_TOP_KEYS = ("scenario", "title", "paper", "description", "duration", "seed", "tcp", "topology", "flows",
             "schemes", "labels", "variants", "sweep", "measure", "published", "assumptions")


def _scheme_label(labels: dict[str, str], scheme: str) -> str:
    return labels.get(scheme, scheme)


@dataclass
class ScenarioFile:
    """A validated scenario file: the document, its variants and sweep axes."""

    source: str
    doc: dict
    name: str
    title: str
    paper: str
    variants: tuple[Variant, ...]
    sweep: tuple[SweepAxis, ...]
    published: Published | None
    description: str = ""
    overrides: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.variants]

    def points(self) -> list[tuple[tuple[str, Any], ...]]:
        """Every sweep point as ((path, value), ...); one empty point without a sweep."""
        if not self.sweep:
            return [()]
        return [tuple(zip((a.path for a in self.sweep), combo))
                for combo in itertools.product(*(a.values for a in self.sweep))]

    def resolve(self, variant: Variant, point: tuple[tuple[str, Any], ...] = ()) -> Scenario:
        """The concrete scenario of one variant at one sweep point (ScenarioError if it is invalid)."""
        doc = copy.deepcopy(self.doc)
        errors = Errors()
        where = f"variant {variant.label}" + (f" at {_point_text(point)}" if point else "")
        for paths, value in (*self.overrides, *variant.overrides, *point):
            for path in paths.split(","):
                try:
                    set_path(doc, path.strip(), value)
                except ValueError as exc:
                    errors.add(f"{where}: {path.strip()}", str(exc))
        errors.raise_if_any(self.source)
        scenario = _validate(doc, errors, variant, point)
        if errors or scenario is None:
            raise ScenarioError(self.source, [(f"{p} ({where})" if self.variants[1:] or point else p, m)
                                              for p, m in errors.items] or [("", "invalid")])
        return scenario

    def runs(self) -> Iterator[tuple[Variant, tuple[tuple[str, Any], ...], Scenario]]:
        for point in self.points():
            for variant in self.variants:
                yield variant, point, self.resolve(variant, point)

    def random_elements(self) -> list[str]:
        """What in any of its runs draws from the seed in the simulator; with nothing, repeats are identical."""
        found: set[str] = set()
        for _, _, scn in self.runs():
            found.update(random_elements(scn))
        return sorted(found)


def random_elements(scn: Scenario) -> list[str]:
    """The simulator's random draws in `scn`: random loss, RED/M-RED drops and randomised schemes.

    Nothing else depends on the seed (sequence numbers and timestamp offsets do, but never the outcome).
    """
    topo = scn.topology
    out = [f"random loss on {c.name}" for c in topo.cells if c.loss or c.up_loss]
    out += [f"random loss on {li.name}" for li in topo.links if li.loss or li.reverse_loss]
    queues = [(c.name, c.queue) for c in topo.cells] + [(li.name, q) for li in topo.links
                                                        for q in (li.queue, li.reverse_queue)]
    out += [f"{q.aqm.upper()} queue on {name}" for name, q in queues if q is not None and q.aqm != "droptail"]
    out += [f"scheme {f.scheme}" for f in scn.flows if SCHEMES[f.scheme].randomised]  # type: ignore[attr-defined]
    return out


def _point_text(point: tuple[tuple[str, Any], ...]) -> str:
    return ", ".join(f"{path}={value}" for path, value in point)


def _validate(doc: dict, errors: Errors, variant: Variant, point: tuple) -> Scenario | None:
    o = Obj(doc, "(top)", errors, _TOP_KEYS)
    if not o.ok:
        return None
    name = o.get("scenario", lambda v: v if isinstance(v, str) and SCENARIO_RE.match(v) else (_ for _ in ()).throw(
        ValueError(f"must be lower-case letters, digits, - and _ (a directory name), got {v!r}")), required=True)
    title = o.get("title", text, required=True)
    paper = o.get("paper", lambda v: v if v in PAPERS else (_ for _ in ()).throw(
        ValueError(f"must be one of {', '.join(PAPERS)}, got {v!r}")), required=True)
    duration = o.get("duration", positive_time, required=True)
    seed = o.get("seed", whole(0), default=0)
    tcp = _tcp(o.raw("tcp"), "tcp", errors, None) if o.has("tcp") else None
    if not o.has("tcp"):
        errors.add("tcp", "required: packet_size, window, iw, min_rto, delayed_ack (the papers leave them open)")
    assumptions = tuple(str(a) for a in (o.get("assumptions", a_list, default=[]) or []))
    mean_pkt = (tcp.packet_size if tcp else 1000) + HEADER_BYTES
    declared = Declared()
    topo = _topology(o.raw("topology"), errors, mean_pkt, declared) if o.has("topology") else None
    if not o.has("topology"):
        errors.add("topology", "required")
    if topo is None or duration is None or tcp is None:
        return None
    marks: dict[str, float] = {}
    raw_mhs = expand_counts((o.raw("topology") or {}).get("mobile_hosts") or [], "topology.mobile_hosts", Errors())
    ops: list[MobilityOp] = []
    cells = declared("cells")
    for m in topo.mobile_hosts:
        raw = next((r for r in raw_mhs if isinstance(r, dict) and r.get("name") == m.name), {})
        ops += moves(m, raw.get("moves"), f"topology.mobile_hosts[{m.name}].moves", errors, cells, marks)
    mobility = resolve_mobility(topo, ops, duration, errors)
    flows = _flows(o.raw("flows"), errors, declared, tcp, variant.scheme, duration)
    for f in flows:
        for host in (f.src, f.dst):
            m = next((m for m in topo.mobile_hosts if m.name == host), None)
            if m is not None and m.start is None and not any(op.mh == m.name and op.op == "handoff" for op in mobility):
                errors.add(f"topology.mobile_hosts[{m.name}]", f"flow {f.name} uses it but it never gets a cell "
                           "(give start: {iface, cell} or a move)")
    measure = _measure(o.raw("measure"), errors, topo, declared, flows, marks, duration) if o.has("measure") else None
    if not o.has("measure"):
        errors.add("measure", "required")
    if errors or None in (name, title, paper, measure):
        return None
    return Scenario(name, title, paper, duration, seed, tcp, topo, tuple(flows), tuple(mobility), marks,
                    measure, assumptions, variant.label, point)  # type: ignore[arg-type]


def _variants(o: Obj, errors: Errors) -> list[Variant]:
    labels_raw = o.get("labels", lambda v: v if isinstance(v, dict) else (_ for _ in ()).throw(
        ValueError("must map scheme names to the paper's names, e.g. {newreno: TCP/mm}")), default={}) or {}
    labels = {str(k): str(v) for k, v in labels_raw.items()}
    out: list[Variant] = []
    if o.has("schemes") and o.has("variants"):
        errors.add("schemes", "give schemes or variants, not both (a variant may set a scheme)")
        return out
    if o.has("schemes"):
        for k, s in enumerate(o.get("schemes", a_list) or []):
            if s not in SCHEMES:
                errors.add(f"schemes[{k}]", f"unknown scheme {s!r} (known: {', '.join(sorted(SCHEMES))})")
            else:
                out.append(Variant(_scheme_label(labels, s), s))
    for k, item in enumerate(o.get("variants", a_list, default=[]) or []):
        p = f"variants[{k}]"
        v = Obj(item, p, errors, ("label", "scheme", "set"))
        label = v.get("label", text, required=True)
        scheme = v.get("scheme", text)
        if scheme is not None and scheme not in SCHEMES:
            errors.add(f"{p}.scheme", f"unknown scheme {scheme!r}")
        sets = v.get("set", lambda x: x if isinstance(x, dict) else (_ for _ in ()).throw(
            ValueError("must map field paths to values")), default={}) or {}
        for path in sets:
            try:
                split_path(str(path))
            except ValueError as exc:
                errors.add(f"{p}.set", str(exc))
        if label is not None:
            out.append(Variant(label, scheme, tuple((str(k2), v2) for k2, v2 in sets.items())))
    seen = set()
    for v in out:
        if v.label in seen:
            errors.add("variants", f"label {v.label!r} is used twice")
        seen.add(v.label)
    return out or [Variant("default", None)]


def _sweep(o: Obj, errors: Errors, doc: dict) -> list[SweepAxis]:
    out: list[SweepAxis] = []
    for k, item in enumerate(o.get("sweep", a_list, default=[]) or []):
        p = f"sweep[{k}]"
        s = Obj(item, p, errors, ("path", "label", "values"))
        raw_path = s.get("path", lambda v: ",".join(v) if isinstance(v, list) and v and all(
            isinstance(x, str) for x in v) else text(v), required=True)
        values = s.get("values", a_list, required=True)
        if values is not None and not values:
            errors.add(f"{p}.values", "must list at least one value")
        path = raw_path
        for one in (raw_path or "").split(",") if raw_path else ():
            try:
                split_path(one.strip())
                get_path(doc, one.strip())
            except ValueError as exc:
                errors.add(f"{p}.path", str(exc))
                path = None
        if path and values:
            out.append(SweepAxis(path, s.get("label", text, default=path.split(".")[-1]), tuple(values)))
    return out


def _prune_published(pub: dict, labels: set[str]) -> None:
    """With --schemes the comparison has fewer columns: drop published numbers and claims about the others."""
    if isinstance(pub.get("values"), dict):
        pub["values"] = {k: v for k, v in pub["values"].items() if k in labels}
    if isinstance(pub.get("expect"), list):
        def named(item: Any) -> list:
            if not isinstance(item, dict):
                return []
            raw = item.get("order", item.get("ratio", item.get("variant", [])))
            return raw if isinstance(raw, list) else [raw]
        pub["expect"] = [e for e in pub["expect"] if all(v in labels for v in named(e))]


def parse(doc: Any, source: str = "<scenario>", overrides: tuple[tuple[str, Any], ...] = (),
          extra_sweep: tuple[SweepAxis, ...] = (), schemes: tuple[str, ...] = ()) -> ScenarioFile:
    """Validate a scenario document; every variant at every sweep point must resolve (ScenarioError lists all)."""
    errors = Errors()
    if not isinstance(doc, dict):
        raise ScenarioError(source, [("(top)", f"must be a mapping, got {type(doc).__name__}")])
    doc = copy.deepcopy(doc)
    if schemes:
        doc.pop("variants", None)
        doc["schemes"] = list(schemes)
    o = Obj(doc, "(top)", errors, _TOP_KEYS, check_unknown=False)  # _validate reports unknown keys
    variants = _variants(o, errors)
    sweep = _sweep(o, errors, doc)
    for axis in extra_sweep:
        for one in axis.paths:
            try:
                get_path(doc, one)
            except ValueError as exc:
                errors.add(f"--sweep {one}", str(exc))
        sweep = [a for a in sweep if a.path != axis.path] + [axis]
    errors.raise_if_any(source)
    if schemes and isinstance(doc.get("published"), dict):
        _prune_published(doc["published"], {v.label for v in variants})
    probe = Variant(variants[0].label, variants[0].scheme, variants[0].overrides)
    base_doc = copy.deepcopy(doc)
    for path, value in overrides:
        try:
            set_path(base_doc, path, value)
        except ValueError as exc:
            errors.add(f"--set {path}", str(exc))
    errors.raise_if_any(source)
    base = _validate(base_doc, errors, probe, ())
    errors.raise_if_any(source)
    assert base is not None
    wnames = {w.name for w in base.measure.windows}
    published = None
    if base_doc.get("published") is not None:   # as overridden (--set published.…)
        published = _published(base_doc["published"], errors, [v.label for v in variants], wnames,
                               {f.name for f in base.flows}, _link_names(base.topology), tuple(sweep),
                               base.measure.table)
    errors.raise_if_any(source)
    sf = ScenarioFile(source, doc, base.name, base.title, base.paper, tuple(variants), tuple(sweep), published,
                      str(doc.get("description", "")), tuple(overrides))
    problems: list[tuple[str, str]] = []
    for variant in sf.variants:
        for point in sf.points():
            try:
                sf.resolve(variant, point)
            except ScenarioError as exc:
                problems += [e for e in exc.errors if e not in problems]
    if problems:
        raise ScenarioError(source, problems)
    return sf


def read_document(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """The YAML document of a scenario file, with `extends: other.yaml` resolved.

    A file that extends another takes the other's top-level fields and
    replaces those it states itself (a sweep file is its case plus a sweep).
    """
    path = Path(path)
    if path.resolve() in _seen:
        raise ScenarioError(str(path), [("extends", "files extend each other in a cycle")])
    doc = read_yaml(path, ScenarioError)
    if not isinstance(doc, dict) or "extends" not in doc:
        return doc
    base_name = doc.pop("extends")
    if not isinstance(base_name, str):
        raise ScenarioError(str(path), [("extends", f"must be a file name, got {base_name!r}")])
    base_path = path.parent / base_name
    if not base_path.is_file():
        raise ScenarioError(str(path), [("extends", f"no file {base_path}")])
    base = read_document(base_path, (*_seen, path.resolve()))
    if not isinstance(base, dict):
        raise ScenarioError(str(base_path), [("(top)", "must be a mapping")])
    base.update(doc)
    return base


def load(path: str | Path, overrides: tuple[tuple[str, Any], ...] = (), extra_sweep: tuple[SweepAxis, ...] = (),
         schemes: tuple[str, ...] = ()) -> ScenarioFile:
    """Read and validate a scenario file (ScenarioError with every problem, or the one with the file)."""
    return parse(read_document(path), str(path), overrides, extra_sweep, schemes)
