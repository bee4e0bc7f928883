"""One step's route changes as P4Runtime Writes: one per switch, all sent before any is waited for.

CONTINUE_ON_ERROR: an update a switch refuses is logged (`route_write_failed`) and left out of the
controller's view of that switch (the next change of that route is computed against what the switch
really holds); the others stand. A Write that fails as a whole (no per-update answer) marks the switch
unknown until it is reconciled. Moved out of daemon.py, which calls it once per step (effect_batch.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable

from p4handoff.controller.intents import SetRoute
from p4handoff.controller.p4runtime import P4RuntimeError
from p4handoff.controller.p4runtime.client import CompletedWrite
from p4handoff.controller.programmer import Programmer
from p4handoff.controller.session import SwitchSession
from p4handoff.controller.switch_state import SwitchState

LogFn = Callable[[str, dict[str, Any]], None]


def write_step(writes: Mapping[str, list[SetRoute]], states: dict[str, SwitchState | None],
               sessions: Mapping[str, SwitchSession], programmer: Programmer, counters: dict[str, int],
               log: LogFn) -> None:
    pending = []
    for name, routes in writes.items():
        state, client = states[name], sessions[name].client
        if state is None or client is None:
            counters["dropped_effects"] += len(routes)      # the switch gets the model when it is back
            continue
        updates, addrs = [], []
        for e in routes:
            probe = programmer.route_key(e.addr)
            entry = None if e.action is None else programmer.route_entry(name, e.addr, e.action)
            update = state.update_for(entry, probe)
            if update is not None:
                updates.append(update)
                addrs.append(e.addr)
        if updates:
            pending.append((name, state, updates, addrs, client))
    started = []
    for name, state, updates, addrs, client in pending:
        try:
            # one switch: the blocking call (a future's answer waits for its waiter to be scheduled)
            started.append((name, state, updates, addrs, client.write_begin(updates) if len(pending) > 1
                            else CompletedWrite(client, updates)))
        except P4RuntimeError as exc:
            _failed(name, exc, states, counters, log)
    for name, state, updates, addrs, write in started:
        try:
            write.result()
        except P4RuntimeError as exc:
            if not exc.updates:
                _failed(name, exc, states, counters, log)
                continue
            failed = {u.index for u in exc.updates}
            state.applied(u for i, u in enumerate(updates) if i not in failed)
            counters["writes"] += len(updates) - len(failed)
            counters["write_errors"] += len(failed)
            for u in exc.updates:
                log("route_write_failed", {"switch": name, "addr": addrs[u.index] if u.index < len(addrs)
                                           else None, "code": u.code, "error": u.message})
            continue
        state.applied(updates)
        counters["writes"] += len(updates)


def _failed(name: str, exc: P4RuntimeError, states: dict[str, SwitchState | None], counters: dict[str, int],
            log: LogFn) -> None:
    """The whole Write failed (no per-update answer): what the switch holds is unknown now."""
    counters["write_errors"] += 1
    log("switch_error", {"switch": name, "during": "route write", "error": str(exc).splitlines()[0]})
    states[name] = None        # reconciled in full when it comes back
