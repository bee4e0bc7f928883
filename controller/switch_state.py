"""Desired table state per switch, and the diff that brings a switch to it.

A switch's state is a set of table entries keyed by (table, match, priority);
the value is (action, params). `diff(desired, actual)` gives the minimal
writes — inserts, modifies, deletes — so a reconciliation after a switch or
controller restart leaves no duplicate and no stale entry and rewrites
nothing that is already right (the traffic of MHs that did not move is not
disturbed). `SwitchState` keeps the controller's view of one switch between
reconciliations and turns single route changes into single updates.

Entries must be in read-back form (`p4handoff.controller.p4runtime.entities.normalize`
or the programmer's own, already normalised output).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from p4handoff.controller.p4runtime import TableEntry, UpdateType

Key = tuple[str, tuple[tuple[str, Any], ...], int]
Value = tuple[str | None, tuple[tuple[str, Any], ...]]


def key_of(entry: TableEntry) -> Key:
    return entry.table, tuple(sorted(entry.match.items())), entry.priority


def value_of(entry: TableEntry) -> Value:
    return entry.action, tuple(sorted(entry.params.items()))


@dataclass
class Plan:
    """Writes that turn `actual` into `desired`; deletes first so a re-keyed entry never collides."""

    deletes: list[TableEntry] = field(default_factory=list)
    modifies: list[TableEntry] = field(default_factory=list)
    inserts: list[TableEntry] = field(default_factory=list)

    def updates(self) -> list[tuple[UpdateType, TableEntry]]:
        return ([(UpdateType.DELETE, e) for e in self.deletes] + [(UpdateType.MODIFY, e) for e in self.modifies]
                + [(UpdateType.INSERT, e) for e in self.inserts])

    def __len__(self) -> int:
        return len(self.deletes) + len(self.modifies) + len(self.inserts)


def index(entries: Iterable[TableEntry], what: str) -> dict[Key, TableEntry]:
    """Entries by key; a repeated key is an error (a switch cannot hold it, a model must not ask for it)."""
    out: dict[Key, TableEntry] = {}
    for e in entries:
        k = key_of(e)
        if k in out:
            raise ValueError(f"{what}: two entries for {e.table} {dict(e.match)} priority {e.priority}")
        out[k] = e
    return out


def diff(desired: Iterable[TableEntry], actual: Iterable[TableEntry]) -> Plan:
    want = index(desired, "desired state")
    have = index(actual, "switch state")
    plan = Plan()
    for k, e in have.items():
        if k not in want:
            plan.deletes.append(e)
    for k, e in want.items():
        if k not in have:
            plan.inserts.append(e)
        elif value_of(have[k]) != value_of(e):
            plan.modifies.append(e)
    return plan


class SwitchState:
    """The controller's view of what one switch holds (after the last successful write or read)."""

    def __init__(self, entries: Iterable[TableEntry] = ()) -> None:
        self._entries = index(entries, "switch state")

    def entries(self) -> list[TableEntry]:
        return list(self._entries.values())

    def get(self, probe: TableEntry) -> TableEntry | None:
        return self._entries.get(key_of(probe))

    def update_for(self, entry: TableEntry | None, probe: TableEntry) -> tuple[UpdateType, TableEntry] | None:
        """The one write that makes the switch hold `entry` at `probe`'s key (None: hold nothing there)."""
        have = self._entries.get(key_of(probe))
        if entry is None:
            return None if have is None else (UpdateType.DELETE, have)
        if have is None:
            return UpdateType.INSERT, entry
        return None if value_of(have) == value_of(entry) else (UpdateType.MODIFY, entry)

    def applied(self, updates: Iterable[tuple[UpdateType, TableEntry]]) -> None:
        """Record writes the switch accepted."""
        for kind, e in updates:
            if kind == UpdateType.DELETE:
                self._entries.pop(key_of(e), None)
            else:
                self._entries[key_of(e)] = e
