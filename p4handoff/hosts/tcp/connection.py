"""One sans-IO TCP connection: state machine, sender, receiver (RFC 9293, 5681, 6582, 6298, 7323, 5961).

A `TcpConnection` never reads a clock or touches a socket: drivers call
`handle(segment, now)`, `poll(now)` (timers + output), `next_wakeup()` and
`notify(note, now)` (the `p4handoff.hosts.endpoint.Endpoint` protocol), and the
application calls `send`/`set_source`/`close`/`read`. The same object runs
in the simulator and on real packets.

One RFC 9293 state machine, kept in one file; what the handoff schemes add
(freeze, forced RTO, receive-window close, DSBP dummies, notifications) is
gathered in one marked section, "handoff hooks".

Sequence numbers are kept internally as unbounded integers (the 32-bit wire
values unwrapped around SND.UNA / RCV.NXT), so every comparison is a plain
integer comparison; they are masked to 32 bits only when a Segment is built.
"""
from __future__ import annotations

import enum
import random
from typing import Callable

from p4handoff.hosts.cc import CongestionControl, make_scheme
from p4handoff.hosts.cc.base import AckInfo
from p4handoff.hosts.segment import ACK, FIN, PSH, RST, SYN, Segment
from p4handoff.hosts.tcp.config import TcpConfig
from p4handoff.hosts.tcp.errors import TcpError
from p4handoff.hosts.tcp.reassembly import Reassembly
from p4handoff.hosts.tcp.rto import RtoEstimator
from p4handoff.hosts.tcp.trace import TraceRecord, TraceSink
from p4handoff.notify import Event, Notification
from p4handoff.wire import DSCP_LE

MASK32 = 0xFFFFFFFF
TS_OPTION_LEN = 12
DEFAULT_PEER_MSS = 536  # RFC 9293 3.7.1: assumed when the SYN carries no MSS option
MAX_WSCALE = 14
_NO_SSTHRESH = 1 << 40


class State(str, enum.Enum):
    CLOSED = "CLOSED"
    LISTEN = "LISTEN"
    SYN_SENT = "SYN_SENT"
    SYN_RECEIVED = "SYN_RECEIVED"
    ESTABLISHED = "ESTABLISHED"
    FIN_WAIT_1 = "FIN_WAIT_1"
    FIN_WAIT_2 = "FIN_WAIT_2"
    CLOSE_WAIT = "CLOSE_WAIT"
    CLOSING = "CLOSING"
    LAST_ACK = "LAST_ACK"
    TIME_WAIT = "TIME_WAIT"


_SYNCHRONIZED = frozenset({State.ESTABLISHED, State.FIN_WAIT_1, State.FIN_WAIT_2, State.CLOSE_WAIT,
                           State.CLOSING, State.LAST_ACK, State.TIME_WAIT})
_CAN_SEND = frozenset({State.ESTABLISHED, State.CLOSE_WAIT, State.FIN_WAIT_1, State.LAST_ACK, State.CLOSING})
_CAN_RECEIVE = frozenset({State.ESTABLISHED, State.FIN_WAIT_1, State.FIN_WAIT_2})
_APP_CAN_SEND = frozenset({State.SYN_SENT, State.SYN_RECEIVED, State.ESTABLISHED, State.CLOSE_WAIT})


def unwrap(value: int, ref: int) -> int:
    """The unbounded sequence number congruent to the 32-bit `value` that lies nearest `ref`."""
    d = (value - ref) & MASK32
    if d >= 0x80000000:
        d -= 0x100000000
    return ref + d


def rst_for(seg: Segment) -> Segment | None:
    """The RST a host sends for a segment that matches no connection (RFC 9293 3.10.7.1), or None."""
    if seg.flags & RST:
        return None
    if seg.flags & ACK:
        return Segment(seg.dst, seg.src, seg.dport, seg.sport, seg.ack, 0, RST, 0)
    return Segment(seg.dst, seg.src, seg.dport, seg.sport, 0, (seg.seq + seg.seg_len) & MASK32, RST | ACK, 0)


def _wscale_for(buffer: int) -> int:
    shift = 0
    while (buffer >> shift) > 0xFFFF and shift < MAX_WSCALE:
        shift += 1
    return shift


class TcpConnection:
    """A TCP endpoint for one connection, with a pluggable congestion-control scheme.

    Create it, then `connect(remote_addr, remote_port)` (active open) or
    `listen()` (passive open), and drive it through the Endpoint protocol.
    `cc` is a scheme name from `p4handoff.hosts.cc.SCHEMES` or a scheme instance.
    Received bytes go to `on_data` if given, else they wait for `read()`
    (and then occupy the advertised window). `trace`, if given, receives a
    `TraceRecord` for every ACK and every notable event.
    """

    def __init__(self, config: TcpConfig, local_addr: str, local_port: int, *,
                 cc: str | CongestionControl = "newreno",
                 on_data: Callable[[bytes], None] | None = None,
                 trace: TraceSink | None = None, name: str = "") -> None:
        self.config = config
        self.local_addr = local_addr
        self.local_port = local_port
        self.remote_addr = ""
        self.remote_port = 0
        self.peer_home = ""  # the peer's address at open; remote_addr may move on HANDOFF
        self.name = name or f"{local_addr}:{local_port}"
        self.state = State.CLOSED
        self.error: str | None = None
        self._passive = False
        self._on_data = on_data
        self._trace_sink = trace
        self._out: list[Segment] = []
        self._last_now = 0.0
        self._kick = False  # app or notification made output possible: poll() is due now
        self._syn_pending = False  # connect() was called: the SYN goes out at the next poll()
        self._ack_pending = False  # the app's read() reopened the window: send a window update
        self._close_requested = False  # close() was called; the FIN follows the queued data

        # send side (unbounded sequence numbers)
        self.iss = 0
        self.snd_una = self.snd_nxt = self.snd_max = 0
        self.snd_wnd = 0
        self._max_snd_wnd = 0
        self._snd_wl1 = self._snd_wl2 = 0
        self._last_ack_window = -1
        self._snd_wscale = 0
        self._peer_offered_wscale = False
        self.mss = config.mss
        self.max_cwnd = config.window_segments * config.mss
        self.cwnd = config.iw * config.mss
        self.ssthresh = (config.initial_ssthresh_segments * config.mss
                         if config.initial_ssthresh_segments else _NO_SSTHRESH)
        self.dupacks = 0
        self._in_recovery = False
        self._recover = 0
        self._first_partial = False
        self._rto = RtoEstimator(config.initial_rto, config.min_rto, config.max_rto, config.clock_granularity)
        self._rto_deadline: float | None = None
        self._retries = 0
        self._syn_retransmitted = False
        self._timed: tuple[int, float] | None = None  # (end seq, send time) of the Karn-timed segment
        self._sbuf = bytearray()
        self._sbuf_seq = 0  # sequence number of _sbuf[0]
        self._fin_seq: int | None = None  # sequence number the FIN occupies, once the app closed
        self._source: Callable[[int], bytes] | None = None
        self._frozen = False
        self._persist_deadline: float | None = None
        self._persist_backoff = 0
        self._last_data_seg: Segment | None = None
        self._pace: tuple[float, float] | None = None  # (interval, until): new data paced after a handoff
        self._forwarded_end: int | None = None  # SND.MAX when the network took over the flight (hold_flight)
        self._recovery_predates_hold = False    # that fast recovery began before: its holes are real losses
        self._pace_next = 0.0                 # earliest time of the next paced segment
        self._pace_wait: float | None = None  # output held back by pacing until then
        self.bytes_sent = 0  # payload bytes transmitted, retransmissions included
        self.retransmits = 0  # data segments retransmitted

        # receive side
        self.irs = 0
        self.rcv_nxt = 0
        self._rcv_wscale = 0
        self._rcv_buf = config.receive_buffer
        self._unread = bytearray()
        self._reasm = Reassembly()
        self._peer_fin: int | None = None
        self.eof = False  # the peer's FIN has been received in order
        self.bytes_received = 0
        self._rcv_closed = False  # Freeze-TCP: advertise a zero window
        self._last_adv = 0  # window (bytes) in our last segment
        self._ts_enabled = False
        self._ts_recent = 0
        self._ts_offset = 0
        self._last_ack_sent = 0
        self._sack_ok = False
        self._delack_deadline: float | None = None
        self._delack_count = 0
        self._time_wait_deadline: float | None = None
        self._challenge_window = -1
        self._challenge_count = 0
        self.challenge_acks = 0

        self.cc = make_scheme(cc) if isinstance(cc, str) else cc
        self.cc.attach(self)

    # ===================================================================
    # application API
    # ===================================================================
    def connect(self, remote_addr: str, remote_port: int) -> None:
        """Active open: the SYN goes out at the next poll()."""
        if self.state is not State.CLOSED:
            raise TcpError(f"connect() in state {self.state.value}")
        self._set_peer(remote_addr, remote_port)
        self._choose_iss()
        self.state = State.SYN_SENT
        self._syn_pending = True
        self._kick = True

    def listen(self) -> None:
        """Passive open: wait for a SYN (the driver delivers segments for our port)."""
        if self.state is not State.CLOSED:
            raise TcpError(f"listen() in state {self.state.value}")
        self._passive = True
        self.state = State.LISTEN

    def send(self, data: bytes) -> None:
        """Queue bytes for transmission (copied)."""
        if self.state not in _APP_CAN_SEND or self._close_requested:
            raise TcpError(f"send() in state {self.state.value}{' after close()' if self._close_requested else ''}")
        if self._source is not None:
            raise TcpError("send() on a connection that has a source")
        self._sbuf += data
        self._kick = True

    def set_source(self, source: Callable[[int], bytes]) -> None:
        """Pull data on demand: `source(n)` returns up to n bytes, b"" when the stream has ended
        (the connection then closes its sending side). For greedy/bulk transfers of any length."""
        if self.state not in _APP_CAN_SEND or self._close_requested:
            raise TcpError(f"set_source() in state {self.state.value}")
        self._source = source
        self._kick = True

    def close(self) -> None:
        """No more data from us: a FIN follows the queued bytes (RFC 9293 CLOSE).

        Before the handshake completes the close is remembered and carried out on
        establishment, so `connect(); send(data); close()` is a complete bulk transfer.
        """
        if self.state is State.LISTEN:
            self._enter_closed(None)
            return
        if self._close_requested or self.state not in _APP_CAN_SEND:
            return  # already closing or closed: nothing more to do
        self._close_requested = True
        self._kick = True
        if self.state in (State.ESTABLISHED, State.CLOSE_WAIT):
            self._start_close()

    def _start_close(self) -> None:
        self.state = State.FIN_WAIT_1 if self.state is State.ESTABLISHED else State.LAST_ACK
        self._source = None  # a source is read no further once the app closes
        self._fin_seq = self._data_end()

    def abort(self) -> None:
        """Send a RST (if synchronized) and drop the connection."""
        if self.state in _SYNCHRONIZED or self.state is State.SYN_RECEIVED:
            self._out.append(self._make(self.snd_nxt, RST, b"", self._last_now, with_ack=False))
        self._enter_closed("aborted by application")

    def read(self, max_bytes: int | None = None) -> bytes:
        """Take received in-order bytes (only when no on_data callback was given)."""
        n = len(self._unread) if max_bytes is None else min(max_bytes, len(self._unread))
        data = bytes(self._unread[:n])
        del self._unread[:n]
        if n and self.state in _SYNCHRONIZED and self._last_adv < min(self._rcv_buf // 2, self.config.mss) \
                and self._rcv_window() >= min(self._rcv_buf // 2, self.config.mss):
            self._ack_pending = True  # window update (RFC 9293 3.8.6.2.2)
            self._kick = True
        return data

    # --- status -----------------------------------------------------------
    @property
    def established(self) -> bool:
        return self.state in _SYNCHRONIZED

    @property
    def closed(self) -> bool:
        return self.state is State.CLOSED

    @property
    def bytes_acked(self) -> int:
        """Payload bytes the peer has acknowledged."""
        if self.snd_una <= self.iss:
            return 0
        acked = self.snd_una - self.iss - 1
        if self._fin_seq is not None and self.snd_una > self._fin_seq:
            acked -= 1
        return acked

    @property
    def send_complete(self) -> bool:
        """The app closed and everything, FIN included, is acknowledged."""
        return self._fin_seq is not None and self.snd_una > self._fin_seq

    # ===================================================================
    # SenderControl (what congestion-control schemes use)
    # ===================================================================
    @property
    def flight_size(self) -> int:
        return self.snd_nxt - self.snd_una

    @property
    def srtt(self) -> float | None:
        return self._rto.srtt

    @property
    def min_rtt(self) -> float | None:
        return self._rto.min_rtt

    @property
    def latest_rtt(self) -> float | None:
        return self._rto.latest_rtt

    @property
    def rto(self) -> float:
        return self._rto.rto

    @property
    def in_recovery(self) -> bool:
        return self._in_recovery

    @property
    def frozen(self) -> bool:
        return self._frozen

    @property
    def peer_window(self) -> int:
        return self.snd_wnd

    @property
    def ts_hz(self) -> int:
        return self.config.ts_hz

    @property
    def timestamps_enabled(self) -> bool:
        return self._ts_enabled

    @property
    def last_data_segment(self) -> Segment | None:
        return self._last_data_seg

    def tsval(self, now: float) -> int:
        return (int(now * self.config.ts_hz) + self._ts_offset) & MASK32

    def trace(self, event: str, now: float, detail: str = "") -> None:
        if self._trace_sink is None:
            return
        first = self.iss + 1
        self._trace_sink(TraceRecord(
            now, self.name, event, self.state._value_, self.cwnd,      # _value_: .value is a slow descriptor
            self.ssthresh if self.ssthresh != _NO_SSTHRESH else -1,
            self.snd_nxt - self.snd_una, self._rto.srtt, self._rto.rto,
            max(0, self.snd_una - first), self.mss, detail))

    # ===================================================================
    # Endpoint protocol
    # ===================================================================
    def handle(self, segment: Segment, now: float) -> None:
        self._last_now = now
        if segment.dummy and segment.dscp == DSCP_LE and self.cc.answers_dummies and self.state in _SYNCHRONIZED:
            self._handle_dummy(segment, now)
            return
        state = self.state
        if state is State.CLOSED:
            rst = rst_for(segment)
            if rst is not None:
                self._out.append(rst)
            return
        if state is State.LISTEN:
            self._handle_listen(segment, now)
        elif state is State.SYN_SENT:
            self._handle_syn_sent(segment, now)
        else:
            self._handle_synchronized(segment, now)
        self._output(now)

    def poll(self, now: float) -> list[Segment]:
        self._last_now = now
        self._kick = False
        if self._syn_pending:
            self._syn_pending = False
            self._send_syn(now)
        if self._rto_deadline is not None and now >= self._rto_deadline:
            self._on_rto_timer(now)
        if self._persist_deadline is not None and now >= self._persist_deadline:
            self._on_persist_timer(now)
        if self._delack_deadline is not None and now >= self._delack_deadline:
            self._send_ack(now)
        if self._time_wait_deadline is not None and now >= self._time_wait_deadline:
            self._enter_closed(None)
        cc_due = self.cc.next_wakeup()
        if cc_due is not None and now >= cc_due:
            self.cc.on_timer(now)
        if self._ack_pending:
            self._ack_pending = False
            if self.state in _SYNCHRONIZED:
                self._send_ack(now)
        self._output(now)
        out, self._out = self._out, []
        return out

    def next_wakeup(self) -> float | None:
        if self._out or self._kick:
            return self._last_now
        best = None
        for t in (self._rto_deadline, self._persist_deadline, self._delack_deadline,
                  self._time_wait_deadline, self._pace_wait, self.cc.next_wakeup()):
            if t is not None and (best is None or t < best):
                best = t
        return best

    # ===================================================================
    # handoff hooks: what the schemes (Freeze-TCP, DSBP, Immediate Expiration)
    # call on a handoff, and the handoff notifications they act on
    # ===================================================================
    def force_rto(self, now: float) -> bool:
        """Expire the retransmission timer now (Immediate Expiration): same as a timeout,
        but the backoff is reset instead of doubled. False if nothing is outstanding."""
        if self.state not in _CAN_SEND or self.snd_max <= self.snd_una:
            return False
        self._timeout(now, forced=True)
        return True

    def hold_flight(self, now: float, until: float) -> bool:
        """The network forwards the flight (HANDOFF with forwarding): nothing is resent. The timer,
        its backoff reset, is re-armed to expire one RTO after `until` (the flush's end), so it
        stays off the forwarded flight but still recovers what was really lost. False if nothing
        is outstanding. Until that flight is acknowledged, a partial ACK ends a fast recovery
        entered after this (Reno's rule) instead of resending the next segment: the network
        delivers the flight in order, so the segment after a partial ACK is on its way, not lost.
        A recovery already running here keeps NewReno's rule: its loss happened before the network
        took the flight, and a second hole of that window was most likely lost with the first."""
        if self.state not in _CAN_SEND or self.snd_max <= self.snd_una or self._frozen:
            return False
        self._rto.reset_backoff()
        self._retries = 0
        self._rto_deadline = max(now, until) + self._rto.rto
        self._forwarded_end = self.snd_max
        self._recovery_predates_hold = self._in_recovery
        self.trace("flight_forwarded", now, f"flight={self.snd_max - self.snd_una} until={until:.6f}")
        return True

    def pace(self, now: float, interval: float, until: float) -> None:
        """Until `until`, new data segments leave at most one per `interval` s (DSBP after a handoff:
        the window it takes spread over the new path's RTT instead of sent as one burst).
        Retransmissions are not held back."""
        if interval <= 0 or until <= now:
            raise ValueError(f"pacing needs interval > 0 and until > now, got {interval}, {until} at {now}")
        self._pace = (interval, until)
        self._pace_next = now
        self.trace("pace", now, f"interval={interval:.6f} until={until:.6f}")

    def freeze(self, now: float) -> None:
        """Freeze-TCP: stop the retransmission timer and sending, keep cwnd; probe the window."""
        if self._frozen:
            return
        self._frozen = True
        self._rto_deadline = None
        self._persist_backoff = 0
        self._persist_deadline = now + self._persist_interval()
        self.trace("freeze", now)

    def unfreeze(self, now: float) -> None:
        """Resume with the cwnd held before the freeze; resend what was in flight (it was dropped)."""
        if not self._frozen:
            return
        self._frozen = False
        self._persist_deadline = None
        self._rto.reset_backoff()
        self._retries = 0
        self.dupacks = 0
        self.snd_nxt = self.snd_una
        self._timed = None
        self.trace("unfreeze", now)
        self._kick = True

    def close_receive_window(self, now: float) -> None:
        """Advertise a zero window from now on, and say so at once (Freeze-TCP's ZWA)."""
        self._rcv_closed = True
        if self.state in _SYNCHRONIZED:
            self._send_ack(now)
        self.trace("rcv_window_closed", now)

    def open_receive_window(self, now: float, copies: int = 1) -> None:
        """Reopen the advertised window and send `copies` window-update ACKs (Freeze-TCP: 3)."""
        self._rcv_closed = False
        if self.state in _SYNCHRONIZED:
            for _ in range(copies):
                self._send_ack(now)
        self.trace("rcv_window_opened", now)

    def emit(self, segment: Segment) -> None:
        """Queue an extra segment (e.g. a DSBP dummy) for the next poll()."""
        self._out.append(segment)

    def notify(self, note: Notification, now: float) -> None:
        """Deliver a handoff event concerning our peer (the MH we talk to) or ourselves (we are the MH).
        Events for other hosts are ignored. Duplicate suppression by `seq` is the driver's job."""
        self._last_now = now
        if note.mh_addr not in (self.peer_home, self.local_addr) or self.state in (State.CLOSED, State.LISTEN):
            return
        if note.event is Event.HANDOFF and note.mh_addr == self.peer_home and note.path_addr not in ("", "0.0.0.0"):
            self.remote_addr = note.path_addr
        self.trace(note.event.name.lower(), now, f"path={note.path_addr} seq={note.seq}")
        self.cc.on_notify(note, now)
        self._kick = True

    def _handle_dummy(self, seg: Segment, now: float) -> None:
        """DSBP: answer a dummy data segment with a dummy ACK; pass a dummy ACK to the scheme.
        Neither touches the connection's sequence state, so dummies are never duplicates or losses."""
        if seg.payload:
            ts = (self.tsval(now), seg.ts[0]) if self._ts_enabled and seg.ts is not None else None
            self._out.append(Segment(seg.dst, seg.src, seg.dport, seg.sport,
                                     self.snd_nxt & MASK32, self.rcv_nxt & MASK32, ACK,
                                     self._window_field(), ts=ts, dscp=DSCP_LE, dummy=True))
            self.trace("dummy_answered", now)
        else:
            self.cc.on_dummy_ack(seg, now)

    # ===================================================================
    # segment arrival
    # ===================================================================
    def _handle_listen(self, seg: Segment, now: float) -> None:
        if seg.flags & RST:
            return
        if seg.flags & ACK:
            rst = rst_for(seg)
            if rst is not None:
                self._out.append(rst)
            return
        if not seg.flags & SYN:
            return
        self._set_peer(seg.src, seg.sport)
        self._choose_iss()
        self._take_syn_options(seg, offered_by_us=False)
        self.irs = seg.seq
        self.rcv_nxt = self.irs + 1
        self._last_ack_sent = self.rcv_nxt
        if seg.ts is not None and self._ts_enabled:
            self._ts_recent = seg.ts[0]
        self.snd_wnd = seg.window
        self._max_snd_wnd = self.snd_wnd
        self.state = State.SYN_RECEIVED
        self.trace("syn_received", now)
        self._send_syn(now)

    def _handle_syn_sent(self, seg: Segment, now: float) -> None:
        ack_ok = False
        if seg.flags & ACK:
            ack = unwrap(seg.ack, self.snd_una)
            if ack <= self.iss or ack > self.snd_max:
                if not seg.flags & RST:
                    self._out.append(Segment(self.local_addr, self.remote_addr, self.local_port, self.remote_port,
                                             seg.ack, 0, RST, 0))
                return
            ack_ok = True
        if seg.flags & RST:
            if ack_ok:
                self._enter_closed("connection refused (RST)")
            return
        if not seg.flags & SYN:
            return
        self.irs = seg.seq
        self.rcv_nxt = self.irs + 1
        self._last_ack_sent = self.rcv_nxt
        self._take_syn_options(seg, offered_by_us=True)
        if seg.ts is not None and self._ts_enabled:
            self._ts_recent = seg.ts[0]
        if ack_ok:
            self._rtt_on_ack(seg, unwrap(seg.ack, self.snd_una), now)
            self.snd_una = unwrap(seg.ack, self.snd_una)
            self.snd_wnd = seg.window  # the window in a SYN is never scaled
            self._max_snd_wnd = self._last_ack_window = self.snd_wnd
            self._snd_wl1, self._snd_wl2 = self.irs, self.snd_una
            self._established(now)
            self._send_ack(now)
        else:  # simultaneous open
            self.state = State.SYN_RECEIVED
            self.snd_wnd = seg.window
            self._send_syn(now)

    def _handle_synchronized(self, seg: Segment, now: float) -> None:
        flags = seg.flags
        seq = unwrap(seg.seq, self.rcv_nxt)
        wnd = self._rcv_window()
        if flags & RST:
            # RFC 5961 3.2: only an exact RCV.NXT match resets; other in-window RSTs get a challenge ACK.
            # RFC 1337: TIME-WAIT ignores RSTs (the transfer is complete; the peer may be gone).
            if self.state is State.TIME_WAIT:
                return
            if seq == self.rcv_nxt:
                if self.state is State.SYN_RECEIVED and self._passive:
                    self._back_to_listen(now)
                else:
                    self._enter_closed("connection reset by peer")
            elif self.rcv_nxt <= seq < self.rcv_nxt + max(wnd, 1):
                self._challenge_ack(now, "rst")
            return
        if flags & SYN:
            if self.state is State.SYN_RECEIVED and seq == self.irs:
                self._send_syn(now)  # our SYN-ACK was lost: repeat it
            else:
                self._challenge_ack(now, "syn")  # RFC 5961 4.2
            return
        seg_len = len(seg.payload) + (1 if flags & FIN else 0)
        payload_ok = self._acceptable(seq, seg_len, wnd)
        if not payload_ok:
            self._send_ack(now)  # RFC 9293 3.10.7.4: unacceptable -> ACK and drop ...
            if not (wnd == 0 and seq == self.rcv_nxt):
                return  # ... except that with a zero window its ACK field is still processed
        if not flags & ACK:
            return
        if seg.ts is not None and self._ts_enabled and seq <= self._last_ack_sent \
                and ((seg.ts[0] - self._ts_recent) & MASK32) < 0x80000000:
            self._ts_recent = seg.ts[0]
        ack = unwrap(seg.ack, self.snd_una)
        if self.state is State.SYN_RECEIVED:
            if not self.snd_una < ack <= self.snd_max:
                self._out.append(Segment(self.local_addr, self.remote_addr, self.local_port, self.remote_port,
                                         seg.ack, 0, RST, 0))
                return
            self._rtt_on_ack(seg, ack, now)
            self.snd_una = ack
            self._snd_wl1, self._snd_wl2 = seq, ack
            self.snd_wnd = seg.window << self._snd_wscale
            self._max_snd_wnd = max(self._max_snd_wnd, self.snd_wnd)
            self._last_ack_window = self.snd_wnd
            self._established(now)
        elif ack > self.snd_max or ack < self.snd_una - self._max_snd_wnd:
            self._challenge_ack(now, "ack")  # RFC 5961 5.2: blind data injection guard
            return
        else:
            self._process_ack(seg, seq, ack, now)
        if self.state is State.CLOSED:
            return
        self._fin_acked_transitions(now)
        if payload_ok and (seg.payload or flags & FIN):
            self._receive(seg, seq, now)

    def _acceptable(self, seq: int, seg_len: int, wnd: int) -> bool:
        """RFC 9293 3.10.7.4 segment acceptability test."""
        rn = self.rcv_nxt
        if seg_len == 0:
            return seq == rn if wnd == 0 else rn <= seq < rn + wnd
        if wnd == 0:
            return False
        return rn <= seq < rn + wnd or rn <= seq + seg_len - 1 < rn + wnd

    # --- ACK processing (sender) ------------------------------------------
    def _process_ack(self, seg: Segment, seq: int, ack: int, now: float) -> None:
        old_wnd = self.snd_wnd
        new_wnd = seg.window << self._snd_wscale
        window_changed_from_last = new_wnd != self._last_ack_window
        self._last_ack_window = new_wnd
        if ack >= self.snd_una and (self._snd_wl1 < seq or (self._snd_wl1 == seq and self._snd_wl2 <= ack)):
            self.snd_wnd = new_wnd
            self._snd_wl1, self._snd_wl2 = seq, ack
            if new_wnd > self._max_snd_wnd:
                self._max_snd_wnd = new_wnd
        ts = seg.ts
        if ack > self.snd_una:
            self._new_ack(seg, ack, now)
        elif (ack == self.snd_una and self.snd_max > self.snd_una and not seg.payload
              and not seg.flags & (SYN | FIN) and not window_changed_from_last and new_wnd > 0
              and not self._frozen):
            self.dupacks += 1
            info = AckInfo(now, 0, None, ts[0] if ts else None, ts[1] if ts else None,
                           self.snd_wnd, self._in_recovery, self.dupacks)
            self.cc.on_dupack(info)
            if self._in_recovery:
                self.cwnd += self.mss  # RFC 6582 step 4: inflate
                if self._trace_sink is not None:
                    self.trace("dupack", now, f"n={self.dupacks}")
            elif self.dupacks == 3:
                if ack >= self._recover:
                    self._enter_fast_retransmit(now)
                else:
                    self.trace("dupack", now, "n=3 below recover: no fast retransmit (RFC 6582)")
            elif self._trace_sink is not None:
                self.trace("dupack", now, f"n={self.dupacks}")
        if self.snd_wnd != old_wnd:
            if self.snd_wnd > 0 and not self._frozen:
                self._persist_deadline = None
                self._persist_backoff = 0
            self.cc.on_window_change(self.snd_wnd, now)

    def _new_ack(self, seg: Segment, ack: int, now: float) -> None:
        acked = ack - self.snd_una
        rtt = self._rtt_on_ack(seg, ack, now)
        self.snd_una = ack
        if self.snd_nxt < ack:
            self.snd_nxt = ack
        self._retries = 0
        self._trim_send_buffer()
        in_recovery = self._in_recovery
        restart_timer = True
        forwarded = self._forwarded_end is not None and ack < self._forwarded_end
        if not forwarded:
            self._forwarded_end = None
        if in_recovery:
            if ack >= self._recover or not self.cc.partial_acks or (forwarded and not self._recovery_predates_hold):
                self._in_recovery = False
                self.dupacks = 0
                self.cc.on_recovery_exit(now)
                self.trace("recovery_exit", now, "" if ack >= self._recover else "partial ACK (Reno)")
            else:
                # RFC 6582 step 5: partial ACK -> retransmit the next hole, deflate
                self._send_data(self.snd_una, self.mss, now, oob=True)
                self.cwnd = max(self.cwnd - acked + (self.mss if acked >= self.mss else 0), self.mss)
                restart_timer = self._first_partial
                self._first_partial = False
                self.trace("partial_ack", now, f"acked={acked}")
        else:
            self.dupacks = 0
        ts = seg.ts
        self.cc.on_ack(AckInfo(now, acked, rtt, ts[0] if ts else None, ts[1] if ts else None,
                               self.snd_wnd, in_recovery, self.dupacks))
        if self.snd_una >= self.snd_max:
            self._rto_deadline = None
        elif restart_timer and not self._frozen:
            self._rto_deadline = now + self._rto.rto
        if self._trace_sink is not None:   # per ACK: no detail string without a sink
            self.trace("ack", now, f"acked={acked}")

    def _rtt_on_ack(self, seg: Segment, ack: int, now: float) -> float | None:
        """Take an RTT sample if this ACK allows one (timestamp echo, or the Karn-timed segment)."""
        rtt = None
        if self._ts_enabled and seg.ts is not None and seg.ts[1]:
            ticks = (self.tsval(now) - seg.ts[1]) & MASK32
            if ticks < 0x80000000:
                rtt = max(ticks, 1) / self.config.ts_hz  # whole ticks: a same-tick echo counts as one
                if rtt > self.config.max_rto:
                    rtt = None  # not an echo of anything we sent recently
        elif self._timed is not None and ack >= self._timed[0]:
            rtt = now - self._timed[1]
            self._timed = None
        if rtt is not None:
            self._rto.sample(rtt)
        return rtt

    def _enter_fast_retransmit(self, now: float) -> None:
        self._recover = self.snd_max
        self._recovery_predates_hold = False
        self.cc.on_loss(now)
        self._in_recovery = True
        self._first_partial = True
        self.trace("fast_retransmit", now)
        self._send_data(self.snd_una, self.mss, now, oob=True)
        self.cwnd = self.ssthresh + 3 * self.mss

    def _fin_acked_transitions(self, now: float) -> None:
        if self._fin_seq is None or self.snd_una <= self._fin_seq:
            return
        if self.state is State.FIN_WAIT_1:
            self.state = State.FIN_WAIT_2
        elif self.state is State.CLOSING:
            self._enter_time_wait(now)
        elif self.state is State.LAST_ACK:
            self._enter_closed(None)

    # --- data reception (receiver) ------------------------------------------
    def _receive(self, seg: Segment, seq: int, now: float) -> None:
        if self.state not in _CAN_RECEIVE:
            return
        payload = seg.payload
        fin = bool(seg.flags & FIN)
        if seq < self.rcv_nxt:  # trim the part we already have
            payload = payload[self.rcv_nxt - seq:]
            seq = self.rcv_nxt
        limit = self.rcv_nxt + self._rcv_window()
        if seq + len(payload) > limit:  # trim what is beyond the window (and drop the FIN with it)
            payload = payload[:max(0, limit - seq)]
            fin = False
        if fin:
            self._peer_fin = seq + len(payload)
        in_order = seq == self.rcv_nxt
        had_holes = len(self._reasm) > 0
        if in_order:
            self._deliver(payload)
            if had_holes:
                self._deliver(self._reasm.pop_contiguous(self.rcv_nxt))
        elif payload:
            self._reasm.add(seq, payload)
        if self._peer_fin is not None and self.rcv_nxt == self._peer_fin:
            self._peer_fin_reached(now)
            return
        if not in_order or had_holes or not self.config.delayed_ack:
            self._send_ack(now)  # out of order, filling a hole, or no delayed ACKs: ACK at once
            return
        self._delack_count += 1
        if self._delack_count >= 2:
            self._send_ack(now)
        elif self._delack_deadline is None:
            self._delack_deadline = now + self.config.delack_timeout

    def _deliver(self, data: bytes) -> None:
        if not data:
            return
        self.rcv_nxt += len(data)
        self.bytes_received += len(data)
        if self._on_data is not None:
            self._on_data(data)
        else:
            self._unread += data

    def _peer_fin_reached(self, now: float) -> None:
        self.rcv_nxt += 1
        self.eof = True
        self.trace("fin_received", now)
        self._send_ack(now)
        if self.state is State.ESTABLISHED:
            self.state = State.CLOSE_WAIT
        elif self.state is State.FIN_WAIT_1:
            if self._fin_seq is not None and self.snd_una > self._fin_seq:
                self._enter_time_wait(now)
            else:
                self.state = State.CLOSING
        elif self.state is State.FIN_WAIT_2:
            self._enter_time_wait(now)

    # ===================================================================
    # timers
    # ===================================================================
    def _on_rto_timer(self, now: float) -> None:
        self._rto_deadline = None
        if self.state in (State.SYN_SENT, State.SYN_RECEIVED):
            self._retries += 1
            if self._retries > self.config.syn_retries:
                self._enter_closed("connection timed out (SYN)")
                return
            self._rto.expired()
            self._syn_retransmitted = True
            self.trace("rto", now, "syn")
            self._send_syn(now)
            return
        if self.state not in _CAN_SEND or self.snd_max <= self.snd_una or self._frozen:
            return
        self._retries += 1
        if self._retries > self.config.max_retries:
            self._out.append(self._make(self.snd_nxt, RST, b"", now, with_ack=False))
            self._enter_closed("connection timed out")
            return
        self._timeout(now, forced=False)

    def _timeout(self, now: float, forced: bool) -> None:
        """RTO expiry (RFC 5681 3.1 / RFC 6298 5.4-5.6): ssthresh/cwnd by the scheme, go-back-N."""
        self.cc.on_rto(now)
        self._in_recovery = False
        self.dupacks = 0
        self._recover = self.snd_max  # RFC 6582: no fast retransmit for the dup ACKs this causes
        if forced:
            self._rto.reset_backoff()
        else:
            self._rto.expired()
        self.trace("forced_rto" if forced else "rto", now)
        self.snd_nxt = self.snd_una
        self._timed = None
        self._persist_deadline = None
        self._send_data(self.snd_una, self.mss, now)
        self._rto_deadline = now + self._rto.rto

    def _persist_interval(self) -> float:
        return min(self.config.max_rto, max(self._rto.base, self.config.min_rto) * (1 << min(self._persist_backoff, 30)))

    def _on_persist_timer(self, now: float) -> None:
        """Zero-window probe (RFC 9293 3.8.6.1): one byte of data beyond the window; never gives up."""
        self._persist_deadline = None
        if self.state not in _CAN_SEND or (self.snd_wnd > 0 and not self._frozen):
            return
        if self._data_end() <= self.snd_una:
            return  # nothing to probe with; _output re-arms the timer when data is queued
        self._send_data(self.snd_una, 1, now, oob=True, probe=True)
        self.trace("persist_probe", now)
        self._persist_backoff += 1
        self._persist_deadline = now + self._persist_interval()

    # ===================================================================
    # output
    # ===================================================================
    def _output(self, now: float) -> None:
        self._pace_wait = None
        if self.state not in _CAN_SEND:
            return
        if self._frozen:
            if self._persist_deadline is None and self._data_end() > self.snd_una:
                self._persist_deadline = now + self._persist_interval()
            return
        mss = self.mss
        while True:
            wnd = self.cwnd if self.cwnd < self.snd_wnd else self.snd_wnd
            usable = self.snd_una + wnd - self.snd_nxt
            avail = self._sbuf_seq + len(self._sbuf) - self.snd_nxt
            if self._source is not None and avail < (usable if usable > mss else mss):
                self._pull_source()
                avail = self._sbuf_seq + len(self._sbuf) - self.snd_nxt
            if avail <= 0:
                if self._fin_seq is not None and self.snd_nxt == self._fin_seq \
                        and self.snd_una + self.cwnd > self.snd_nxt:
                    self._send_data(self.snd_nxt, 0, now)
                break
            n = min(mss, avail, usable)
            if n <= 0:
                break
            if n < mss and n < avail and self.snd_nxt > self.snd_una:
                break  # sender SWS avoidance: wait for a full segment's worth of window
            if self._pace is not None:
                if now >= self._pace[1]:
                    self._pace = None
                elif now < self._pace_next:
                    self._pace_wait = self._pace_next
                    break
                else:
                    self._pace_next = now + self._pace[0]
            self._send_data(self.snd_nxt, n, now)
        if (self.snd_wnd == 0 and self._persist_deadline is None and self.snd_nxt == self.snd_una
                and self._data_end() > self.snd_nxt):
            self._persist_deadline = now + self._persist_interval()

    def _pull_source(self) -> None:
        assert self._source is not None
        # enough for the window, and always at least one full segment beyond SND.NXT (no runts)
        target = max(self.snd_una + min(self.cwnd, self.snd_wnd), self.snd_nxt + self.mss)
        want = target - self._data_end()
        if want <= 0:
            return
        chunk = self._source(max(want, self.mss))
        if chunk:
            self._sbuf += chunk
        else:
            self._source = None
            self.close()

    def _data_end(self) -> int:
        return self._sbuf_seq + len(self._sbuf)

    def _trim_send_buffer(self) -> None:
        done = min(self.snd_una, self._data_end()) - self._sbuf_seq
        if done > 0 and (done >= 1 << 20 or done * 2 >= len(self._sbuf)):
            del self._sbuf[:done]
            self._sbuf_seq += done

    def _send_data(self, seq: int, max_len: int, now: float, oob: bool = False, probe: bool = False) -> None:
        """Transmit payload from `seq` (plus FIN if it reaches the FIN's place).

        `oob` (fast/partial-ACK retransmission, probes) leaves SND.NXT alone.
        """
        start = seq - self._sbuf_seq
        end_data = min(seq + max_len, self._data_end())
        payload = bytes(self._sbuf[start:end_data - self._sbuf_seq]) if end_data > seq else b""
        flags = ACK
        end = seq + len(payload)
        if payload and end == self._data_end():
            flags |= PSH
        if not probe and self._fin_seq is not None and end == self._fin_seq:
            flags |= FIN
            end += 1
        if end == seq:
            return
        seg = self._make(seq, flags, payload, now)
        retransmit = seq < self.snd_max
        if retransmit:
            self._timed = None  # Karn: the timed segment's sample is now ambiguous
            if payload:
                self.retransmits += 1
        elif self._timed is None and not self._ts_enabled:
            self._timed = (end, now)
        if not oob and end > self.snd_nxt:
            self.snd_nxt = end
        if end > self.snd_max:
            self.snd_max = end
        if payload:
            self._last_data_seg = seg
            self.bytes_sent += len(payload)
        if self._rto_deadline is None and not probe and not self._frozen:
            self._rto_deadline = now + self._rto.rto
        self._out.append(seg)

    def _send_ack(self, now: float) -> None:
        self._out.append(self._make(self.snd_nxt, ACK, b"", now))

    def _challenge_ack(self, now: float, why: str) -> None:
        """RFC 5961 challenge ACK, at most `challenge_ack_limit` per second."""
        window = int(now)
        if window != self._challenge_window:
            self._challenge_window, self._challenge_count = window, 0
        if self._challenge_count >= self.config.challenge_ack_limit:
            return
        self._challenge_count += 1
        self.challenge_acks += 1
        self.trace("challenge_ack", now, why)
        self._send_ack(now)

    def _send_syn(self, now: float) -> None:
        flags = SYN | (ACK if self.state is State.SYN_RECEIVED else 0)
        cfg = self.config
        active = not flags & ACK
        seg = Segment(self.local_addr, self.remote_addr, self.local_port, self.remote_port,
                      self.iss & MASK32, self.rcv_nxt & MASK32 if flags & ACK else 0, flags,
                      min(self._rcv_buf, 0xFFFF), mss=cfg.mtu - 40)
        if cfg.window_scaling and (active or self._peer_offered_wscale):
            seg.wscale = _wscale_for(self._rcv_buf)
        if (active and cfg.sack) or (not active and self._sack_ok):
            seg.sack_permitted = True
        if (active and cfg.timestamps) or (not active and self._ts_enabled):
            seg.ts = (self.tsval(now), self._ts_recent if not active else 0)
        # Karn: time the first SYN only (a retransmitted SYN's answer is ambiguous)
        self._timed = (self.iss + 1, now) if self.snd_max == self.iss else None
        self.snd_nxt = self.snd_max = self.iss + 1
        if self._rto_deadline is None:
            self._rto_deadline = now + self._rto.rto
        self._out.append(seg)

    def _window_field(self) -> int:
        wnd = self._rcv_window()
        self._last_adv = wnd
        return min(wnd >> self._rcv_wscale, 0xFFFF)

    def _rcv_window(self) -> int:
        if self._rcv_closed:
            return 0
        return max(0, self._rcv_buf - len(self._unread))

    def _make(self, seq: int, flags: int, payload: bytes, now: float, with_ack: bool = True) -> Segment:
        if with_ack:
            flags |= ACK
            self._last_ack_sent = self.rcv_nxt
            self._delack_deadline = None
            self._delack_count = 0
        seg = Segment(self.local_addr, self.remote_addr, self.local_port, self.remote_port,
                      seq & MASK32, self.rcv_nxt & MASK32 if flags & ACK else 0, flags,
                      self._window_field(), payload)
        if self._ts_enabled:
            seg.ts = (self.tsval(now), self._ts_recent if flags & ACK else 0)
        if self._sack_ok and len(self._reasm) and flags & ACK:
            limit = 3 if self._ts_enabled else 4
            seg.sack = tuple((s & MASK32, e & MASK32) for s, e in self._reasm.sack_blocks(limit))
        return seg

    # ===================================================================
    # connection bookkeeping
    # ===================================================================
    def _set_peer(self, addr: str, port: int) -> None:
        self.remote_addr = addr
        self.peer_home = addr
        self.remote_port = port

    def _choose_iss(self) -> None:
        if self.config.isn is not None:
            self.iss = self.config.isn & MASK32
        else:
            rng = random.Random(f"{self.config.seed}|{self.local_addr}|{self.local_port}|"
                                f"{self.remote_addr}|{self.remote_port}")
            self.iss = rng.getrandbits(32)
        self._ts_offset = random.Random(f"ts|{self.iss}|{self.config.seed}").getrandbits(31)
        self.snd_una = self.snd_nxt = self.snd_max = self.iss
        self._sbuf_seq = self.iss + 1
        self._recover = self.iss

    def _take_syn_options(self, seg: Segment, offered_by_us: bool) -> None:
        cfg = self.config
        peer_mss = seg.mss if seg.mss else DEFAULT_PEER_MSS
        self._ts_enabled = cfg.timestamps and seg.ts is not None
        self._sack_ok = cfg.sack and seg.sack_permitted
        self._peer_offered_wscale = seg.wscale is not None
        if cfg.window_scaling and seg.wscale is not None:
            self._snd_wscale = min(seg.wscale, MAX_WSCALE)
            self._rcv_wscale = _wscale_for(self._rcv_buf)
        else:
            self._snd_wscale = self._rcv_wscale = 0
        self.mss = max(1, min(cfg.mss, peer_mss - (TS_OPTION_LEN if self._ts_enabled else 0)))
        self.max_cwnd = cfg.window_segments * self.mss
        self.cwnd = cfg.iw * self.mss
        if cfg.initial_ssthresh_segments:
            self.ssthresh = cfg.initial_ssthresh_segments * self.mss
        if not cfg.window_scaling or seg.wscale is None:
            self._rcv_buf = min(self._rcv_buf, 0xFFFF)

    def _established(self, now: float) -> None:
        self.state = State.ESTABLISHED
        self._retries = 0
        self._rto_deadline = None
        if self._syn_retransmitted and self._rto.srtt is None:
            self._rto.base = max(self._rto.base, 3.0)  # RFC 6298 5.7
            self._rto.reset_backoff()
        self.trace("established", now, f"sack={int(self._sack_ok)} ts={int(self._ts_enabled)}")
        if self._close_requested:
            self._start_close()

    def _back_to_listen(self, now: float) -> None:
        self.trace("reset_to_listen", now)
        self.state = State.LISTEN
        self.remote_addr = self.peer_home = ""
        self.remote_port = 0
        self._rto_deadline = None
        self._retries = 0

    def _enter_time_wait(self, now: float) -> None:
        self.state = State.TIME_WAIT
        self._rto_deadline = self._persist_deadline = self._delack_deadline = None
        self._time_wait_deadline = now + self.config.time_wait
        self.trace("time_wait", now)

    def _enter_closed(self, error: str | None) -> None:
        if error and self.error is None:
            self.error = error
        self.state = State.CLOSED
        self._rto_deadline = self._persist_deadline = self._delack_deadline = None
        self._time_wait_deadline = None
        self.trace("closed", self._last_now, error or "")
