"""The simulator's results do not move when it is made faster (issue 24): golden digests of short runs.

Each case runs a scenario file's run for a few simulated seconds and hashes
what can be observed of it, event by event: every segment each endpoint
sends and receives (with its time and every header field), every link's
counters and queue (occupancy and RED average) every 10 ms, the sender
trace files, the final counters, notifications and timeline. The digests
were recorded before the first speed change (commit "golden trace") and
must not change with one: a change of any packet's fate or time, or of any
random draw, changes them. A model change that is meant to change results
re-records them and says why in its commit.

Floats are hashed by `repr` (exact); the digests hold on any IEEE-754
machine whose libm `pow` rounds as glibc's does (RED's idle decay).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from p4handoff.hosts.segment import Segment
from p4handoff.hosts.sim import Network
from p4handoff.lab import sim_backend
from p4handoff.scenario.loader import load

TRACES = Path(__file__).resolve().parent.parent / "traces"
SAMPLE = 0.01


def _seg(seg: Segment) -> str:
    return (f"{seg.src}>{seg.dst} {seg.sport}>{seg.dport} s{seg.seq} a{seg.ack} f{seg.flags} w{seg.window} "
            f"l{len(seg.payload)} m{seg.mss} ws{seg.wscale} sp{int(seg.sack_permitted)} sk{seg.sack} ts{seg.ts} "
            f"d{seg.dscp}{'D' if seg.dummy else ''}")


class Recorder:
    """Streams every observable event of one run into a SHA-256."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.hash = hashlib.sha256()
        self.events = 0
        for flow in net.flows:
            for side, slot in (("s", flow.sender_slot), ("r", flow.receiver_slot)):
                slot.on_send.append(self._tap(f"{flow.name}/{side}>"))
                slot.on_receive.append(self._tap(f"{flow.name}/{side}<"))
        self._k = 0
        net.sim.at(0.0, self._sample)

    def add(self, text: str) -> None:
        self.hash.update(text.encode())
        self.hash.update(b"\n")
        self.events += 1

    def _tap(self, where: str) -> Any:
        def record(seg: Segment, now: float) -> None:
            self.add(f"{now!r} {where} {_seg(seg)}")
        return record

    def _sample(self) -> None:
        now = self.net.now
        for link in self.net.links:
            c = link.counters()
            q = link.queue
            self.add(f"{now!r} {c['link']} o{c['offered']} s{c['sent']} d{c['delivered']} b{c['bytes_sent']!r} "
                     f"bd{c['bytes_delivered']} x{sorted(link.drops.items())} a{sorted(q.admitted.items())} "
                     f"q{q.data_len}/{q.dummy_len} avg{q.avg!r}")
        self._k += 1
        self.net.sim.at(self._k * SAMPLE, self._sample)


def digest(scenario: str, until: float, variant: str, point: int = 0,
           overrides: tuple[tuple[str, Any], ...] = (), tmp: Path | None = None) -> tuple[str, int]:
    """(SHA-256, events hashed) of `scenario`'s run (variant label, sweep point index) up to `until` s."""
    sf = load(TRACES / scenario, overrides)
    points = sf.points()
    scn = sf.resolve(next(v for v in sf.variants if v.label == variant), points[point])
    assert tmp is not None
    net, flows, writers = sim_backend.build(scn, scn.seed, tmp)
    rec = Recorder(net)
    try:
        net.run(until)
    finally:
        for w in writers:
            w.close()
    for name in sorted(flows):
        rec.add(f"trace {name}")
        rec.hash.update((tmp / f"trace-{name}.csv").read_bytes())
    for c in net.counters():
        rec.add(repr(sorted((k, v if not isinstance(v, dict) else sorted(v.items())) for k, v in c.items())))
    for t, note in net.notifications:
        rec.add(f"{t!r} {note}")
    for t, what in net.timeline:
        rec.add(f"{t!r} {what}")
    return rec.hash.hexdigest(), rec.events


K4 = (("sweep.0.values", [4]),)
CASES = {
    # a group handoff into RED (random early drops, forced drops, IPF flush, Reno timeouts), and M-RED
    "ipf-group-burst-RED": (("ipf-group-burst.yaml", 12.5, "RED", 0, K4),
                            "72e444a892be37dcc0ff0c3ce0a8f1a5373c16a4cd3ebb4f615b5d49064cfc2e", 181857),
    "ipf-group-burst-IPF": (("ipf-group-burst.yaml", 12.5, "IPF", 0, K4),
                            "a16f84de6cb56e08f07c0e0bc75386d7b8c8de3d728ed0e7256b843bf83933f9", 181857),
    # DSBP's overlap: probing, dummy segments and dummy ACKs in their own class
    "dsbp-capacity": (("dsbp-capacity.yaml", 16.0, "DSBP", 0, ()),
                      "97d29ef251c6c64f9e0bbd78257a4bad47fcfde6a654c9d09d2a752513f30263", 63536),
    # random loss on a link, SACK, UCC
    "ucc-loss": (("ucc-loss.yaml", 4.0, "UCC", 2, ()),
                 "c19a85ef7da58843b73ce8182e423e032af54faca7687e9480c942f4c963f167", 16023),
    # vertical handoffs with outages, Bandwidth-Aware
    "vh-switching": (("vh-switching.yaml", 14.0, "Bandwidth-Aware", 0, ()),
                     "3d89c754d679e05dcba5b79af706ef9947154935c790ce31ee1e7533562abfc8", 60333),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_simulator_runs_match_their_golden_digest(case: str, tmp_path: Path) -> None:
    (scenario, until, variant, point, overrides), want, events = CASES[case]
    got, n = digest(scenario, until, variant, point, overrides, tmp_path)
    assert (got, n) == (want, events), f"{case}: the run's events changed ({n} events hashed)"


@pytest.mark.slow
def test_the_digest_sees_a_change_of_one_packet(tmp_path: Path) -> None:
    """A one-packet change of a queue limit changes the digest (the recorder is not blind)."""
    (scenario, until, variant, point, overrides), want, _ = CASES["ipf-group-burst-RED"]
    a, _ = digest(scenario, until, variant, point, overrides, tmp_path)
    (tmp_path / "b").mkdir()
    b, _ = digest(scenario, until, variant, point, overrides + (("topology.cells.new.queue.limit", 299),),
                  tmp_path / "b")
    assert a != b
