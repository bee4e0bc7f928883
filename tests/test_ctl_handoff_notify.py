"""The notifications on their own (`Notifier`): one sequence across MHs, to each correspondent and the MH."""
from __future__ import annotations

from p4handoff.controller.handoff_notify import Notifier
from p4handoff.controller.intents import Notify
from p4handoff.controller.mh_state import MhState
from p4handoff.notify import Event
from tests.ctl_parts import example_net


def test_each_correspondent_and_the_reachable_mh_get_the_same_numbered_notification():
    net = example_net()
    logs: list = []
    notifier = Notifier(net, lambda e, f: logs.append((e, f)))
    mh1 = MhState(net.mobile_hosts[0], mac="02:00:00:00:20:01")
    mh2 = MhState(net.mobile_hosts[1])                              # MAC unknown: only its correspondents
    fx = notifier.notify(mh1, Event.HANDOFF, "10.0.1.1", 1, 2, mh_at=("bs2", 1))
    ch = net.fixed("ch")
    assert fx == [Notify(fx[0].note, "ch", ch.address, "gw", 1, ch.mac),
                  Notify(fx[0].note, "mh1", "10.0.1.1", "bs2", 1, "02:00:00:00:20:01")]
    note = fx[0].note
    assert (note.event, note.seq, note.mh_addr, note.path_addr, note.old_cell, note.new_cell) == (
        Event.HANDOFF, 1, "10.0.1.1", "10.0.1.1", 1, 2)
    later = notifier.notify(mh2, Event.DETACH, "10.0.1.2", 2, 0, mh_at=None)
    assert [n.host for n in later] == list(mh2.host.correspondents) == ["ch"] and later[0].note.seq == 2
    assert logs[-1] == ("notified", {"mh": "mh2", "notification": "DETACH", "seq": 2,
                                     "to": list(mh2.host.correspondents)})
