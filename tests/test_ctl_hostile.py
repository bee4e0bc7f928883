"""Hostile control-plane input against the controller's logic, on the in-memory network (tests/ctl_fakenet.py).

Two properties, each over more than 10,000 generated inputs (Hypothesis, derandomized so CI is
reproducible; the strategies are in tests/hostile_inputs.py):

1. Hostile packet-ins (registrations on UDP 434 truncated, mis-framed, for unknown MHs, replayed,
   from a wrong port or switch; garbage buffer punts; forged drain markers; punt reasons the
   controller does not serve), injected *during* a run with two handoffs and two streams, leave
   the switches' tables, the packets the MHs receive, the notifications and every MH's status
   exactly as in the same run without them; each input is logged once with a reason.
2. Out-of-order operator and MH sequences (detach before attach, handoffs to where it already is,
   deregistrations elsewhere, ping-pong, leaving without a word, commands to unknown MHs/BSs):
   nothing raises but a refusal with its reason, and once every MH registers somewhere and the
   timers run out, the tables are exactly those of a clean run that attached them there.

The real daemon, its socket and its description file get the same treatment in
tests/test_ctl_hostile_daemon.py; the switch side on BMv2 in tests/test_ctl_bmv2.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from p4handoff.controller.mh_state import MobilityError
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import parse_network
from p4handoff.controller.punts import dispatch
from p4handoff.controller.registration_auth import RegistrationGuard
from tests.ctl_fakenet import FakeNet
from tests.hostile_inputs import REJECT_EVENTS, PacketIn, hostile_packet_in

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
NET = parse_network(yaml.safe_load(EXAMPLE.read_text()))
FUZZ = settings(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def make() -> tuple[FakeNet, Mobility, list[tuple[str, dict[str, Any]]]]:
    logs: list[tuple[str, dict[str, Any]]] = []
    mob = Mobility(NET, log=lambda e, f: logs.append((e, f)), seed=7)
    return FakeNet(NET, mob), mob, logs


def two_handoffs(hostile: list[tuple[float, PacketIn]]) -> tuple[FakeNet, Mobility, list[int]]:
    """mh1 hands off bs1 → bs2 (signalled), mh2 bs2 → bs1 (make-before-break), both receiving a stream;
    `hostile` packet-ins are injected at their times. Returns the fake, the state machine and, per
    hostile input, how many rejection lines with a reason it produced."""
    f, mob, logs = make()
    logged: list[int] = []

    def inject(switch: str, meta: dict[str, Any], payload: bytes) -> list:
        before = len(logs)
        out = dispatch(mob, RegistrationGuard(NET, None, mob.log), mob.log, switch, meta, payload, f.now)
        logged.append(sum(1 for e, fields in logs[before:] if e in REJECT_EVENTS and fields.get("reason")))
        return out.effects

    f.register("mh1", "bs1")
    f.register("mh2", "bs2")
    f.run(0.05)
    for i in range(200):
        f.send("mh1", i, when=0.06 + i * 0.002)
    for i in range(100):
        f.send("mh2", i, when=0.06 + i * 0.004)
    for when, (switch, meta, payload) in hostile:
        f.at(when, lambda s=switch, m=meta, p=payload: f.controller(lambda: inject(s, m, p)))
    f.run(0.2)
    f.apply(mob.detach("mh1", f.now))            # an L2 trigger, then the registration at bs2
    f.run(0.21)
    f.location["mh1"] = None
    f.register("mh1", "bs2")
    f.run(0.45)
    f.register("mh2", "bs1")
    f.run(2.5)
    return f, mob, logged


REFERENCE = two_handoffs([])
INPUTS = {"hostile packet-ins": 0, "operator sequences": 0}


def test_reference_run_is_what_the_property_compares_against():
    f, mob, _ = REFERENCE
    assert sorted(f.seqs("mh1")) == list(range(200))             # signalled: nothing lost
    in_the_air = [seq for addr, seq, why in f.lost if addr == NET.mobile("mh2").address and "not at bs2" in why]
    assert sorted(f.seqs("mh2") + in_the_air) == list(range(100)) and len(in_the_air) <= 2   # moved unannounced
    assert {m["mh"]: (m["phase"], m["bs"]) for m in mob.status()} == {"mh1": ("attached", "bs2"),
                                                                     "mh2": ("attached", "bs1")}


@settings(FUZZ, max_examples=140)
@given(st.lists(st.tuples(st.floats(0.055, 1.2), hostile_packet_in(NET)), min_size=60, max_size=120))
def _hostile_packet_ins_change_nothing(hostile: list[tuple[float, PacketIn]]) -> None:
    f, mob, logged = two_handoffs(hostile)
    ref, ref_mob, _ = REFERENCE
    INPUTS["hostile packet-ins"] += len(hostile)
    assert logged == [1] * len(hostile), "each hostile input is logged exactly once, with a reason"
    assert f.tables == ref.tables
    assert f.received == ref.received
    assert f.notes == ref.notes
    assert mob.status() == ref_mob.status()
    assert mob.pool.total == 0


@pytest.mark.slow
def test_ten_thousand_hostile_packet_ins_change_nothing_and_each_is_logged():
    _hostile_packet_ins_change_nothing()
    print(f"hostile packet-ins tried: {INPUTS['hostile packet-ins']}")
    assert INPUTS["hostile packet-ins"] >= 10_000


# ---- out-of-order sequences

MHS = [m.name for m in NET.mobile_hosts]
BSS = [s.name for s in NET.base_stations]
op = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(MHS), st.sampled_from(BSS)),
    st.tuples(st.just("deregister"), st.sampled_from(MHS), st.sampled_from(BSS)),
    st.tuples(st.just("move"), st.sampled_from(MHS + ["nobody", "10.9.9.9"]), st.sampled_from(BSS + ["gw", "bs9"])),
    st.tuples(st.just("detach"), st.sampled_from(MHS + ["nobody"]), st.just("")),
    st.tuples(st.just("vanish"), st.sampled_from(MHS), st.just("")),
    st.tuples(st.just("send"), st.sampled_from(MHS), st.just("")),
    st.tuples(st.just("wait"), st.just(""), st.sampled_from(["0.0005", "0.004", "0.05", "0.3"])),
)


def converged(final: dict[str, str]) -> dict:
    f, mob, _ = make()
    for mh, bs in final.items():
        f.register(mh, bs)
    f.run(5.0)
    return f.tables


def run_ops(ops: list[tuple[str, str, str]], final: dict[str, str]) -> tuple[FakeNet, Mobility, list]:
    f, mob, logs = make()
    seq = 0
    for kind, mh, arg in ops:
        if kind == "register":
            f.register(mh, arg)
        elif kind == "deregister":
            f.register(mh, arg, lifetime=0, move=False)
        elif kind in ("move", "detach"):
            try:
                fx = mob.move(mh, arg, f.now) if kind == "move" else mob.detach(mh, f.now)
            except MobilityError as exc:
                assert str(exc), "a refusal says why"
            else:
                if kind == "move":
                    f.location[mh] = (arg, 1)
                f.apply(fx)
        elif kind == "vanish":
            f.leave(mh, tell_controller=False)
        elif kind == "send":
            f.send(mh, seq)
            seq += 1
        else:
            f.run(f.now + float(arg))
    f.run(f.now + 0.01)
    for mh, bs in final.items():
        f.register(mh, bs)
    f.run(f.now + 5.0)
    return f, mob, logs


@settings(FUZZ, max_examples=300)
@given(st.lists(op, min_size=10, max_size=40), st.fixed_dictionaries({m: st.sampled_from(BSS) for m in MHS}))
def _any_sequence_converges(ops: list[tuple[str, str, str]], final: dict[str, str]) -> None:
    INPUTS["operator sequences"] += len(ops)
    f, mob, logs = run_ops(ops, final)
    assert not [fields for e, fields in logs if e == "internal_error"]
    assert f.tables == converged(final), "tables after the final registrations differ from a clean attach"
    assert all(m["phase"] == "attached" and m["bs"] == final[m["mh"]] and not m["holds"] for m in mob.status())
    assert mob.pool.total == 0
    for mh in MHS:
        got = f.seqs(mh)
        assert len(got) == len(set(got)), f"{mh} received a packet twice"


@pytest.mark.slow
def test_out_of_order_sequences_converge_to_a_clean_attach():
    _any_sequence_converges()
    print(f"operator/MH events tried: {INPUTS['operator sequences']}")
    assert INPUTS["operator sequences"] >= 5_000


def test_a_refused_registration_does_not_move_the_replay_bound():
    """A request refused for its care-of with the highest identification must not lock the MH out."""
    from p4handoff.controller.registration import RegistrationRequest, ReplyCode
    f, mob, _ = make()
    f.register("mh1", "bs1", ident=5)
    f.run(0.05)
    bad = RegistrationRequest(NET.mobile("mh1").address, "10.99.0.1", "192.168.100.1", 0xFFFF, 2**64 - 1)
    f.apply(mob.registration("bs2", 1, "02:aa:00:00:00:01", "10.99.0.1", 434, bad, f.now))
    assert f.replies[-1].code is ReplyCode.ADMIN_PROHIBITED
    f.register("mh1", "bs2", ident=6)
    f.run(1.0)
    assert f.replies[-1].code is ReplyCode.ACCEPTED and mob.state("mh1").bs == "bs2"

