"""Packet fuzzing (issue 12): the frame generator, and a 1,000-frame slice of `make fuzz` on BMv2.

The generator is checked without a switch (seeded, every kind, every header
field reachable, templates well-formed). The slice runs p4handoff/reliability/fuzz_bmv2.py
against p4src/v1model/bs.p4 on simple_switch_grpc — skipped, with the reason, where
BMv2, the compiled program or namespaces are missing.
"""
from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from p4handoff.controller.packets import parse_ipv4, split_ethernet
from p4handoff.bmv2 import bmv2_available
from p4handoff.netns import unavailable_reason
from p4handoff.reliability.fuzz_frames import KINDS, Addressing, fields, generate, mutate, templates

REPO = Path(__file__).resolve().parent.parent
A = Addressing("02:00:00:00:00:02", "192.168.100.2", "192.168.100.3", "10.0.1.254", "192.0.2.1",
               "10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.5.1")


def test_same_seed_same_frames_and_every_kind():
    a, b = generate(7, 2000, A), generate(7, 2000, A)
    assert a == b and generate(8, 2000, A) != a
    kinds = Counter(f.kind for f in a)
    assert set(kinds) == set(KINDS) and all(n > 200 for n in kinds.values())


def test_templates_are_well_formed():
    for name, frame in templates(A).items():
        if frame[12:14] == b"\x08\x00":
            _, _, packet = split_ethernet(frame)
            parse_ipv4(packet)            # raises on a bad header
        assert len(frame) >= 42, name


def test_every_field_of_every_template_gets_mutated():
    rng = random.Random(1)
    wanted = {(name, f) for name, frame in templates(A).items() for f, _, _ in fields(frame)}
    hit = set()
    for _ in range(400):
        for name, frame in templates(A).items():
            hit.add((name, mutate(rng, frame)[1]))
    assert wanted <= hit, sorted(wanted - hit)[:10]
    assert {"inner.dst", "tcp.off_res", "ip.options", "arp.tpa", "udp.len"} <= {f for _, f in hit}


def oracle():
    from p4handoff.controller.intents import Deliver, Punt, Tunnel
    from p4handoff.controller.network import parse_network
    from p4handoff.controller.programmer import Programmer
    from p4handoff.reliability.fuzz_bmv2 import MH, Oracle, description, routes_of
    net = parse_network(description())
    prog = Programmer(net)
    entries = prog.static_entries("bs1") + [
        prog.route_entry("bs1", MH["delivered"][0], Deliver(1, MH["delivered"][1])),
        prog.route_entry("bs1", MH["buffering"][0], Punt()),
        prog.route_entry("bs1", MH["tunnelled"][0], Tunnel("bs2", True))]
    return Oracle(routes_of(entries), net.switch("bs1").address)


def test_the_wrong_port_oracle_tells_allowed_outputs_from_leaks():
    """The check `make fuzz` applies to every frame leaving the switch, on hand-made outputs."""
    from p4handoff.controller.packets import encapsulate, ethernet, udp_packet
    o = oracle()

    def to(dst: str, dscp: int = 0) -> bytes:
        return ethernet("02:aa:00:00:00:01", "02:00:00:00:01:fe", udp_packet("10.0.0.1", dst, 1, 1, b"x", dscp))

    def tunnel(dst: str, dscp: int) -> bytes:
        return ethernet("02:00:00:00:00:03", "02:00:00:00:00:02",
                        encapsulate(udp_packet("10.0.0.1", dst, 1, 1, b"x"), "192.168.100.2", "192.168.100.3", dscp))
    arp = templates(A)["arp-gateway"]
    assert o.check("core", 4, set(), 1, to(A.delivered)) is None
    assert o.check("core", 4, set(), 2, to(A.stranger)) is None                  # default route to the gateway
    assert o.check("core", 4, set(), 4, to(A.fixed)) is None
    assert o.check("access", 1, set(), 3, tunnel(A.tunnelled, 43)) is None      # our marking tunnel
    assert o.check("access", 1, set(), 1, arp) is None                          # reply out of the ingress port
    assert "tables say 1" in o.check("core", 4, set(), 4, to(A.delivered))
    assert "tables say None" in o.check("core", 4, set(), 1, to(A.buffering))   # punted: never out
    assert "priority mark" in o.check("core", 4, set(), 1, to(A.delivered, 43))
    assert o.check("peer", 3, set(), 1, to(A.delivered, 43)) is None            # trusted side: not judged
    assert "ARP out of 2" in o.check("access", 1, set(), 2, arp)
    assert o.check("cpu", 255, {2}, 2, to(A.delivered)) is None                 # a direct packet-out
    assert "non-IPv4" in o.check("core", 4, set(), 2, b"\x00" * 12 + b"\x86\xdd" + b"\x00" * 40)


_bmv2_ok, _bmv2_why = bmv2_available()
_netns_why = unavailable_reason()


@pytest.mark.bmv2
@pytest.mark.netns
@pytest.mark.slow
@pytest.mark.skipif(not _bmv2_ok, reason=_bmv2_why or "BMv2 missing")
@pytest.mark.skipif(not (REPO / "build" / "bs.json").exists(),
                    reason="build/bs.json not built: p4c-bm2-ss missing or 'make build' not run")
@pytest.mark.skipif(_netns_why is not None, reason=_netns_why or "")
def test_a_thousand_fuzzed_frames_are_all_accounted_for(tmp_path):
    from p4handoff.reliability.fuzz_bmv2 import run
    result = run(1000, seed=12, workdir=tmp_path, batch_size=250)
    print("\n".join(result.lines()))
    assert result.frames >= 900                  # the rest: shorter than an Ethernet header, refused by the kernel
    assert result.switch_failures == 0
    assert result.unaccounted == 0, result.batches
    assert result.wrong_port == 0, result.examples
    assert result.occupancy_nonzero == 0
    assert {b["role"] for b in result.batches} == {"access", "peer", "core", "cpu"}
