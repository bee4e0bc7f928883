"""The handoff state machine against the in-memory network (tests/ctl_fakenet.py).

A fake in addition to the BMv2 integration tests, never instead: it checks
the logic (ordering, buffering, ping-pong, notifications, recovery) with the
latency ratios of a real switch, quickly and deterministically.
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from p4handoff.controller.intents import Deliver, Forward, Punt, Release, SendToward, SetRoute, Tunnel
from p4handoff.controller.mh_state import MobilityError, Phase
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import NetworkError, parse_network
from p4handoff.controller.packets import parse_ipv4
from p4handoff.controller.registration import RegistrationRequest, ReplyCode
from p4handoff.notify import Event
from tests.ctl_fakenet import FakeNet
from tests.seq_support import overtaken

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def raw_example() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


def with_bs3(raw: dict) -> dict:
    """Four switches: bs3 peered with the gateway and bs2 only (not with bs1)."""
    raw = copy.deepcopy(raw)
    raw["switches"][0]["ports"].append({"number": 4, "role": "peer", "peer": "bs3"})
    raw["switches"][2]["ports"].append({"number": 4, "role": "peer", "peer": "bs3"})
    raw["switches"].append({
        "name": "bs3", "role": "bs", "cell_id": 3, "grpc": "127.0.0.1:50054", "device_id": 0,
        "address": "192.168.100.4", "mac": "02:00:00:00:00:04",
        "ports": [{"number": 1, "role": "access"}, {"number": 2, "role": "peer", "peer": "gw"},
                  {"number": 4, "role": "peer", "peer": "bs2"}]})
    return raw


def make(raw: dict | None = None, buffer: dict | None = None, latency: dict | None = None,
         **controller) -> tuple[FakeNet, Mobility, list]:
    raw = copy.deepcopy(raw or raw_example())
    raw.setdefault("controller", {}).update(controller)
    if buffer is not None:
        raw["buffer"] = buffer
    net = parse_network(raw)
    logs: list = []
    mob = Mobility(net, log=lambda e, f: logs.append((e, f)), seed=7)
    return FakeNet(net, mob, **(latency or {})), mob, logs


def stream(f: FakeNet, mh: str, start: float, count: int, gap: float, first: int = 0) -> None:
    for i in range(count):
        f.send(mh, first + i, when=start + i * gap)


def run_until(f: FakeNet, cond, limit: float, step: float = 0.0001) -> None:
    """Advance the fake until `cond()` holds (the test acts at that moment)."""
    while not cond():
        assert f.now < limit, "condition never reached"
        f.run(f.now + step)


def signalled_handoff(f: FakeNet, mob: Mobility, mh: str, to: str, warn: float = 0.01) -> None:
    """Detach signalled `warn` s before the link goes (an L2 trigger), then register at `to`."""
    f.apply(mob.detach(mh, f.now))
    f.run(f.now + warn)
    f.location[mh] = None
    f.register(mh, to)




def events(logs: list, mh: str = "mh1") -> list[str]:
    return [e for e, fields in logs if fields.get("mh") == mh]


def test_first_registration_installs_delivery_and_gateway_route():
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.05)
    assert f.tables["bs1"]["10.0.1.1"] == Deliver(1, f.mobility.mhs["mh1"].mac)
    assert f.tables["gw"]["10.0.1.1"] == Forward("bs1")
    assert [r.code for r in f.replies] == [ReplyCode.ACCEPTED]
    assert mob.mhs["mh1"].phase is Phase.ATTACHED and f.notes == []
    stream(f, "mh1", 0.05, 10, 0.001)
    f.run(0.2)
    assert f.seqs("mh1") == list(range(10))


def test_handoff_delivers_every_buffered_packet_in_order_priority_marked_over_the_tunnel():
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 40, 0.001)          # 0..39 before and during the detach
    f.run(0.02)
    f.leave("mh1")                              # controller told at once; link gone at once
    f.run(0.06)
    assert mob.mhs["mh1"].phase is Phase.DETACHED
    buffered = len(mob.pool["mh1"])
    assert buffered > 0
    f.register("mh1", "bs2")
    f.run(1.0)
    got = f.seqs("mh1")
    lost = {s for _, s, _ in f.lost}
    assert got == sorted(got), "reordered"
    assert sorted(set(got) | lost) == list(range(40))      # nothing vanished
    # the lost ones are only those already delivered into the old cell after the MH left
    assert all(reason == "not at bs1:1" for _, _, reason in f.lost)
    tunnelled = [r for r in f.received["mh1"] if r.via == "tunnel"]
    assert len(tunnelled) == buffered and all(r.priority for r in tunnelled)
    st = mob.mhs["mh1"]
    assert st.phase is Phase.ATTACHED and st.bs == "bs2" and st.handoffs == 1
    assert f.tables["gw"]["10.0.1.1"] == Forward("bs2")
    assert "10.0.1.1" not in f.tables["bs1"]               # hold time (500 ms) over
    [(mh, duration)] = f.completed            # registration processed → final routes applied
    assert mh == "mh1" and f.write * 3 <= duration < 0.1
    assert events(logs) == ["attached", "detached", "notified", "handoff_start", "gateway_diverted",
                            "delivery_installed", "marker_sent", "flush", "marker_sent", "marker_returned", "marker_returned",
                            "notified", "rerouted", "handoff_complete", "hold_expired"]
    kinds = [(e, fl.get("kind")) for e, fl in logs if e.startswith("marker")]
    # the drain marker follows the flush at once, overlapping the gateway marker's round trip
    assert kinds[:2] == [("marker_sent", "gateway"), ("marker_sent", "drain")]
    assert sorted(kinds[2:]) == [("marker_returned", "drain"), ("marker_returned", "gateway")]


def test_early_detach_warning_loses_nothing_and_stream_stays_in_order():
    """Detach told to the controller before the radio link goes (an L2 trigger): zero loss."""
    f, mob, _ = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 100, 0.005)          # 200 pkt/s: slower than one packet per route write
    f.run(0.2)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.21)                                  # the divert write has landed
    f.location["mh1"] = None
    f.run(0.3)
    f.register("mh1", "bs2")
    f.run(1.5)
    got = f.seqs("mh1")
    assert f.lost == [] and sorted(got) == list(range(100))
    # only packets punted while the final gateway write was in flight may be overtaken
    assert overtaken(got) <= mob.mhs["mh1"].late <= 2


def test_fast_stream_stragglers_are_counted_and_never_lost():
    """At 2000 pkt/s packets punted while the final gateway write is in flight arrive late."""
    f, mob, _ = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 300, 0.0005)
    f.run(0.05)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.06)
    f.location["mh1"] = None
    f.run(0.08)
    f.register("mh1", "bs2")
    f.run(1.0)
    got = f.seqs("mh1")
    assert f.lost == [] and sorted(got) == list(range(300))
    late = mob.mhs["mh1"].late
    assert 0 < overtaken(got) <= late


def test_buffer_overflow_drops_oldest_and_counts():
    f, mob, _ = make(buffer={"per_mh_packets": 10, "total_packets": 100})
    f.register("mh1", "bs1")
    f.run(0.01)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.02)
    f.location["mh1"] = None
    stream(f, "mh1", 0.02, 25, 0.001)
    f.run(0.1)
    assert len(mob.pool["mh1"]) == 10 and mob.pool["mh1"].stats.dropped_overflow == 15
    f.register("mh1", "bs2")
    f.run(1.0)
    assert f.seqs("mh1") == list(range(15, 25))     # the newest window, in order
    assert mob.status()[0]["dropped_overflow"] == 15


def test_ping_pong_before_completion_returns_to_old_bs_without_loss():
    """MH goes bs1 → bs2 and back to bs1 while the gateway's drain marker is still out.

    The detach from bs2 is signalled before the radio link goes (as for bs1), so
    nothing is delivered into an empty cell; the packets already released to bs2
    that arrive after it diverts are punted back and released at bs1 first."""
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 120, 0.001)
    f.run(0.03)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.04)
    f.location["mh1"] = None
    f.run(0.05)
    f.register("mh1", "bs2")
    st = mob.mhs["mh1"]
    run_until(f, lambda: st.phase is Phase.HANDING_OFF, 0.1)   # registration processed
    assert st.phase is Phase.HANDING_OFF and st.gw_marker is not None
    f.apply(mob.detach("mh1", f.now))               # leaving bs2 again
    assert st.path_markers
    f.run(0.065)
    f.register("mh1", "bs1")                       # back before the handoff completed
    f.run(1.0)
    got = f.seqs("mh1")
    assert f.lost == []
    assert sorted(got) == list(range(120)) and overtaken(got) <= st.late
    assert st.phase is Phase.ATTACHED and st.bs == "bs1"
    assert f.tables["gw"]["10.0.1.1"] == Forward("bs1")
    assert f.tables["bs1"]["10.0.1.1"] == Deliver(1, st.mac)
    assert "10.0.1.1" not in f.tables["bs2"]        # bs2's tunnel back expired after the hold
    ev = events(logs)
    assert ev.count("handoff_start") == 2 and ev.count("handoff_complete") == 1
    assert ("marker_returned", "path") in [(e, fl.get("kind")) for e, fl in logs]


def test_leaving_the_new_bs_mid_flush_brings_released_packets_back_in_order():
    """bs1 → bs2 (flush under way) → the MH leaves bs2 → bs1 again: the packets released to bs2
    are punted back there, held until the path marker returns, and go first. Links are slow
    here (5 ms) so the releases are still on their way when bs2 starts diverting."""
    f, mob, logs = make(latency={"link": 0.005})
    f.register("mh1", "bs1")
    f.run(0.01)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.02)
    f.location["mh1"] = None
    stream(f, "mh1", 0.02, 30, 0.0005)
    f.run(0.05)
    f.register("mh1", "bs2", move=False)           # registered at bs2 but already gone again
    run_until(f, lambda: mob.mhs["mh1"].phase is Phase.HANDING_OFF, 0.1)
    f.apply(mob.detach("mh1", f.now))
    f.run(0.1)
    assert mob.mhs["mh1"].phase is Phase.DETACHED
    assert "marker_returned" in events(logs)
    f.register("mh1", "bs1")
    f.run(1.0)
    got = f.seqs("mh1")
    assert got == list(range(30)) and f.lost == []


def test_two_handoffs_in_a_row_retarget_the_old_hold_and_fall_back_when_not_peered():
    f, mob, logs = make(with_bs3(raw_example()), hold_time_ms=300)
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs2")                       # make-before-break: no detach first
    f.run(0.05)
    assert f.tables["bs1"]["10.0.1.1"] == Tunnel("bs2", True)
    stream(f, "mh1", 0.05, 50, 0.002)
    f.run(0.1)
    signalled_handoff(f, mob, "mh1", "bs3")
    f.run(0.16)
    st = mob.mhs["mh1"]
    assert st.bs == "bs3" and st.phase is Phase.ATTACHED and st.handoffs == 2
    assert f.tables["bs2"]["10.0.1.1"] == Tunnel("bs3", True)
    assert "10.0.1.1" not in f.tables["bs1"]        # bs1 is not peered with bs3: hold dropped
    f.run(1.0)
    got = f.seqs("mh1")
    assert sorted(got) == list(range(50)) and f.lost == [] and overtaken(got) <= st.late
    assert not f.tables["bs2"] and not f.tables["bs1"]
    notes = [n for h, n in f.notes if h == "ch"]
    assert [(n.event, n.old_cell, n.new_cell) for n in notes] == [
        (Event.HANDOFF, 1, 2), (Event.DETACH, 2, 0), (Event.HANDOFF, 2, 3)]


def test_registration_at_unknown_bs_or_port_is_rejected_without_effects():
    f, mob, logs = make()
    from p4handoff.controller.registration import RegistrationRequest
    req = RegistrationRequest("10.0.1.1", "10.0.1.1", identification=5)
    assert mob.registration("gw", 1, "02:aa:00:00:00:01", "10.0.1.1", 434, req, 0.0) == []
    assert mob.registration("bs9", 1, "02:aa:00:00:00:01", "10.0.1.1", 434, req, 0.0) == []
    assert mob.registration("bs1", 2, "02:aa:00:00:00:01", "10.0.1.1", 434, req, 0.0) == []   # peer port
    assert [f["reason"] for e, f in logs if e == "registration_rejected"] == [
        "not a base station", "not a base station", "not an access port"]
    assert mob.mhs["mh1"].phase is Phase.UNKNOWN and mob.routes()["bs1"] == {}
    with pytest.raises(MobilityError, match="not a base station"):
        mob.move("mh1", "gw", 0.0)


def test_registration_for_unknown_mh_is_refused_with_code_129():
    f, mob, logs = make()
    from p4handoff.controller.registration import RegistrationRequest
    req = RegistrationRequest("10.0.1.99", "10.0.1.99", identification=1)
    fx = mob.registration("bs1", 1, "02:aa:00:00:00:09", "10.0.1.99", 434, req, 0.0)
    assert len(fx) == 1 and fx[0].code is ReplyCode.ADMIN_PROHIBITED
    assert all(not t for t in mob.routes().values())


def test_stale_identification_is_refused_and_changes_nothing():
    f, mob, _ = make()
    f.register("mh1", "bs1", ident=10)
    f.run(0.01)
    f.register("mh1", "bs2", ident=10, move=False)
    f.run(0.1)
    assert [r.code for r in f.replies] == [ReplyCode.ACCEPTED, ReplyCode.IDENTIFICATION_MISMATCH]
    assert mob.mhs["mh1"].bs == "bs1"


def test_deregistration_detaches_and_notifies_correspondent_and_mh():
    f, mob, _ = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs1", lifetime=0, move=False)
    f.run(0.05)
    assert mob.mhs["mh1"].phase is Phase.DETACHED
    assert f.tables["bs1"]["10.0.1.1"] == Punt()
    assert [(h, n.event, n.old_cell) for h, n in f.notes] == [("ch", Event.DETACH, 1), ("mh1", Event.DETACH, 1)]
    # a deregistration from a BS the MH is not at is ignored
    f.register("mh1", "bs2", lifetime=0, move=False)
    f.run(0.1)
    assert mob.mhs["mh1"].phase is Phase.DETACHED and len(f.notes) == 2


def test_binding_lifetime_expiry_detaches():
    f, mob, logs = make()
    f.register("mh1", "bs1", lifetime=2)
    f.run(1.9)
    assert mob.mhs["mh1"].phase is Phase.ATTACHED
    f.run(2.1)
    assert mob.mhs["mh1"].phase is Phase.DETACHED
    assert ("detached", "lifetime") in [(e, fl.get("cause")) for e, fl in logs]


def test_operator_commands_validate_their_arguments():
    f, mob, _ = make()
    with pytest.raises(MobilityError, match="unknown mobile host"):
        mob.detach("mh9", 0.0)
    with pytest.raises(MobilityError, match="never attached"):
        mob.detach("mh1", 0.0)
    with pytest.raises(MobilityError, match="MAC of mh1 unknown"):
        mob.move("mh1", "bs1", 0.0)
    f.register("mh1", "bs1")
    f.run(0.01)
    with pytest.raises(MobilityError, match="not an access port"):
        mob.move("mh1", "bs2", f.now, port=2)
    f.apply(mob.move("mh1", "bs2", f.now))
    f.location["mh1"] = ("bs2", 1)
    f.run(0.5)
    assert mob.mhs["mh1"].bs == "bs2" and f.tables["gw"]["10.0.1.1"] == Forward("bs2")
    f.apply(mob.detach("mh1", f.now))
    assert mob.detach("mh1", f.now) == []             # idempotent once detached


def test_dsbp_probe_path_up_then_handoff_to_the_probed_cell():
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs2", care_of="10.0.12.1", simultaneous=True, move=False)
    f.run(0.05)
    assert f.tables["bs2"]["10.0.12.1"] == Deliver(1, mob.mhs["mh1"].mac)
    assert f.tables["gw"]["10.0.12.1"] == Forward("bs2")
    up = [n for h, n in f.notes if h == "ch"]
    assert [(n.event, n.path_addr, n.old_cell, n.new_cell) for n in up] == [(Event.PROBE_UP, "10.0.12.1", 1, 2)]
    assert mob.status()[0]["probe"] == {"bs": "bs2", "addr": "10.0.12.1"}
    # handoff to the probed BS: the probe path is folded into the handoff (no PROBE_DOWN)
    f.leave("mh1")
    f.run(0.1)
    f.register("mh1", "bs2")
    f.run(1.0)
    assert [n.event for h, n in f.notes if h == "ch"] == [Event.PROBE_UP, Event.DETACH, Event.HANDOFF]
    assert "10.0.12.1" not in f.tables["bs2"] and "10.0.12.1" not in f.tables["gw"]
    assert mob.mhs["mh1"].probe is None


def test_dsbp_probe_deregistration_and_bad_probe_requests():
    f, mob, _ = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs1", care_of="10.0.11.1", simultaneous=True, move=False)   # serving BS
    f.register("mh1", "bs2", care_of="10.0.11.1", simultaneous=True, move=False)   # wrong cell's address
    f.run(0.05)
    assert [r.code for r in f.replies] == [ReplyCode.ACCEPTED] + [ReplyCode.ADMIN_PROHIBITED] * 2
    f.register("mh1", "bs2", care_of="10.0.12.1", simultaneous=True, move=False)
    f.run(0.1)
    f.register("mh1", "bs2", care_of="10.0.12.1", simultaneous=True, lifetime=0, move=False)
    f.run(0.2)
    assert [n.event for h, n in f.notes if h == "ch"] == [Event.PROBE_UP, Event.PROBE_DOWN]
    assert "10.0.12.1" not in f.tables["bs2"] and "10.0.12.1" not in f.tables["gw"]


def test_probe_lifetime_expiry_takes_the_path_down():
    f, mob, _ = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs2", care_of="10.0.12.1", simultaneous=True, lifetime=1, move=False)
    f.run(1.5)
    assert [n.event for h, n in f.notes if h == "ch"] == [Event.PROBE_UP, Event.PROBE_DOWN]


def many_mobiles(n: int) -> dict:
    raw = raw_example()
    raw["mobile_hosts"] = [{"name": f"m{i}", "address": f"10.0.1.{i + 1}", "correspondents": ["ch"]}
                           for i in range(n)]
    return raw


def test_twenty_mhs_hand_off_at_once_each_complete_and_in_order():
    f, mob, logs = make(many_mobiles(20), hold_time_ms=100)
    names = [f"m{i}" for i in range(20)]
    for name in names:
        f.register(name, "bs1")
    run_until(f, lambda: all(mob.mhs[n].phase is Phase.ATTACHED for n in names), 1.0)
    f.run(f.now + 0.01)                            # last writes landed
    t0 = f.now
    for name in names:
        stream(f, name, t0, 30, 0.004)
    f.run(t0 + 0.02)
    for name in names:
        f.apply(mob.detach(name, f.now))
    f.run(f.now + 0.1)
    for name in names:
        f.location[name] = None
    f.run(f.now + 0.01)
    for name in names:
        f.register(name, "bs2")
    f.run(f.now + 2.0)
    assert f.lost == []
    for name in names:
        got = f.seqs(name)
        assert sorted(got) == list(range(30)) and overtaken(got) <= mob.mhs[name].late, name
        assert mob.mhs[name].bs == "bs2" and mob.mhs[name].phase is Phase.ATTACHED
    durations = [fl["duration_ms"] for e, fl in logs if e == "handoff_complete"]
    assert len(durations) == 20
    assert mob.pool.total == 0


def group_handoff(n: int, batched: bool) -> tuple[FakeNet, Mobility, float, int]:
    """n MHs streaming, detached together, then registering at bs2 at the same instant (a bus: IPF's K);
    returns the fake, the group's time (registrations sent -> last handoff complete) and its Writes."""
    f, mob, _ = make(many_mobiles(n), hold_time_ms=100)
    f.batched = batched
    names = [f"m{i}" for i in range(n)]
    for name in names:
        f.register(name, "bs1")
    run_until(f, lambda: all(mob.mhs[m].phase is Phase.ATTACHED for m in names), 5.0)
    f.run(f.now + 0.05)
    t0 = f.now
    for name in names:
        stream(f, name, t0, 20, 0.01)
    f.run(t0 + 0.03)
    for name in names:
        f.apply(mob.detach(name, f.now))
    f.run(f.now + 0.5)                 # every diverting write landed (64 of them one by one, unbatched)
    for name in names:
        f.location[name] = None
    done = len(f.completed)
    start = f.now
    for name in names:
        f.register(name, "bs2")
    run_until(f, lambda: len(f.completed) == done + n, start + 10.0, step=0.001)
    span = f.now - start
    writes = sum(start < t <= f.now for t, _, _ in f.writes)
    f.run(f.now + 1.0)
    return f, mob, span, writes


def test_a_group_handoff_as_a_batch_is_complete_in_order_and_faster():
    """64 MHs at once: each stream complete and in order either way; batched, every step's route changes go
    in one Write per switch, and the group completes several times sooner on the same latencies."""
    serial_f, _, serial, serial_writes = group_handoff(64, batched=False)
    f, mob, batched, writes = group_handoff(64, batched=True)
    for fake in (serial_f, f):
        assert fake.lost == []
        for i in range(64):
            got = fake.seqs(f"m{i}")
            assert sorted(got) == list(range(20)) and overtaken(got) <= fake.mobility.mhs[f"m{i}"].late
    assert all(mob.mhs[f"m{i}"].bs == "bs2" for i in range(64))
    # the first registration finds the controller idle and is handled alone; one Write carried the other 63's
    assert max(n for _, _, n in f.writes) >= 63
    assert writes <= serial_writes / 8, (writes, serial_writes)
    assert batched < serial / 4, (batched, serial)


def test_global_buffer_bound_is_shared_fairly():
    f, mob, _ = make(many_mobiles(4), buffer={"per_mh_packets": 40, "total_packets": 40})
    for i in range(4):
        f.register(f"m{i}", "bs1")
    run_until(f, lambda: all(st.phase is Phase.ATTACHED for st in mob.mhs.values()), 1.0)
    for i in range(4):
        f.apply(mob.detach(f"m{i}", f.now))
    f.run(f.now + 0.05)
    stream(f, "m0", f.now, 60, 0.0005)               # m0 floods first and fills the pool
    f.run(f.now + 0.06)
    assert len(mob.pool["m0"]) == 40
    for i in range(1, 4):
        stream(f, f"m{i}", f.now, 10, 0.0005)
    f.run(f.now + 0.2)
    assert mob.pool.total == 40
    assert [len(mob.pool[f"m{i}"]) for i in range(4)] == [10, 10, 10, 10]
    assert mob.pool["m0"].stats.dropped_overflow + mob.pool["m0"].stats.dropped_global == 50


def test_recovery_leaves_unmoved_mhs_alone_and_completes_an_interrupted_handoff():
    f, mob, _ = make(many_mobiles(3))
    for i in range(3):
        f.register(f"m{i}", "bs1")
    run_until(f, lambda: all(st.phase is Phase.ATTACHED for st in mob.mhs.values()), 1.0)
    f.apply(mob.detach("m1", f.now))                # m1 detached, m2 mid-handoff
    f.apply(mob.detach("m2", f.now))
    f.run(f.now + 0.05)
    fx = mob.move("m2", "bs2", f.now)
    # the controller dies after the first writes (bs2 delivers, gateway diverts): marker never sent
    f.apply([e for e in fx if isinstance(e, SetRoute)])
    f.run(f.now + 0.05)
    before = {sw: dict(t) for sw, t in f.tables.items()}
    logs2: list = []
    fresh = Mobility(f.net, log=lambda e, fl: logs2.append((e, fl)))
    fx = fresh.recover(before, 1.0)
    changed = {(e.switch, e.addr) for e in fx if isinstance(e, SetRoute)}
    assert all(addr != "10.0.1.1" for _, addr in changed)          # m0 untouched
    assert fresh.mhs["m0"].phase is Phase.ATTACHED and fresh.mhs["m0"].bs == "bs1"
    assert fresh.mhs["m1"].phase is Phase.DETACHED and fresh.mhs["m1"].anchor == "bs1"
    assert fresh.mhs["m2"].phase is Phase.ATTACHED and fresh.mhs["m2"].bs == "bs2"
    assert fresh.routes()["gw"]["10.0.1.3"] == Forward("bs2")
    assert fresh.routes()["bs1"]["10.0.1.3"] == Tunnel("bs2", True)
    assert not any(isinstance(e, Release) for e in fx)
    # recovering again from the result changes nothing: idempotent
    again = Mobility(f.net).recover(fresh.routes(), 2.0)
    assert [e for e in again if isinstance(e, SetRoute)] == []


def test_recovery_removes_routes_of_an_mh_that_is_nowhere():
    f, mob, _ = make()
    stale = {"gw": {"10.0.1.2": Forward("bs2"), "10.0.0.1": Deliver(1, "02:00:00:00:10:01")},
             "bs1": {"10.0.1.2": Tunnel("bs2", True)}, "bs2": {}}
    fx = mob.recover(stale, 0.0)
    assert set((e.switch, e.addr, e.action) for e in fx) == {("gw", "10.0.1.2", None), ("bs1", "10.0.1.2", None)}
    assert mob.routes()["gw"] == {}                  # the fixed host's route is not mobility's business


def test_malformed_registration_is_answered_134_only_on_access_ports():
    f, mob, logs = make()
    fx = mob.malformed_registration("bs1", 1, "02:aa:00:00:00:07", "10.0.1.7", 434, "too short")
    assert len(fx) == 1 and fx[0].code is ReplyCode.POORLY_FORMED and fx[0].port == 1
    assert mob.malformed_registration("bs1", 2, "02:aa:00:00:00:07", "10.0.1.7", 434, "too short") == []
    assert mob.malformed_registration("gw", 1, "02:aa:00:00:00:07", "10.0.1.7", 434, "too short") == []
    assert [fl.get("code") for e, fl in logs if e == "registration_rejected"] == [134, None, None]
    assert all(not t for t in mob.routes().values())


def test_a_registration_handled_late_times_its_markers_from_handling_and_its_duration_from_arrival():
    """The lab once queued registrations ~0.9 s behind status reads: with `now` = arrival, every marker
    deadline was already past when it was sent (marker_timeout at once, ordering unguarded)."""
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.05)
    st = mob.mhs["mh1"]
    req = RegistrationRequest(st.host.address, st.host.address, f.net.gateway.address, 0xFFFF, 99, 0)
    handled, arrived = 10.0, 9.1
    fx = mob.registration("bs2", 1, st.mac, st.host.address, 434, req, handled, received=arrived)
    start = next(fl for e, fl in logs if e == "handoff_start")
    assert start["queued_ms"] == pytest.approx(900.0)
    assert any(isinstance(e, SendToward) for e in fx)                # the gateway's marker is out
    assert mob.next_deadline() == pytest.approx(handled + mob.marker_s)
    mob.on_time(handled + mob.marker_s / 2)
    assert "marker_timeout" not in [e for e, _ in logs] and st.phase is Phase.HANDING_OFF
    gw_marker = next(e for e in fx if isinstance(e, SendToward))
    mob.packet_in("bs1", gw_marker.packet, handled + 0.005)          # punted back by the old BS
    complete = [fl for e, fl in logs if e == "handoff_complete"]
    assert complete and complete[0]["duration_ms"] == pytest.approx(905.0)


@pytest.mark.parametrize("raw_fn, to, release", [(raw_example, "bs2", "tunnel"),
                                                 (lambda: with_bs3(raw_example()), "bs3", "direct")])
def test_drain_markers_never_cross_the_new_cells_access_queue(raw_fn, to, release):
    """The cell's egress queue is the bottleneck (384 kb/s in the 3G case, deep): a drain marker queued
    there would hold the final routes and the HANDOFF notification for a whole queue's worth of airtime.
    It is punted at the new BS's ingress (tunnel) or sent up to the gateway (direct), never onto the
    access port, while the flushed packets themselves do go there."""
    f, mob, logs = make(raw_fn())
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 40, 0.001)
    f.run(0.02)
    f.leave("mh1")
    f.run(0.06)
    assert len(mob.pool["mh1"]) > 0
    f.register("mh1", to)
    f.run(1.0)
    assert next(fl for e, fl in logs if e == "handoff_start")["release"] == release
    ctl = f.net.controller.address
    drains = [e for e in f.effects if isinstance(e, (Release, SendToward)) and parse_ipv4(e.packet).dst == ctl]
    assert drains, "no drain marker was sent"
    for e in drains:
        assert (isinstance(e, Release) and e.tunnel) or (isinstance(e, SendToward) and e.peer == "gw"), e
    assert any(isinstance(e, Release) and parse_ipv4(e.packet).dst == "10.0.1.1" for e in f.effects)
    assert "marker_timeout" not in events(logs) and mob.mhs["mh1"].phase is Phase.ATTACHED


def test_handoff_notification_says_the_flight_was_forwarded_and_how_much():
    """Issue 20: the HANDOFF after a flush carries the forwarding signal (revision 2): the packets
    released for this handoff, the flush already over (the drain marker came back first)."""
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 40, 0.001)
    f.run(0.02)
    f.leave("mh1")
    f.run(0.06)
    buffered = len(mob.pool["mh1"])
    assert buffered > 0
    f.register("mh1", "bs2")
    f.run(1.0)
    [detach, handoff] = [n for h, n in f.notes if h == "ch"]
    assert detach.event is Event.DETACH and detach.forwarding is None
    assert handoff.event is Event.HANDOFF
    assert handoff.forwarding is not None
    assert handoff.forwarding.buffered == mob.pool["mh1"].stats.released >= buffered
    assert handoff.forwarding.flush_end_us == 0


def test_a_silent_old_bs_gets_revision_1_handoffs_after_the_same_flush():
    """`signal_forwarding: false` on the BS the MH leaves (the lab's column for the network before issue 20): the
    flush is the same, the HANDOFF carries no forwarding signal, so the senders restart as they did then.
    The gateway cannot be made silent (it flushes for no MH)."""
    raw = raw_example()
    next(sw for sw in raw["switches"] if sw["name"] == "bs1")["signal_forwarding"] = False
    f, mob, logs = make(raw)
    f.register("mh1", "bs1")
    f.run(0.01)
    stream(f, "mh1", 0.01, 40, 0.001)
    f.run(0.02)
    f.leave("mh1")
    f.run(0.06)
    assert len(mob.pool["mh1"]) > 0
    f.register("mh1", "bs2")
    f.run(1.0)
    [_, handoff] = [n for h, n in f.notes if h == "ch"]
    assert handoff.event is Event.HANDOFF and handoff.forwarding is None
    assert mob.pool["mh1"].stats.released > 0
    raw = raw_example()
    next(sw for sw in raw["switches"] if sw["role"] == "gateway")["signal_forwarding"] = False
    with pytest.raises(NetworkError, match="only base stations flush"):
        parse_network(raw)


def test_make_before_break_with_nothing_buffered_sends_no_forwarding_signal():
    f, mob, logs = make()
    f.register("mh1", "bs1")
    f.run(0.01)
    f.register("mh1", "bs2")                       # nothing in flight: nothing forwarded
    f.run(0.5)
    [handoff] = [n for h, n in f.notes if h == "ch"]
    assert handoff.event is Event.HANDOFF and handoff.forwarding is None
