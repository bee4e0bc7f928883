"""The simulator's network with a tiny deterministic source and sink (fakes in
addition to the real-TCP tests of test_sim_schemes.py): rate, delay, loss,
outage, determinism, dummies, handoff routing, notifications, IPF."""
from __future__ import annotations

from pathlib import Path

import pytest

from p4handoff.hosts.segment import ACK, Segment
from p4handoff.hosts.sim import MRED, Network, Queue, QueueSampler, TraceWriter, ideal_bps, wire_size
from p4handoff.hosts.sim.tcpflow import tcp_flow
from p4handoff.hosts.tcp import TcpConfig
from p4handoff.notify import Event, Forwarding, Notification
from p4handoff.wire import DSCP_LE

PAYLOAD = 960          # + 40 header bytes = 1000 bytes on the wire


class Source:
    """Sends `count` segments of PAYLOAD bytes, one every `gap` s (0: all at once)."""

    def __init__(self, src: str, dst: str, count: int, gap: float = 0.0, dummy_every: int = 0,
                 sport: int = 4000, dport: int = 5000) -> None:
        self.src, self.dst, self.count, self.gap = src, dst, count, gap
        self.sport, self.dport, self.dummy_every = sport, dport, dummy_every
        self.sent = 0
        self.next_time: float | None = None
        self.notes: list[tuple[float, Notification]] = []
        self.acks: list[tuple[float, int]] = []

    def handle(self, seg: Segment, now: float) -> None:
        self.acks.append((now, seg.ack))

    def poll(self, now: float) -> list[Segment]:
        if self.next_time is None:
            self.next_time = now
        out = []
        while self.sent < self.count and self.next_time <= now:
            dummy = bool(self.dummy_every) and self.sent % self.dummy_every == self.dummy_every - 1
            out.append(Segment(self.src, self.dst, self.sport, self.dport, self.sent * PAYLOAD, 0, ACK,
                               65535, b"x" * PAYLOAD, dscp=DSCP_LE if dummy else 0, dummy=dummy))
            self.sent += 1
            self.next_time += self.gap
        return out

    def next_wakeup(self) -> float | None:
        return self.next_time if self.sent < self.count else None

    def notify(self, note: Notification, now: float) -> None:
        self.notes.append((now, note))


class Sink:
    """Records every arrival; with `ack`, answers each by acknowledging up to its end
    (a fake: holes are not waited for, so delivery counts every arrival)."""

    def __init__(self, addr: str = "", ack: bool = False) -> None:
        self.addr, self.ack = addr, ack
        self.rows: list[tuple[float, int, bool]] = []
        self.expected = 0
        self.out: list[Segment] = []
        self.notes: list[tuple[float, Notification]] = []

    def handle(self, seg: Segment, now: float) -> None:
        self.rows.append((now, seg.seq, seg.dummy))
        if seg.dummy:
            return
        self.expected = max(self.expected, seg.seq + len(seg.payload))
        if self.ack:
            self.out.append(Segment(self.addr, seg.src, seg.dport, seg.sport, 0, self.expected, ACK, 65535))

    def poll(self, now: float) -> list[Segment]:
        out, self.out = self.out, []
        return out

    def next_wakeup(self) -> float | None:
        return None

    def notify(self, note: Notification, now: float) -> None:
        self.notes.append((now, note))


def wired(seed: int = 0, rate: float = 1e6, delay: float = 0.010, loss: float = 0.0,
          queue: Queue | None = None) -> tuple[Network, object, object, object]:
    """a — r —(rate, delay, loss, queue)— b."""
    net = Network(seed=seed)
    a, b = net.host("a", "10.0.0.1"), net.host("b", "10.0.0.2")
    r = net.router("r")
    net.link(a, r, None, 0.0)
    bottleneck, _ = net.link(r, b, rate, delay, loss=loss, queue=queue)
    return net, a, b, bottleneck


def test_rate_and_delay_exact_for_back_to_back_packets() -> None:
    net, a, b, link = wired(rate=1e6, delay=0.010)
    src, sink = Source("10.0.0.1", "10.0.0.2", 50), Sink()
    net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(1.0)
    times = [t for t, _, _ in sink.rows]
    assert wire_size(Segment("a", "b", 1, 2, 0, 0, ACK, 0, b"x" * PAYLOAD)) == 1000
    assert times == pytest.approx([(k + 1) * 0.008 + 0.010 for k in range(50)], abs=1e-12)
    assert [s for _, s, _ in sink.rows] == [k * PAYLOAD for k in range(50)]


def test_queue_limit_drops_the_excess_of_a_burst() -> None:
    net, a, b, link = wired(queue=Queue(10))
    src, sink = Source("10.0.0.1", "10.0.0.2", 30), Sink()
    net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(1.0)
    assert len(sink.rows) == 11                 # one on the wire + 10 waiting
    assert link.drops == {"overflow": 19}


def test_random_loss_rate_honoured() -> None:
    """10 000 packets at loss 0.1: within 0.012 (4 standard deviations)."""
    net, a, b, link = wired(rate=100e6, loss=0.1)
    src, sink = Source("10.0.0.1", "10.0.0.2", 10_000, gap=1e-4), Sink()
    f = net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(2.0)
    lost = 1 - len(sink.rows) / 10_000
    assert lost == pytest.approx(0.1, abs=0.012)
    assert link.drops == {"random": 10_000 - len(sink.rows)}
    assert f.stats.data_drops == {"random": 10_000 - len(sink.rows)}


def test_outage_loses_queue_wire_and_arrivals_then_recovers() -> None:
    rate, delay, gap = 1e6, 0.010, 0.004        # 8 ms per packet, offered every 4 ms: a queue builds
    net, a, b, link = wired(rate=rate, delay=delay)
    link.schedule_outage(1.0, 1.5)
    src, sink = Source("10.0.0.1", "10.0.0.2", 500, gap=gap), Sink()
    net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(3.0)
    arrivals = [t for t, _, _ in sink.rows]
    # nothing that was queued, on the wire or offered in [1.0, 1.5) arrives
    assert not [t for t in arrivals if 1.0 < t < 1.5 + 0.008 + delay - 1e-9]
    assert max(t for t in arrivals if t <= 1.0) > 1.0 - 0.008
    first_after = min(t for t in arrivals if t > 1.0)
    assert first_after == pytest.approx(1.5 + 0.008 + delay, abs=1e-9)
    offered_during = sum(1 for k in range(500) if 1.0 <= k * gap < 1.5)
    assert link.drops["outage"] >= offered_during
    assert sum(link.drops.values()) + len(sink.rows) == 500


def run_trace(tmp_path: Path, seed: int, name: str) -> bytes:
    net, a, b, link = wired(seed=seed, rate=2e6, loss=0.05, queue=Queue(20))
    src, sink = Source("10.0.0.1", "10.0.0.2", 400, gap=0.003), Sink()
    net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(5.0)
    path = tmp_path / name
    with TraceWriter(path) as w:
        for t, seq, dummy in sink.rows:
            w.write({"t": t, "seq": seq, "dummy": dummy})
    return path.read_bytes()


def test_same_seed_gives_byte_identical_trace_and_another_seed_does_not(tmp_path: Path) -> None:
    one = run_trace(tmp_path, 11, "one.jsonl")
    two = run_trace(tmp_path, 11, "two.jsonl")
    other = run_trace(tmp_path, 12, "three.jsonl")
    assert one == two
    assert one != other
    assert len(one.splitlines()) > 300


def test_dummies_never_delay_or_displace_data_on_a_link() -> None:
    """Every 2nd segment a dummy, offered faster than the link: only dummies are lost."""
    net, a, b, link = wired(rate=1e6, queue=Queue(20, dummy_threshold=10))
    src, sink = Source("10.0.0.1", "10.0.0.2", 400, gap=0.004, dummy_every=2), Sink()
    f = net.flow("f", a, src, b, sink, 4000, 5000)
    net.run(5.0)
    data = [s for _, s, d in sink.rows if not d]
    assert len(data) == 200 and f.stats.data_losses == 0
    assert sum(f.stats.dummy_drops.values()) > 50
    assert set(link.drops) <= {"dummy", "dummy_pushout"}


# -- mobility ------------------------------------------------------------------

def handoff_net(seed: int = 0, ipf: bool = False, down_queue: Queue | None = None,
                g3_rate: float = 384e3, g3_delay: float = 0.070, route_delay: float = 0.0,
                gw_bs1_delay: float = 0.004) -> tuple:
    """ch — gw —(10 Mb/s)— bs1 / bs2 (linked 1 ms) — cells wlan (20 Mb/s, 1 ms) and g3 (384 kb/s, 70 ms)."""
    net = Network(seed=seed)
    ch = net.host("ch", "10.0.0.1")
    gw = net.router("gw")
    bs1 = net.base_station("bs1", ipf=ipf, ipf_limit=400, route_delay=route_delay)
    bs2 = net.base_station("bs2", ipf=ipf, ipf_limit=400)
    net.link(ch, gw, 100e6, 0.001)
    net.link(gw, bs1, 10e6, gw_bs1_delay, queue=Queue(100))
    net.link(gw, bs2, 10e6, 0.004, queue=Queue(100))
    net.link(bs1, bs2, 10e6, 0.001)
    wlan = net.cell("wlan", bs1, 20e6, 0.001, queue=Queue(100))
    g3 = net.cell("g3", bs2, g3_rate, g3_delay, queue=down_queue or Queue(100))
    mh = net.mobile_host("mh", "10.0.9.1", {"wlan": "10.0.1.9", "g3": "10.0.2.9"})
    net.start_in(mh, "wlan", wlan)
    return net, ch, mh, wlan, g3


def test_vertical_handoff_switches_route_and_notifies_at_the_right_times() -> None:
    net, ch, mh, wlan, g3 = handoff_net()
    net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.5)
    src = Source("10.0.0.1", "10.0.9.1", 10_000, gap=0.025)  # 320 kb/s: fits either cell
    sink = Sink("10.0.9.1", ack=True)
    f = net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(4.0)
    arrivals = [t for t, _, _ in sink.rows]
    assert not [t for t in arrivals if 1.0 < t < 1.5]
    assert min(t for t in arrivals if t > 1.5) < 1.5 + 0.025 + 0.1
    # delay on WLAN ≈ 1 + 4 + 1 ms + serialisation; on 3G ≈ 1 + 4 + 70 ms + 20.8 ms serialisation
    assert [e for _, e in [(0, n.event) for _, n in src.notes]] == [Event.DETACH, Event.HANDOFF]
    (t_detach, detach), (t_handoff, handoff) = src.notes
    assert (t_detach, t_handoff) == (1.0, 1.5)
    assert handoff.new_cell == g3.id and handoff.old_cell == wlan.id and handoff.new_link_kbps == 384
    assert handoff.path_addr == "10.0.9.1"
    assert sink.notes == src.notes                                 # both ends hear every event
    assert f.stats.data_drops.get("no_receiver", 0) > 0
    late = f.stats.throughput_bps(2.0, 4.0)
    assert late == pytest.approx(PAYLOAD * 8 / 0.025, rel=0.05)
    ideal = ideal_bps(net.path_intervals(mh, ch), 0.0, 4.0)
    assert ideal == pytest.approx((1.0 * 10e6 + 2.5 * 384e3) / 4.0)


def test_detach_warning_reaches_both_ends_before_the_link_goes() -> None:
    net, ch, mh, wlan, g3 = handoff_net()
    net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.2, warn=0.1)
    src, sink = Source("10.0.0.1", "10.0.9.1", 1), Sink()
    net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(2.0)
    assert [(t, n.event) for t, n in src.notes] == [(0.9, Event.DETACH), (1.2, Event.HANDOFF)]
    assert [(t, n.event) for t, n in sink.notes] == [(0.9, Event.DETACH), (1.2, Event.HANDOFF)]
    with pytest.raises(ValueError, match="past"):
        net.detach(mh, "g3", at=2.05, warn=0.1)


def test_notify_delay_postpones_notifications() -> None:
    net, ch, mh, wlan, g3 = handoff_net()
    net.notify_delay = 0.03
    net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.2)
    src = Source("10.0.0.1", "10.0.9.1", 1)
    net.flow("f", ch, src, mh, Sink(), 4000, 5000)
    net.run(2.0)
    assert [t for t, _ in src.notes] == pytest.approx([1.03, 1.23])


def test_overlap_probes_the_new_cell_through_the_care_of_address() -> None:
    net, ch, mh, wlan, g3 = handoff_net()
    net.overlap(mh, "wlan", "g3", g3, enter=1.0, handoff=2.0, leave=3.0)
    src = Source("10.0.0.1", "10.0.9.1", 1)
    probe = Source("10.0.0.1", "10.0.2.9", 40, gap=0.05, sport=4001, dport=5001)
    probe_sink = Sink()
    net.flow("f", ch, src, mh, Sink(), 4000, 5000)
    net.flow("p", ch, probe, mh, probe_sink, 4001, 5001, start=1.0)
    net.run(4.0)
    assert [(t, n.event) for t, n in src.notes] == [(1.0, Event.PROBE_UP), (2.0, Event.HANDOFF)]
    assert src.notes[0][1].path_addr == "10.0.2.9"
    assert len(probe_sink.rows) == 40        # the care-of address is reachable throughout
    assert net.timeline[-1] == (3.0, "detach mh.wlan wlan")


def test_ipf_forwards_buffered_packets_in_order_marked_priority() -> None:
    """2 Mb/s into a 20 Mb/s cell, 0.3 s outage, then a second 20 Mb/s cell behind M-RED."""
    results = {}
    for ipf in (False, True):
        net, ch, mh, wlan, g3 = handoff_net(ipf=ipf, down_queue=MRED(300, 100, 200, 0.02, 0.002),
                                            g3_rate=20e6, g3_delay=0.001)
        net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.3)
        src = Source("10.0.0.1", "10.0.9.1", 500, gap=0.004)
        sink = Sink("10.0.9.1")
        f = net.flow("f", ch, src, mh, sink, 4000, 5000)
        net.run(2.5)
        results[ipf] = ([s for _, s, _ in sink.rows], net.nodes["bs1"], g3.downlink, f.stats)
    plain, _, _, plain_stats = results[False]
    seqs, bs1, down, stats = results[True]
    assert plain_stats.data_losses > 70                  # the outage's 75 packets die at the old cell
    assert stats.data_losses == 0 and len(seqs) == 500   # IPF keeps and delivers every one of them
    # what went through the old BS (reached the gateway before the route switch at 1.3 s)
    # stays in order; later packets take the direct path and may overtake the flush (as in the lab)
    via_old = [s for s in seqs if s < 324 * PAYLOAD]
    assert via_old == sorted(via_old) and len(via_old) == 324
    assert bs1.forwarded >= 75
    assert down.drops == {}


def test_ipf_base_station_tells_the_senders_what_it_forwards() -> None:
    """Issue 20: the HANDOFF of an IPF base station carries the forwarding signal (what it holds,
    when its flush ends); a station with `signal=False` sends revision-1 notifications."""
    notes = {}
    for signal in (True, False):
        net = Network(seed=0)
        ch, gw = net.host("ch", "10.0.0.1"), net.router("gw")
        bs1 = net.base_station("bs1", ipf=True, ipf_limit=400, forward_delay=0.02, signal=signal)
        bs2 = net.base_station("bs2", ipf=True, ipf_limit=400)
        net.link(ch, gw, 100e6, 0.001)
        net.link(gw, bs1, 10e6, 0.004, queue=Queue(100))
        net.link(gw, bs2, 10e6, 0.004, queue=Queue(100))
        net.link(bs1, bs2, 10e6, 0.001)
        wlan = net.cell("wlan", bs1, 20e6, 0.001, queue=Queue(100))
        g3 = net.cell("g3", bs2, 20e6, 0.001, queue=Queue(100))
        mh = net.mobile_host("mh", "10.0.9.1", {"wlan": "10.0.1.9", "g3": "10.0.2.9"})
        net.start_in(mh, "wlan", wlan)
        net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.3)
        src = Source("10.0.0.1", "10.0.9.1", 500, gap=0.004)
        net.flow("f", ch, src, mh, Sink("10.0.9.1"), 4000, 5000)
        net.run(2.5)
        notes[signal] = [n for _, n in src.notes]
        forwarded = bs1.forwarded
    detach, handoff = notes[True]
    assert detach.forwarding is None
    fwd = handoff.forwarding
    assert isinstance(fwd, Forwarding) and fwd.flush_end_us == 20_000    # forward_delay after the handoff
    assert 70 <= fwd.buffered <= 80                      # 0.3 s of 4 ms arrivals, held at the notification
    assert fwd.buffered <= forwarded <= fwd.buffered + 5  # + what arrived before the flush 20 ms later
    assert [n.forwarding for n in notes[False]] == [None, None]


def test_an_ipf_base_station_holding_nothing_yet_still_signals_what_it_forwards() -> None:
    """The MH's packets may all be on their way to the old BS when the HANDOFF leaves (a window-limited
    flow's train): it still carries the signal (buffered 0), and what arrives later is forwarded, not lost.
    Without it a flag-aware sender would resend that flight (issue 20)."""
    # 100 ms from gw to bs1: a packet sent at 1.22 s reaches bs1 after the handoff
    net, ch, mh, wlan, g3 = handoff_net(ipf=True, g3_rate=20e6, g3_delay=0.001, gw_bs1_delay=0.1)
    bs1 = net.nodes["bs1"]
    net.vertical_handoff(mh, "wlan", "g3", g3, at=1.02, outage=0.3)       # out 1.02-1.32 s
    src, sink = Source("10.0.0.1", "10.0.9.1", 4, gap=0.61), Sink("10.0.9.1")   # 0, 0.61, 1.22, 1.83 s
    net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(3.0)
    [handoff] = [n for _, n in src.notes if n.event is Event.HANDOFF]
    assert handoff.forwarding == Forwarding(0, 0)
    assert bs1.forwarded == 1 and len(sink.rows) == 4


def test_a_route_delay_keeps_the_old_path_while_the_old_bs_forwards_priority_marked() -> None:
    """`route_delay` (the lab controller's ordered handoff): the gateway keeps sending to the BS the MH left for
    the delay after the handoff, that BS forwards what reaches it priority-marked; nothing is lost."""
    runs = {}
    for delay in (0.0, 0.2):
        net, ch, mh, wlan, g3 = handoff_net(ipf=True, g3_rate=20e6, g3_delay=0.001, route_delay=delay)
        gw, bs1 = net.nodes["gw"], net.nodes["bs1"]
        net.vertical_handoff(mh, "wlan", "g3", g3, at=1.0, outage=0.3)      # the handoff at 1.3 s
        src, sink = Source("10.0.0.1", "10.0.9.1", 500, gap=0.004), Sink("10.0.9.1")
        f = net.flow("f", ch, src, mh, sink, 4000, 5000)
        routes = []
        for t in (1.29, 1.31, 1.49, 1.51):
            net.run(t)
            routes.append(gw.routes["10.0.9.1"].name)
        net.run(2.5)
        handoffs = [(t, n.forwarding) for t, n in net.notifications if n.event is Event.HANDOFF]
        runs[delay] = (routes, bs1.forwarded, f.stats.data_losses, len(sink.rows), handoffs)
    routes, forwarded, losses, delivered, handoffs = runs[0.2]
    assert routes == ["gw->bs1", "gw->bs1", "gw->bs1", "gw->bs2"]    # the gateway follows 0.2 s after the handoff
    assert runs[0.0][0] == ["gw->bs1", "gw->bs2", "gw->bs2", "gw->bs2"]    # without the delay, at the handoff
    # the HANDOFF leaves once the path is active, with the routes: the flush is then over (flush_end 0)
    [(t0, fwd0)] = runs[0.0][4]
    [(t, fwd)] = handoffs
    assert t0 == pytest.approx(1.3) and t == pytest.approx(1.5)
    assert fwd0 is not None and fwd is not None and fwd.buffered == fwd0.buffered > 0 and fwd.flush_end_us == 0
    assert losses == 0 and delivered == 500
    # the outage's ~75 packets either way, then the delay's 4 ms arrivals (~50) through the old BS as well
    assert 40 <= forwarded - runs[0.0][1] <= 55


def visits_net(route_delay: float = 0.0) -> tuple:
    """ch — gw —(10 Mb/s)— bs1 / bs2 (IPF, linked) — cells c1, c2 (2 Mb/s, M-RED); one radio, in c1."""
    net = Network()
    ch, gw = net.host("ch", "10.0.0.1"), net.router("gw")
    bs1 = net.base_station("bs1", ipf=True, route_delay=route_delay)
    bs2 = net.base_station("bs2", ipf=True, route_delay=route_delay)
    net.link(ch, gw, 100e6, 0.001)
    net.link(gw, bs1, 10e6, 0.001)
    net.link(gw, bs2, 10e6, 0.001)
    net.link(bs1, bs2, 10e6, 0.001)
    c1 = net.cell("c1", bs1, 2e6, 0.003, queue=MRED(300, 100, 200, 0.02, 0.002))
    c2 = net.cell("c2", bs2, 2e6, 0.003, queue=MRED(300, 100, 200, 0.02, 0.002))
    mh = net.mobile_host("mh", "10.0.9.1", {"radio": "10.0.1.9"})
    net.start_in(mh, "radio", c1)
    return net, ch, mh, c1, c2


def test_a_delayed_route_does_not_undo_a_later_handoff() -> None:
    """Back to the first cell before the delayed routes of the move away fall due: they are not applied."""
    net, ch, mh, c1, c2 = visits_net(route_delay=0.3)
    gw, bs1 = net.nodes["gw"], net.nodes["bs1"]
    net.vertical_handoff(mh, "radio", "radio", c2, at=1.0, outage=0.05)    # to c2 at 1.05; routes due at 1.35
    net.vertical_handoff(mh, "radio", "radio", c1, at=1.1, outage=0.05)    # back to c1 at 1.15
    src, sink = Source("10.0.0.1", "10.0.9.1", 500, gap=0.004), Sink()
    f = net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(1.4)
    assert gw.routes["10.0.9.1"].name == "gw->bs1" and bs1.routes["10.0.9.1"] is c1.downlink
    net.run(3.0)
    assert f.stats.data_losses == 0 and len(sink.rows) == 500
    assert gw.routes["10.0.9.1"].name == "gw->bs1"
    # the HANDOFF of the move away was due with its routes (1.35): not sent; the move back's at 1.45
    assert [(round(t, 6), n.new_cell) for t, n in net.notifications if n.event is Event.HANDOFF] == [(1.45, c1.id)]


def test_a_negative_route_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="bs1: route_delay must not be negative"):
        Network().base_station("bs1", route_delay=-0.1)


def test_ipf_forwards_what_fails_on_the_air_after_a_break_free_flush() -> None:
    """Detach and handoff at one instant (an overlap's single binding) over a 28 ms old cell: the
    flush goes at once, and packets still on the air then are forwarded after it, not lost."""
    net = Network(seed=0)
    ch, gw = net.host("ch", "10.0.0.1"), net.router("gw")
    bs1, bs2 = net.base_station("bs1", ipf=True), net.base_station("bs2")
    net.link(ch, gw, 100e6, 0.001)
    net.link(gw, bs1, 100e6, 0.001)
    net.link(gw, bs2, 100e6, 0.001)
    old = net.cell("old", bs1, 6e6, 0.028, queue=Queue(50))
    new = net.cell("new", bs2, 11e6, 0.028, queue=Queue(50))
    mh = net.mobile_host("mh", "10.0.9.1", {"old": "10.0.1.9", "new": "10.0.2.9"})
    net.start_in(mh, "old", old)
    net.attach(mh, "new", new, at=0.5)
    net.detach(mh, "old", at=1.0, notify=False)
    net.handoff(mh, "new", at=1.0)
    src = Source("10.0.0.1", "10.0.9.1", 1000, gap=0.0015)   # ~5.5 Mb/s: ~19 packets on the 28 ms air
    sink = Sink("10.0.9.1")
    f = net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(2.5)
    assert f.stats.data_losses == 0 and len(sink.rows) == 1000
    assert bs1.forwarded >= 15


@pytest.mark.parametrize("signal", [True, False])
def test_bwaware_over_ipf_resends_forwarded_segments_only_without_the_signal(signal: bool) -> None:
    """Issue 20 end to end: real TCP (Bandwidth-Aware) through an IPF handoff between two 20 Mb/s
    cells. Without the signal the restart sends copies of the flushed flight (counted by the flow's
    forwarded_resent); with it, none, and nothing is lost for good."""
    net = Network(seed=0)
    ch, gw = net.host("ch", "10.0.0.1"), net.router("gw")
    bs1 = net.base_station("bs1", ipf=True, ipf_limit=400, signal=signal)
    bs2 = net.base_station("bs2", ipf=True, ipf_limit=400)
    net.link(ch, gw, 100e6, 0.01)
    net.link(gw, bs1, 10e6, 0.004, queue=Queue(1000))
    net.link(gw, bs2, 10e6, 0.004, queue=Queue(1000))
    net.link(bs1, bs2, 10e6, 0.001)
    wlan = net.cell("wlan", bs1, 20e6, 0.001, queue=Queue(100))
    g3 = net.cell("g3", bs2, 20e6, 0.001, queue=Queue(100))
    mh = net.mobile_host("mh", "10.0.9.1", {"wlan": "10.0.1.9", "g3": "10.0.2.9"})
    net.start_in(mh, "wlan", wlan)
    net.vertical_handoff(mh, "wlan", "g3", g3, at=2.0, outage=0.05)
    flow = tcp_flow(net, "f", ch, mh, "bwaware", config=TcpConfig(mss=1000, window_segments=64, min_rto=1.0))
    net.run(4.0)
    [(_, handoff)] = [(t, n) for t, n in net.notifications if n.event is Event.HANDOFF]
    assert (handoff.forwarding is not None) == signal
    assert bs1.forwarded > 20                           # a window's worth was held and flushed
    resent = flow.stats.forwarded_resent_times()
    if signal:
        assert resent == []
    else:
        assert len(resent) > 20 and min(resent) >= 2.05
    assert flow.stats.delivered(4.0) > flow.stats.delivered(2.5) > flow.stats.delivered(2.0)


def test_bad_topology_and_timeline_are_refused_clearly() -> None:
    net = Network()
    a = net.host("a", "10.0.0.1")
    with pytest.raises(ValueError, match="already used"):
        net.host("b", "10.0.0.1")
    with pytest.raises(ValueError, match="already used"):
        net.router("a")
    r = net.router("r")
    with pytest.raises(ValueError, match="rate"):
        net.link(a, r, -1, 0.0)
    net2, ch, mh, wlan, g3 = handoff_net()
    with pytest.raises(ValueError, match="interface"):
        net2.detach(mh, "wifi", at=1.0)
    net2.handoff(mh, "g3", at=1.0)                # g3 is never attached
    with pytest.raises(ValueError, match="not attached"):
        net2.run(2.0)


def test_single_interface_visits_with_ipf_back_and_forth() -> None:
    """IPF's visit pattern: one radio moves bs1 → bs2 → bs1; each move flushes the old BS."""
    net, ch, mh, c1, c2 = visits_net()
    bs1, bs2 = net.nodes["bs1"], net.nodes["bs2"]
    net.vertical_handoff(mh, "radio", "radio", c2, at=1.0, outage=0.05)
    net.vertical_handoff(mh, "radio", "radio", c1, at=2.0, outage=0.05)
    src, sink = Source("10.0.0.1", "10.0.9.1", 750, gap=0.004), Sink()
    f = net.flow("f", ch, src, mh, sink, 4000, 5000)
    net.run(3.5)
    assert f.stats.data_losses == 0 and len(sink.rows) == 750
    assert bs1.forwarded > 0 and bs2.forwarded > 0
    assert [w for _, w in net.timeline if w.startswith("handoff")] == [
        "handoff mh.radio c1", "handoff mh.radio c2", "handoff mh.radio c1"]


def test_queue_sampler_records_queue_and_average(tmp_path: Path) -> None:
    red_q = MRED(100, 5, 15, 0.1, 0.2)
    net, a, b, link = wired(rate=1e6, queue=red_q)
    sampler = QueueSampler(net.sim, [link], interval=0.01)
    src = Source("10.0.0.1", "10.0.0.2", 300, gap=0.004)     # twice the link's rate for 1.2 s
    net.flow("f", a, src, b, Sink(), 4000, 5000)
    net.run(2.0)
    rows = [r for r in sampler.rows if r[1] == link.name]
    assert len(rows) == 201 and rows[0][0] == 0.0
    assert max(r[2] for r in rows) >= 10 and rows[-1][2] == 0
    assert 10 < sampler.max_avg(link) < 15 + 1       # held between the thresholds by early drops
    assert link.drops.get("early", 0) + link.drops.get("forced", 0) > 0
    sampler.write_csv(tmp_path / "q.csv")
    lines = (tmp_path / "q.csv").read_text().splitlines()
    assert lines[0] == "t,link,queue,data,dummy,avg" and len(lines) == len(sampler.rows) + 1
