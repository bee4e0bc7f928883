"""Group handoffs as a batch (controller/effect_batch.py): the inputs' real effect lists, merged into steps.

Every effect list here comes from the real state machine (`Mobility`) handling
real registrations and punts on the example network with many MHs; the tests
check the guarantees the module states: each input's order kept, one Write per
switch per step, a key never twice in one Write, one MH's inputs in order,
markers coalesced only per path, and that a group's Writes do not grow with its
size.
"""
from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from p4handoff.controller.effect_batch import EffectBatch, Step, owners_in
from p4handoff.controller.intents import Effect, Release, SendToward, SetRoute
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import Network, parse_network
from p4handoff.controller.packets import marker_nonce, parse_ipv4, udp_packet
from p4handoff.controller.registration import RegistrationRequest

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"


def group_net(n: int) -> Network:
    raw = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    raw["mobile_hosts"] = [{"name": f"m{i}", "address": f"10.0.1.{i + 1}", "mac": f"02:aa:00:00:01:{i:02x}",
                            "correspondents": ["ch"]} for i in range(n)]
    return parse_network(raw)


def register(mob: Mobility, net: Network, i: int, bs: str, ident: int, now: float) -> list[Effect]:
    host = net.mobile_hosts[i]
    req = RegistrationRequest(host.address, host.address, net.gateway.address, 0xFFFF, ident, 0)
    return mob.registration(bs, 1, host.mac, host.address, 434, req, now)


def group_inputs(n: int, buffered: int = 3) -> tuple[Network, Mobility, list[list[Effect]]]:
    """n MHs attached at bs1 with `buffered` packets each in the buffer, then all registering at bs2:
    the registrations' effect lists, as the daemon collects them when they arrive together."""
    net = group_net(n)
    mob = Mobility(net, seed=3)
    for i in range(n):
        register(mob, net, i, "bs1", 1, 0.0)
    for i in range(n):
        mob.detach(f"m{i}", 0.1)
        for k in range(buffered):
            mob.packet_in("bs1", udp_packet("10.0.0.1", net.mobile_hosts[i].address, 5000, 6000, bytes([k])), 0.1)
    return net, mob, [register(mob, net, i, "bs2", 2, 0.2) for i in range(n)]


def batch_of(net: Network, inputs: list[list[Effect]]) -> list[Step]:
    b = EffectBatch(owners_in(net), net.controller.address)
    for fx in inputs:
        b.add(fx)
    return b.steps()


def positions(steps: list[Step]) -> dict[int, tuple[int, int, str | None]]:
    """id(effect) -> (step, 0 for a write or 1 + its index among the packets, the written switch)."""
    pos: dict[int, tuple[int, int, str | None]] = {}
    for s, step in enumerate(steps):
        for switch, routes in step.writes.items():
            for e in routes:
                pos[id(e)] = (s, 0, switch)
        for k, e in enumerate(step.after):
            pos[id(e)] = (s, 1 + k, None)
    return pos


def assert_order_kept(inputs: list[list[Effect]], steps: list[Step]) -> None:
    """Each input's effects happen in its order: a write after a write to the same switch may share its
    Write, a write marked `with_previous` after a write may share its step; anything else strictly later (a
    packet after the writes of its step, a write in a later step)."""
    pos = positions(steps)
    dropped = {n for step in steps for v in step.coalesced.values() for n in v}
    for fx in inputs:
        kept = [e for e in fx if id(e) in pos]
        assert all(_nonce(e) in dropped for e in fx if id(e) not in pos)
        for a, b in zip(kept, kept[1:]):
            (sa, ka, wa), (sb, kb, wb) = pos[id(a)], pos[id(b)]
            if isinstance(a, SetRoute) and isinstance(b, SetRoute) and (wa == wb or b.with_previous) and sa == sb:
                continue
            assert (sb, kb) > (sa, ka), (a, b)
            if isinstance(b, SetRoute):
                assert sb > sa, (a, b)


def _nonce(e: Effect) -> int | None:
    return marker_nonce(parse_ipv4(e.packet)) if isinstance(e, (Release, SendToward)) else None


def test_one_input_keeps_the_daemons_old_order():
    net, _, inputs = group_inputs(1)
    steps = batch_of(net, inputs)
    # (detached: bs1 already diverts) gw Punt and bs2 Deliver at once | gateway marker, releases, drain marker,
    # reply
    assert [sorted(s.writes) for s in steps] == [["bs2", "gw"]]
    assert [type(e).__name__ for e in steps[0].after][:2] == ["SendToward", "Release"]
    assert all(not s.coalesced for s in steps)
    assert_order_kept(inputs, steps)


def test_a_group_shares_one_write_per_switch_per_step():
    net, _, inputs = group_inputs(64)
    steps = batch_of(net, inputs)
    assert len(steps) == len(batch_of(*group_inputs(1)[::2]))       # as many steps as one MH needs
    writes = [(sw, len(r)) for s in steps for sw, r in s.writes.items()]
    assert writes == [("gw", 64), ("bs2", 64)]
    assert_order_kept(inputs, steps)
    for step in steps:
        for routes in step.writes.values():
            keys = [(e.switch, e.addr) for e in routes]
            assert len(keys) == len(set(keys))


def test_markers_on_one_path_are_coalesced_into_the_last():
    net, _, inputs = group_inputs(8)
    steps = batch_of(net, inputs)
    [step] = steps                                         # every MH's writes at once, then the packets
    gw_markers = [e for e in step.after if isinstance(e, SendToward)]
    assert len(gw_markers) == 1 and gw_markers[0].peer == "bs1"
    drains = [e for e in step.after if isinstance(e, Release) and _nonce(e) is not None]
    assert len(drains) == 1                                # eight drain markers bs1 -> bs2: one sent
    assert {k: len(v) for k, v in step.coalesced.items()} == {_nonce(gw_markers[0]): 7, _nonce(drains[0]): 7}
    sent = [_nonce(e) for e in inputs[-1] if isinstance(e, SendToward)]
    assert sent == [_nonce(gw_markers[0])]                 # the kept one is the last MH's own
    last_release = max(i for i, e in enumerate(step.after) if isinstance(e, Release))
    assert step.after[last_release] is drains[0]           # behind every MH's releases on that path
    assert_order_kept(inputs, steps)


def test_a_groups_drain_markers_are_counted_behind_every_release_on_their_path():
    """Eight MHs with 3 packets each flushed bs1 -> bs2 in one step: the kept drain marker, and the seven it
    stands for, wait behind all 24 releases (each MH's own timeout allowed only for its 3); the gateway's
    marker, on no release path, is not counted. Applied, the drain markers' deadlines grow by 24 ms."""
    net, mob, inputs = group_inputs(8)
    [step] = batch_of(net, inputs)
    [drain] = [e for e in step.after if isinstance(e, Release) and _nonce(e) is not None]
    kept = _nonce(drain)
    assert step.behind == {n: 24 for n in [kept, *step.coalesced[kept]]}
    before = {m: st.drain_marker[1] for m, st in mob.mhs.items() if st.drain_marker is not None}
    assert len(before) == 8
    for nonce, releases in step.behind.items():
        mob.drain_behind(nonce, releases)
    assert {m: st.drain_marker[1] - before[m] for m, st in mob.mhs.items()} == pytest.approx(
        {m: 0.024 for m in before})
    mob.drain_behind(12345, 10)                            # not a marker awaited: nothing
    mob.on_time(max(before.values()) + 0.001)              # each MH's own allowance ran out: not the group's
    assert all(st.drain_marker is not None for st in mob.mhs.values())


def test_markers_on_different_paths_are_not_coalesced():
    net = group_net(2)
    mob = Mobility(net, seed=3)
    register(mob, net, 0, "bs1", 1, 0.0)
    register(mob, net, 1, "bs2", 1, 0.0)
    mob.detach("m0", 0.1)
    mob.detach("m1", 0.1)
    inputs = [register(mob, net, 0, "bs2", 2, 0.2), register(mob, net, 1, "bs1", 2, 0.2)]
    steps = batch_of(net, inputs)
    assert all(not s.coalesced for s in steps)
    assert sorted(e.peer for s in steps for e in s.after if isinstance(e, SendToward)) == ["bs1", "bs2"]
    assert_order_kept(inputs, steps)


def test_one_mhs_later_input_starts_after_its_earlier_one():
    net, mob, inputs = group_inputs(4)
    # m0 moves again (ping-pong back to bs1) in the same batch, and a punt for m1 arrives
    again = register(mob, net, 0, "bs1", 3, 0.21)
    punt = mob.packet_in("gw", udp_packet("10.0.0.1", "10.0.1.2", 5000, 6000, b"x"), 0.21)
    batch = inputs + [again, punt]
    steps = batch_of(net, batch)
    assert_order_kept(batch, steps)
    pos = positions(steps)
    first_end = max(pos[id(e)][:2] for e in inputs[0] if id(e) in pos)
    assert min(pos[id(e)][:2] for e in again if id(e) in pos) > first_end


def test_order_holds_for_random_mixes_of_inputs():
    """Registrations, punts, detaches and returning markers of 16 MHs, interleaved at random, 30 times."""
    rng = random.Random(5)
    for _ in range(30):
        net = group_net(16)
        mob = Mobility(net, seed=rng.randrange(1000))
        for i in range(16):
            register(mob, net, i, "bs1", 1, 0.0)
        inputs: list[list[Effect]] = []
        markers: list[tuple[str, int]] = []
        ident = {i: 2 for i in range(16)}
        for step in range(60):
            i = rng.randrange(16)
            now = 0.1 + step * 1e-3
            kind = rng.random()
            if kind < 0.35:
                fx = register(mob, net, i, rng.choice(["bs1", "bs2"]), ident[i], now)
                ident[i] += 1
            elif kind < 0.7:
                fx = mob.packet_in(rng.choice(["gw", "bs1", "bs2"]),
                                   udp_packet("10.0.0.1", net.mobile_hosts[i].address, 5000, 6000, b"p"), now)
            elif kind < 0.8 and mob.mhs[f"m{i}"].phase.value in ("attached", "handing-off"):
                fx = mob.detach(f"m{i}", now)
            elif markers:
                switch, nonce = markers.pop(rng.randrange(len(markers)))
                fx = mob.marker_back(switch, nonce, now)
            else:
                continue
            markers += [(e.target if isinstance(e, Release) else e.peer, n) for e in fx
                        if isinstance(e, (Release, SendToward)) and (n := _nonce(e)) is not None]
            inputs.append(fx)
        assert_order_kept(inputs, batch_of(net, inputs))
