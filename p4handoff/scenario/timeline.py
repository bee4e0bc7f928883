"""The mobility timeline of a scenario: the moves' primitives in order, checked as they would happen.

A move (p4handoff.scenario.doc.moves) becomes attach/detach/handoff
primitives; some leave an interface or a cell to be worked out here, from
where the mobile host is at that instant (the active interface, the place
it came from). Attached before a handoff, not attached twice, within the run.
"""
from __future__ import annotations

from p4handoff.scenario.model import MobilityOp, Topology
from p4handoff.scenario.units import Errors

PREVIOUS = "<previous>"   # the interface that was active before the last handoff (an overlap's old one)
#: What an overlap handoff does to the old cell: `kept` (simultaneous bindings,
#: DSBP's model: it delivers what it holds until the MH leaves the overlap) or
#: `dropped` (a single binding: the MH's radio leaves it at the handoff and
#: what was queued there for the MH is lost).
OLD_PATHS = ("kept", "dropped")
BACK = "<back>"           # the cell a visit comes back to: where the MH was before it


def switch_ops(mh: str, t: float, to: str, cell: str, outage: float, warn: float) -> list[MobilityOp]:
    """Leave the active interface at t, be on `to` in `cell` at t + outage ("" / BACK: resolved later)."""
    return [MobilityOp(t, mh, "detach", "", warn=warn),
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
            if cell == BACK:
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
