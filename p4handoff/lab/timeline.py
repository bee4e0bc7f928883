"""The mobility timeline of a scenario: moves (switch, alternate, visits, overlap, primitives) → ordered, checked ops."""
from __future__ import annotations

from typing import Any, Collection

from p4handoff.lab.fields import Obj, a_list, boolean, name_of, number, positive_time, time_value, whole
from p4handoff.lab.scenario_model import MobileHostSpec, MobilityOp, Topology
from p4handoff.lab.units import Errors, parse_time

PREVIOUS = "<previous>"   # the interface that was active before the last handoff (an overlap's old one)
#: What an overlap handoff does to the old cell: `kept` (simultaneous bindings,
#: DSBP's model: it delivers what it holds until the MH leaves the overlap) or
#: `dropped` (a single binding: the MH's radio leaves it at the handoff and
#: what was queued there for the MH is lost).
OLD_PATHS = ("kept", "dropped")
_MOVE_KINDS = ("switch", "alternate", "visits", "overlap", "attach", "detach", "handoff")


def _old_path(v: Any) -> str:
    if v not in OLD_PATHS:
        raise ValueError(f"must be one of {', '.join(OLD_PATHS)}, got {v!r}")
    return v


def _times(v: Any) -> list[float]:
    """A time, a list of times, {from, every, count}, or {from, to, count} (count times evenly in [from, to))."""
    if isinstance(v, dict):
        if set(v) == {"from", "every", "count"}:
            t0, step = parse_time(v["from"]), parse_time(v["every"], allow_zero=False)
        elif set(v) == {"from", "to", "count"}:
            t0, t1 = parse_time(v["from"]), parse_time(v["to"])
            if t1 <= t0:
                raise ValueError(f"to ({t1:g} s) must be after from ({t0:g} s)")
            step = (t1 - t0) / whole(1, 100000)(v["count"])
        else:
            raise ValueError(f"a time series is {{from, every, count}} or {{from, to, count}}, got keys {sorted(v)}")
        count = whole(1, 100000)(v["count"])
        return [t0 + k * step for k in range(count)]
    if isinstance(v, list):
        if not v:
            raise ValueError("must list at least one time")
        return [parse_time(t) for t in v]
    return [parse_time(v)]


def moves(mh: MobileHostSpec, raw: Any, path: str, errors: Errors, cells: Collection[str],
           marks: dict[str, float]) -> list[MobilityOp]:
    ops: list[MobilityOp] = []
    if raw is None:
        return ops
    if not isinstance(raw, list):
        errors.add(path, "must be a list of moves")
        return ops
    for k, item in enumerate(raw):
        p = f"{path}[{k}]"
        if not isinstance(item, dict):
            errors.add(p, "must be a mapping with one of: " + ", ".join(_MOVE_KINDS))
            continue
        kinds = [key for key in _MOVE_KINDS if key in item]
        if len(kinds) != 1:
            errors.add(p, f"needs exactly one of {', '.join(_MOVE_KINDS)}, got {kinds or 'none'}")
            continue
        kind = kinds[0]
        extra = {"switch": ("at", "outage", "warn"), "alternate": ("at", "outage", "warn"),
                 "visits": ("at", "stay", "outage", "warn"),
                 "overlap": ("enter", "dwell", "geometry", "handoff_fraction", "old_path"),
                 "attach": ("at",), "detach": ("at",), "handoff": ("at",)}[kind]
        o = Obj(item, p, errors, (kind, "label", *extra))
        label = o.get("label", name_of)
        body = Obj(item[kind], f"{p}.{kind}", errors,
                    {"switch": ("to", "cell"), "alternate": ("between",), "visits": ("cell", "iface"),
                     "overlap": ("iface", "cell"), "attach": ("iface", "cell", "probe"),
                     "detach": ("iface", "notify", "warn"), "handoff": ("iface", "notify")}[kind])

        def iface_of(key: str, required: bool = True, body: Obj = body) -> str | None:
            name = body.get(key, name_of, required=required)
            if name is not None and name not in mh.interfaces:
                errors.add(f"{body.path}.{key}", f"{mh.name} has no interface {name!r} (has: {', '.join(mh.interfaces)})")
                return None
            return name

        def cell_of(obj: Obj, key: str = "cell") -> str | None:
            name = obj.get(key, name_of, required=True)
            if name is not None and name not in cells:
                errors.add(f"{obj.path}.{key}", f"no cell named {name!r}")
                return None
            return name

        if kind == "overlap":
            iface, cell = iface_of("iface"), cell_of(body)
            enter = o.get("enter", time_value, required=True)
            frac = o.get("handoff_fraction", number(0.0, 1.0), default=0.5)
            old_path = o.get("old_path", _old_path, default="kept")
            dwell = None
            if o.has("dwell") == o.has("geometry"):
                errors.add(p, "give exactly one of dwell (seconds in the overlap) or geometry")
            elif o.has("dwell"):
                dwell = o.get("dwell", positive_time)
            else:
                g = Obj(o.raw("geometry"), f"{p}.geometry", errors, ("radius_m", "distance_m", "speed_kmh"))
                radius = g.get("radius_m", number(0.0, open_lo=True), required=True)
                distance = g.get("distance_m", number(0.0, open_lo=True), required=True)
                speed = g.get("speed_kmh", number(0.0, open_lo=True), required=True)
                if None not in (radius, distance, speed):
                    overlap_m = 2 * radius - distance
                    if overlap_m <= 0:
                        errors.add(f"{p}.geometry", f"cells of radius {radius} m {distance} m apart do not overlap")
                    else:
                        dwell = overlap_m / (speed / 3.6)
            if iface is None or cell is None or enter is None or dwell is None or frac is None or old_path is None:
                continue
            handoff = enter + dwell * frac
            release = handoff if old_path == "dropped" else enter + dwell
            ops += [MobilityOp(enter, mh.name, "attach", iface, cell, probe=True),
                    MobilityOp(handoff, mh.name, "handoff", iface),
                    MobilityOp(release, mh.name, "detach", PREVIOUS, notify=False)]
            if label:
                marks.update({f"{label}.enter": enter, f"{label}.handoff": handoff, f"{label}.leave": enter + dwell})
            continue
        times = o.get("at", _times, required=True)
        if times is None:
            continue
        if kind in ("switch", "alternate", "visits"):
            outage = o.get("outage", time_value, required=True)
            warn = o.get("warn", time_value, default=0.0)
            if outage is None or warn is None:
                continue
            if kind == "switch":
                to, cell = iface_of("to"), cell_of(body)
                if to is None or cell is None:
                    continue
                for t in times:
                    ops += _switch(mh.name, t, "", to, cell, outage, warn)
            elif kind == "alternate":
                between = body.get("between", a_list, required=True) or []
                places: list[tuple[str, str]] = []
                for j, place in enumerate(between):
                    pl = Obj(place, f"{body.path}.between[{j}]", errors, ("iface", "cell"))
                    pi, pc = pl.get("iface", name_of, required=True), cell_of(pl)
                    if pi is not None and pi not in mh.interfaces:
                        errors.add(f"{pl.path}.iface", f"{mh.name} has no interface {pi!r}")
                    elif pi and pc:
                        places.append((pi, pc))
                if len(between) != 2:
                    errors.add(f"{body.path}.between", "must list exactly two places {iface, cell}")
                if len(places) != 2:
                    continue
                for j, t in enumerate(times):
                    to, cell = places[(j + 1) % 2]
                    ops += _switch(mh.name, t, "", to, cell, outage, warn, alternate=places)
            else:
                stay = o.get("stay", positive_time, required=True)
                cell = cell_of(body)
                iface = iface_of("iface", required=False)
                if stay is None or cell is None:
                    continue
                for t in times:
                    ops += _switch(mh.name, t, "", iface or "", cell, outage, warn)
                    ops += _switch(mh.name, t + outage + stay, "", iface or "", "<back>", outage, warn)
            if label:
                marks[label] = times[0]
                marks[f"{label}.end"] = times[0] + outage
            continue
        for t in times:
            if kind == "attach":
                iface, cell = iface_of("iface"), cell_of(body)
                probe = body.get("probe", boolean, default=False)
                if iface and cell:
                    ops.append(MobilityOp(t, mh.name, "attach", iface, cell, probe=probe))
            elif kind == "detach":
                iface = iface_of("iface")
                warn = body.get("warn", time_value, default=0.0)
                if iface:
                    ops.append(MobilityOp(t, mh.name, "detach", iface, notify=body.get("notify", boolean, default=True),
                                          warn=warn or 0.0))
            else:
                iface = iface_of("iface")
                if iface:
                    ops.append(MobilityOp(t, mh.name, "handoff", iface, notify=body.get("notify", boolean, default=True)))
        if label:
            marks[label] = times[0]
    return ops


def _switch(mh: str, t: float, frm: str, to: str, cell: str, outage: float, warn: float,
            alternate: list[tuple[str, str]] | None = None) -> list[MobilityOp]:
    """Leave the active interface at t, be on `to` in `cell` at t + outage ("" / "<back>": resolved later)."""
    return [MobilityOp(t, mh, "detach", frm, warn=warn),
            MobilityOp(t + outage, mh, "attach", to, cell),
            MobilityOp(t + outage, mh, "handoff", to)]


def resolve_mobility(topo: Topology, ops: list[MobilityOp], duration: float, errors: Errors) -> list[MobilityOp]:
    """Order the timeline, fill in implicit interfaces and check it can happen (attached before handoff, ...)."""
    ops = sorted(ops, key=lambda op: op.at)  # stable: same-instant ops keep their written order
    state: dict[str, dict[str, str]] = {}     # mh -> {iface: cell}
    active: dict[str, str | None] = {}
    came_from: dict[str, tuple[str, str]] = {}
    history: dict[str, list[tuple[str, str]]] = {}   # places the MH was active in, in order
    out: list[MobilityOp] = []
    for m in topo.mobile_hosts:
        state[m.name] = {}
        active[m.name] = None
        history[m.name] = []
        if m.start:
            state[m.name][m.start[0]] = m.start[1]
            active[m.name] = m.start[0]
            history[m.name].append(m.start)
    for op in ops:
        where = f"topology.mobile_hosts[{op.mh}].moves (t={op.at:g} s)"
        if op.at > duration:
            errors.add(where, f"{op.op} at {op.at:g} s is after the end of the run ({duration:g} s)")
            continue
        here = state[op.mh]
        iface = op.iface
        if op.op == "detach":
            if iface == PREVIOUS:
                if len(history[op.mh]) < 2:
                    errors.add(where, f"{op.mh} has no previous interface to leave")
                    continue
                iface = history[op.mh][-2][0]
            if not iface:
                iface = active[op.mh] or ""
                if not iface:
                    errors.add(where, f"{op.mh} has no active interface to leave")
                    continue
                came_from[op.mh] = (iface, here.get(iface, ""))
            if iface not in here:
                errors.add(where, f"detach of {op.mh}.{iface}, which is not attached")
                continue
            if op.warn and op.at - op.warn < 0:
                errors.add(where, f"warning {op.warn:g} s before t={op.at:g} lies before the start")
            del here[iface]
            if active[op.mh] == iface:
                active[op.mh] = None
        elif op.op == "attach":
            cell = op.attach_cell
            if cell == "<back>":
                if len(history[op.mh]) < 2:
                    errors.add(where, f"{op.mh} has nowhere to come back to")
                    continue
                iface = iface or history[op.mh][-2][0]
                cell = history[op.mh][-2][1]
            if not iface:
                iface = came_from.get(op.mh, ("", ""))[0]
            if iface in here:
                errors.add(where, f"attach of {op.mh}.{iface} to {cell}, but it is still in {here[iface]}")
                continue
            here[iface] = cell
            op = MobilityOp(op.at, op.mh, "attach", iface, cell, op.probe, op.notify, op.warn)
        else:
            if not iface:
                iface = next((o.iface for o in reversed(out) if o.mh == op.mh and o.op == "attach"), "")
            if iface not in here:
                errors.add(where, f"handoff of {op.mh} to {iface or '?'}, which is not attached")
                continue
            active[op.mh] = iface
            history[op.mh].append((iface, here[iface]))
        if op.op == "detach" and op.iface in ("", PREVIOUS):
            op = MobilityOp(op.at, op.mh, "detach", iface, None, op.probe, op.notify, op.warn)
        elif op.op == "handoff" and not op.iface:
            op = MobilityOp(op.at, op.mh, "handoff", iface, None, op.probe, op.notify, op.warn)
        out.append(op)
    return out
