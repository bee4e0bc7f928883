"""Two of our endpoints against each other, and our receiver against hand-made segments."""
from __future__ import annotations

import random

import pytest

from p4handoff.hosts.segment import ACK, FIN, RST, SYN, Segment
from p4handoff.hosts.tcp import State, TcpConfig, TcpConnection, TcpError, rst_for
from tests.tcp_loop import Loop

A, B = "10.0.0.1", "10.0.1.1"


def _pair(cfg_a: TcpConfig, cfg_b: TcpConfig | None = None, **loop_kw: object
          ) -> tuple[TcpConnection, TcpConnection, bytearray, Loop]:
    got = bytearray()
    a = TcpConnection(cfg_a, A, 40000, name="a")
    b = TcpConnection(cfg_b or cfg_a, B, 5001, on_data=got.extend, name="b")
    b.listen()
    loop = Loop(**loop_kw)  # type: ignore[arg-type]
    loop.bind(A, a)
    loop.bind(B, b)
    return a, b, got, loop


def _run_to_close(a: TcpConnection, b: TcpConnection, loop: Loop, until: float = 300.0) -> float:
    def done() -> bool:
        if b.eof and b.state is State.CLOSE_WAIT:
            b.close()
        return a.closed and b.closed
    return loop.run(until, stop=done)


def _data(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.mark.parametrize("timestamps", [True, False])
@pytest.mark.parametrize("delayed_ack", [False, True])
@pytest.mark.parametrize("loss", [0.0, 0.03])
def test_bulk_transfer_bytes_identical(timestamps: bool, delayed_ack: bool, loss: float) -> None:
    cfg = TcpConfig(mss=1000, min_rto=0.2, timestamps=timestamps, delayed_ack=delayed_ack, window_segments=32)
    rng = random.Random(11)
    a, b, got, loop = _pair(cfg, delay=0.005, rate=2.5e6, buffer=25,
                            drop=lambda s, t: rng.random() < loss and t > 0)
    data = _data(400_000)
    a.connect(B, 5001)
    a.send(data)
    a.close()
    _run_to_close(a, b, loop)
    assert bytes(got) == data
    assert a.closed and b.closed and a.error is None and b.error is None
    assert a.bytes_acked == len(data)
    if loss:
        assert a.retransmits > 0


def test_source_api_streams_and_closes() -> None:
    cfg = TcpConfig(mss=1000, min_rto=0.2)
    a, b, got, loop = _pair(cfg, delay=0.002, rate=5e6, buffer=30)
    data = _data(1_000_000, seed=5)
    pos = 0

    def source(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos:pos + n]
        pos += len(chunk)
        return chunk

    a.connect(B, 5001)
    a.set_source(source)
    _run_to_close(a, b, loop)
    assert bytes(got) == data and a.closed and b.closed


def test_options_negotiated() -> None:
    cfg = TcpConfig(mss=1000, window_segments=100)
    a, b, _, loop = _pair(cfg, TcpConfig(mss=1000, mtu=1040, window_segments=100, sack=False))
    a.connect(B, 5001)
    loop.run(1.0, stop=lambda: a.established and b.established)
    syn = loop.sent[0][1]
    assert syn.flags == SYN and syn.mss == 1460 and syn.wscale == 1 and syn.sack_permitted and syn.ts is not None
    synack = loop.sent[1][1]
    assert synack.flags == SYN | ACK and synack.wscale == 1 and not synack.sack_permitted
    assert synack.ts is not None and synack.ts[1] == syn.ts[0] and synack.mss == 1000
    assert a.mss == 1000 - 12  # peer's MSS option minus the timestamp option (RFC 6691)
    assert b.mss == 1000  # our own segment size, below what the peer can take
    assert a.timestamps_enabled and b.timestamps_enabled
    a.send(b"x" * 5000)
    loop.run(loop.now + 1.0)
    data_seg = next(s for _, s in loop.sent if s.payload)
    assert data_seg.window == (100 * 1000) >> 1  # scaled window field


def test_no_window_scaling_caps_window() -> None:
    a, b, _, loop = _pair(TcpConfig(mss=1000, window_segments=100, window_scaling=False))
    a.connect(B, 5001)
    loop.run(1.0, stop=lambda: a.established and b.established)
    assert all(s.wscale is None for _, s in loop.sent)
    assert loop.sent[-1][1].window == 0xFFFF


def test_syn_lost_is_retransmitted_and_rto_becomes_3s() -> None:
    dropped_first = []

    def drop(seg: Segment, t: float) -> bool:
        if seg.flags & SYN and not dropped_first:
            dropped_first.append(t)
            return True
        return False

    a, b, _, loop = _pair(TcpConfig(timestamps=False), drop=drop)
    a.connect(B, 5001)
    loop.run(10.0, stop=lambda: a.established)
    assert a.established and loop.now == pytest.approx(1.0 + 0.02)
    assert a.rto == pytest.approx(3.0)  # RFC 6298 5.7


def test_connect_refused_by_rst() -> None:
    a = TcpConnection(TcpConfig(), A, 40000)
    a.connect(B, 5001)
    syn = a.poll(0.0)[0]
    rst = rst_for(syn)
    assert rst is not None and rst.flags == RST | ACK and rst.ack == (syn.seq + 1) & 0xFFFFFFFF
    a.handle(rst, 0.01)
    assert a.closed and "refused" in (a.error or "")


def test_closed_endpoint_answers_rst_listener_rejects_ack() -> None:
    c = TcpConnection(TcpConfig(), B, 5001)
    c.handle(Segment(A, B, 1, 5001, 100, 200, ACK, 10, b"x"), 0.0)
    out = c.poll(0.0)
    assert len(out) == 1 and out[0].flags == RST and out[0].seq == 200
    c.listen()
    c.handle(Segment(A, B, 1, 5001, 100, 200, ACK, 10), 0.0)
    assert c.poll(0.0)[0].flags == RST
    c.handle(Segment(A, B, 1, 5001, 100, 200, RST, 10), 0.0)
    assert c.poll(0.0) == [] and c.state is State.LISTEN


def test_app_errors() -> None:
    c = TcpConnection(TcpConfig(), A, 1)
    with pytest.raises(TcpError):
        c.send(b"x")
    c.connect(B, 2)
    c.send(b"x")
    c.close()
    with pytest.raises(TcpError):
        c.send(b"y")
    with pytest.raises(TcpError):
        c.connect(B, 3)
    with pytest.raises(ValueError):
        TcpConfig(mss=2000)
    with pytest.raises(ValueError):
        TcpConnection(TcpConfig(), A, 1, cc="no-such-scheme")


class _Opener:
    """Hand-played active opener against our listening receiver."""

    def __init__(self, rcv_cfg: TcpConfig, ts: bool = False, sack: bool = False) -> None:
        self.rcv = TcpConnection(rcv_cfg, B, 5001)
        self.rcv.listen()
        self.isn = 1000
        self.ts = ts
        self.rcv.handle(Segment(A, B, 40000, 5001, self.isn, 0, SYN, 65535, mss=1000,
                                sack_permitted=sack, ts=(50, 0) if ts else None), 0.0)
        synack = self.rcv.poll(0.0)[0]
        self.riss = synack.seq
        self.rcv.handle(self.seg(0, ACK), 0.01)
        assert self.rcv.established

    def seg(self, off: int, flags: int = ACK, payload: bytes = b"", ts: tuple[int, int] | None = None,
            ack_off: int = 0) -> Segment:
        return Segment(A, B, 40000, 5001, (self.isn + 1 + off) & 0xFFFFFFFF, (self.riss + 1 + ack_off) & 0xFFFFFFFF,
                       flags, 65535, payload, ts=ts)

    def send(self, off: int, payload: bytes, now: float, ts: tuple[int, int] | None = None) -> list[Segment]:
        self.rcv.handle(self.seg(off, ACK, payload, ts), now)
        return self.rcv.poll(now)

    def acks(self, segs: list[Segment]) -> list[int]:
        return [(s.ack - self.isn - 1) & 0xFFFFFFFF for s in segs]


def test_out_of_order_reassembly_dupacks_and_sack() -> None:
    op = _Opener(TcpConfig(mss=100, sack=True, timestamps=False), sack=True)
    chunks = [bytes([i]) * 100 for i in range(6)]
    assert op.acks(op.send(0, chunks[0], 0.1)) == [100]
    out = op.send(200, chunks[2], 0.11)  # hole at 100
    assert op.acks(out) == [100]  # immediate duplicate ACK
    assert out[0].sack == ((op.isn + 201, op.isn + 301),)
    out = op.send(400, chunks[4], 0.12)
    assert op.acks(out) == [100]
    assert len(out[0].sack) == 2 and out[0].sack[0] == (op.isn + 401, op.isn + 501)  # newest first
    out = op.send(300, chunks[3] + chunks[4][:20], 0.13)  # overlaps the block at 400
    assert op.acks(out) == [100] and out[0].sack == ((op.isn + 201, op.isn + 501),)  # merged
    out = op.send(100, chunks[1], 0.14)  # fills the hole: cumulative ACK jumps over 2, 3, 4
    assert op.acks(out) == [500] and not out[0].sack
    assert op.rcv.read() == b"".join(chunks[:5])
    out = op.send(0, chunks[0], 0.15)  # old duplicate: ACKed, not delivered again
    assert op.acks(out) == [500] and op.rcv.read() == b""


def test_delayed_ack_every_second_segment_and_timer() -> None:
    op = _Opener(TcpConfig(mss=100, delayed_ack=True, delack_timeout=0.2, timestamps=False))
    assert op.send(0, b"a" * 100, 1.0) == []
    assert op.rcv.next_wakeup() == pytest.approx(1.2)
    assert op.acks(op.send(100, b"b" * 100, 1.05)) == [200]  # second full segment: ACK now
    assert op.rcv.next_wakeup() is None
    assert op.send(200, b"c" * 100, 1.1) == []
    assert op.acks(op.rcv.poll(1.3)) == [300]  # delayed-ACK timer


def test_timestamps_echo_ts_recent() -> None:
    op = _Opener(TcpConfig(mss=100, timestamps=True), ts=True)
    out = op.send(0, b"a" * 100, 0.1, ts=(60, 0))
    assert out[0].ts is not None and out[0].ts[1] == 60
    out = op.send(200, b"c" * 100, 0.2, ts=(70, 0))  # out of order: TS.Recent not updated
    assert out[0].ts[1] == 60
    out = op.send(100, b"b" * 100, 0.3, ts=(80, 0))
    assert out[0].ts[1] == 80


def test_fin_out_of_order_waits_for_data() -> None:
    op = _Opener(TcpConfig(mss=100, timestamps=False))
    out = op.rcv.handle(op.seg(100, ACK | FIN, b"b" * 50), 0.1) or op.rcv.poll(0.1)
    assert op.acks(out) == [0] and not op.rcv.eof
    out = op.send(0, b"a" * 100, 0.2)
    assert op.acks(out) == [151] and op.rcv.eof and op.rcv.state is State.CLOSE_WAIT
    assert op.rcv.read() == b"a" * 100 + b"b" * 50


def test_receive_window_shrinks_with_unread_data() -> None:
    op = _Opener(TcpConfig(mss=100, window_segments=4, timestamps=False, window_scaling=False))
    out = op.send(0, b"a" * 100, 0.1)
    assert out[0].window == 300
    out = op.send(100, b"b" * 300, 0.2)
    assert out[0].window == 0
    out = op.send(400, b"c" * 10, 0.3)  # beyond a zero window: dropped, ACKed
    assert op.acks(out) == [400] and out[0].window == 0
    assert op.rcv.read(150) == b"a" * 100 + b"b" * 50
    out = op.rcv.poll(0.4)  # window update once it reopens by >= min(buffer/2, MSS)
    assert op.acks(out) == [400] and out[0].window == 150


# ---------------------------------------------------------------- RFC 5961
def test_rst_exact_sequence_resets() -> None:
    op = _Opener(TcpConfig(timestamps=False))
    op.rcv.handle(op.seg(0, RST), 0.1)
    assert op.rcv.closed and op.rcv.error == "connection reset by peer"


def test_rst_in_window_not_exact_gets_challenge_ack() -> None:
    op = _Opener(TcpConfig(timestamps=False))
    op.rcv.handle(op.seg(500, RST), 0.1)
    out = op.rcv.poll(0.1)
    assert op.rcv.established and len(out) == 1 and out[0].flags == ACK and op.acks(out) == [0]
    assert op.rcv.challenge_acks == 1


def test_rst_out_of_window_ignored() -> None:
    op = _Opener(TcpConfig(timestamps=False))
    op.rcv.handle(op.seg(10_000_000, RST), 0.1)
    assert op.rcv.established and op.rcv.poll(0.1) == []


def test_syn_in_established_gets_challenge_ack() -> None:
    op = _Opener(TcpConfig(timestamps=False))
    op.rcv.handle(Segment(A, B, 40000, 5001, 999_999, 0, SYN, 1000), 0.1)
    out = op.rcv.poll(0.1)
    assert op.rcv.established and [s.flags for s in out] == [ACK] and op.acks(out) == [0]


def test_data_with_unacceptable_ack_is_dropped_with_challenge_ack() -> None:
    op = _Opener(TcpConfig(timestamps=False))
    out = op.send(0, b"good", 0.1)
    assert op.acks(out) == [4]
    op.rcv.handle(op.seg(4, ACK, b"evil", ack_off=5_000_000), 0.2)  # ACKs data never sent
    out = op.rcv.poll(0.2)
    assert op.rcv.read() == b"good" and op.acks(out) == [4] and op.rcv.challenge_acks == 1
    op.rcv.handle(op.seg(4, ACK, b"evil", ack_off=-3_000_000), 0.3)  # far below SND.UNA - MAX.SND.WND
    assert op.rcv.read() == b"" and op.rcv.challenge_acks == 2


def test_challenge_acks_rate_limited() -> None:
    op = _Opener(TcpConfig(timestamps=False, challenge_ack_limit=5))
    for i in range(20):
        op.rcv.handle(op.seg(100 + i, RST), 0.5)
    assert len(op.rcv.poll(0.5)) == 5
    op.rcv.handle(op.seg(100, RST), 1.5)
    assert len(op.rcv.poll(1.5)) == 1


def test_syn_received_rst_returns_to_listen() -> None:
    rcv = TcpConnection(TcpConfig(), B, 5001)
    rcv.listen()
    rcv.handle(Segment(A, B, 40000, 5001, 1000, 0, SYN, 65535), 0.0)
    rcv.poll(0.0)
    rcv.handle(Segment(A, B, 40000, 5001, 1001, 0, RST, 0), 0.1)
    assert rcv.state is State.LISTEN


def test_transfer_survives_forged_segments() -> None:
    cfg = TcpConfig(mss=1000, min_rto=0.2)
    a, b, got, loop = _pair(cfg, delay=0.01, rate=2e6, buffer=30)
    data = _data(200_000, seed=9)
    a.connect(B, 5001)
    a.send(data)
    a.close()
    loop.run(0.2)
    for i in range(30):  # blind attacker: RSTs, SYNs and data at guessed sequence numbers
        guess = random.Random(i).getrandbits(32)
        loop.inject(Segment(A, B, 40000, 5001, guess, guess, RST, 0), at=0.2 + i * 0.01)
        loop.inject(Segment(A, B, 40000, 5001, guess, 0, SYN, 1000), at=0.2 + i * 0.01)
        loop.inject(Segment(A, B, 40000, 5001, guess, guess, ACK, 1000, b"junk"), at=0.2 + i * 0.01)
        loop.inject(Segment(B, A, 5001, 40000, guess, guess, RST | ACK, 0), at=0.2 + i * 0.01)
    _run_to_close(a, b, loop)
    assert bytes(got) == data and a.error is None and b.error is None


# ---------------------------------------------------------------- persist
def test_zero_window_persist_probes_back_off_and_transfer_completes() -> None:
    cfg_b = TcpConfig(mss=1000, window_segments=4, timestamps=False, window_scaling=False)
    a = TcpConnection(TcpConfig(mss=1000, min_rto=0.2, timestamps=False), A, 40000)
    b = TcpConnection(cfg_b, B, 5001)  # no on_data: bytes wait for read()
    b.listen()
    loop = Loop(delay=0.01)
    loop.bind(A, a)
    loop.bind(B, b)
    data = _data(20_000, seed=3)
    a.connect(B, 5001)
    a.send(data)
    loop.run(5.0)
    probes = [(t, s) for t, s in loop.sent if s.src == A and len(s.payload) == 1]
    assert len(probes) >= 3 and a.established
    gaps = [t2 - t1 for (t1, _), (t2, _) in zip(probes, probes[1:])]
    assert all(g2 == pytest.approx(2 * g1) for g1, g2 in zip(gaps, gaps[1:]))  # exponential backoff
    assert b.bytes_received == 4000  # the buffer, nothing more
    received = bytearray()
    while len(received) < len(data):
        received += b.read()
        loop.run(loop.now + 0.5)
    assert bytes(received) == data and a.error is None
