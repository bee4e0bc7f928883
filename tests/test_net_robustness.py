"""Hostile and odd input on real packets during a transfer: the connection survives, bytes stay exact.

Injected into a running our-sender -> our-receiver transfer (rate-limited so
it lasts a couple of seconds): malformed packets (bad checksums, truncated,
bad header lengths, bad options) are dropped and counted; an out-of-window
RST is ignored; an in-window RST that is not exactly RCV.NXT, a SYN on the
synchronized connection, and an ACK for data never sent are answered with
RFC 5961 challenge ACKs (seen in the traces). Handoff notifications reach
the connection once each; garbage datagrams are ignored.
"""
from __future__ import annotations

import json
import os
import select
import socket
import time

from p4handoff import netns
from p4handoff.notify import Event, Notification
from tests.net_support import (RECEIVER, SENDER, Injector, OurReceiver, OurSender, RstWatch, mac_of, make_path,
                              needs_netns, sha256)

pytestmark = needs_netns

from scapy.layers.inet import IP, TCP  # noqa: E402  (slow import, after the skip decision)

from p4handoff.hosts.codec import MalformedSegment, decode  # noqa: E402
from p4handoff.hosts.net.rawio import PacketReceiver  # noqa: E402

SPORT, DPORT = 40001, 5001


def w(seq: int) -> int:
    """A sequence number as it goes on the wire (mod 2**32)."""
    return seq & 0xFFFFFFFF


class Tap:
    """The newest data segment of the flow, seen in the receiver's namespace."""

    def __init__(self, ns: netns.Namespace) -> None:
        self.rx = ns.call(lambda: PacketReceiver(DPORT))

    def latest(self, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        newest = None
        while time.monotonic() < deadline:
            select.select([self.rx], [], [], 0.2)
            while batch := self.rx.receive(1024):  # drain: only the newest segment tells RCV.NXT
                for r in batch:
                    try:
                        seg = decode(r.packet)
                    except MalformedSegment:
                        continue  # one of ours
                    if seg.payload and seg.sport == SPORT:
                        newest = seg
            if newest is not None:
                return newest
        raise AssertionError("no data segment seen")

    def close(self) -> None:
        self.rx.close()


def events(trace_file) -> list[tuple[str, str]]:
    return [(r["event"], r["detail"]) for r in map(json.loads, trace_file.read_text().splitlines())]


def test_malformed_and_out_of_window_segments_do_not_hurt_the_connection(tmp_path):
    data = os.urandom(3_000_000)
    src = tmp_path / "data.bin"
    src.write_bytes(data)
    out = tmp_path / "out.bin"
    with netns.Sandbox("inj") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--out", str(out), "--time-wait", "0.2", "--notify-port", "0",
                               "--trace", str(tmp_path / "recv.jsonl"))
        tap = Tap(path.b)
        watch = RstWatch(path)
        sender = OurSender(path, "--port", str(SPORT), "--data", str(src), "--notify-port", "0",
                           "--trace", str(tmp_path / "send.jsonl"))
        to_rcv = Injector(path.a, path.link.dev_a, mac_of(path.b, path.link.dev_b))
        to_snd = Injector(path.b, path.link.dev_b, mac_of(path.a, path.link.dev_a))

        seg = tap.latest()
        mss = len(seg.payload)
        fwd = IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, ack=seg.ack, flags="A")
        good = bytes(fwd)
        malformed_to_receiver = [
            bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, seq=w(seg.seq + mss), ack=seg.ack,
                                                     flags="PA", chksum=0xDEAD) / (b"\xee" * mss)),
            bytes(IP(src=SENDER, dst=RECEIVER, chksum=0xBEEF) / TCP(sport=SPORT, dport=DPORT, ack=seg.ack, flags="A")),
            good[:30],                                                   # truncated: total length says 40
            bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, dataofs=15, flags="A")),
            bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, flags="A", seq=seg.seq,
                                                     options=[(2, b"\x05")])),  # MSS option of length 3
        ]
        for packet in malformed_to_receiver:
            to_rcv.send(packet)
        seg = tap.latest()
        to_rcv.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, seq=w(seg.seq + 2**31),
                                                             flags="R")))
        seg = tap.latest()
        to_rcv.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, seq=w(seg.seq + 30_001),
                                                             flags="R")))
        seg = tap.latest()
        to_rcv.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, seq=w(seg.seq + 5), flags="S")))

        # towards the sender: its RCV.NXT is the ACK number of its segments (the receiver sends no data)
        rcv_nxt = seg.ack
        back = dict(src=RECEIVER, dst=SENDER)
        to_snd.send(bytes(IP(**back) / TCP(sport=DPORT, dport=SPORT, seq=rcv_nxt, ack=w(seg.seq + 2**30), flags="A",
                                           chksum=0x1234)))
        to_snd.send(bytes(IP(**back) / TCP(sport=DPORT, dport=SPORT, seq=w(rcv_nxt + 2**31), flags="R")))
        to_snd.send(bytes(IP(**back) / TCP(sport=DPORT, dport=SPORT, seq=w(rcv_nxt + 1_001), flags="R")))
        to_snd.send(bytes(IP(**back) / TCP(sport=DPORT, dport=SPORT, seq=rcv_nxt, flags="S")))
        to_snd.send(bytes(IP(**back) / TCP(sport=DPORT, dport=SPORT, seq=rcv_nxt, ack=w(seg.seq + 2**30), flags="A")))
        assert sender.running(), "transfer ended before the injections: make it longer"

        sent = sender.finish()
        got = receiver.finish()
        resets = watch.resets()
        for closable in (tap, to_rcv, to_snd, watch):
            closable.close()

    assert out.read_bytes() == data and got["sha256"] == sent["sha256"] == sha256(data)
    assert int(got["malformed_dropped"]) == len(malformed_to_receiver)
    assert int(sent["malformed_dropped"]) == 1
    assert len(resets) == 4  # exactly the four we injected; nobody else reset anything
    recv_events, send_events = events(tmp_path / "recv.jsonl"), events(tmp_path / "send.jsonl")
    assert ("challenge_ack", "rst") in recv_events and ("challenge_ack", "syn") in recv_events
    for why in ("rst", "syn", "ack"):
        assert ("challenge_ack", why) in send_events
    assert sum(e == "challenge_ack" for e, _ in recv_events) == 2  # the out-of-window RST got no answer
    assert sum(e == "challenge_ack" for e, _ in send_events) == 3


def test_notifications_reach_the_sender_once_and_garbage_is_ignored(tmp_path):
    with netns.Sandbox("ntf") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--time-wait", "0.2", "--notify-port", "0")
        tap = Tap(path.b)
        notify_port = 15434
        sender = OurSender(path, "--port", str(SPORT), "--bytes", "2M", "--scheme", "immediate",
                           "--notify-port", str(notify_port), "--trace", str(tmp_path / "send.jsonl"))
        tap.latest()
        udp = path.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
        handoff = Notification(Event.HANDOFF, 7, RECEIVER, RECEIVER, 1, 2).encode()
        for datagram in (b"hello", handoff, handoff, Notification(Event.HANDOFF, 8, "10.0.9.77", "10.0.9.77").encode(),
                         handoff[:20]):
            udp.sendto(datagram, (SENDER, notify_port))
        udp.close()
        tap.close()
        sent = sender.finish()
        got = receiver.finish()
    assert got["sha256"] == sent["sha256"] and sent["bytes"] == "2000000"
    assert sent["notifications"] == "2"  # seq 7 (once) and seq 8 (for another MH, ignored by the connection)
    recorded = events(tmp_path / "send.jsonl")
    assert [d for e, d in recorded if e == "handoff"] == [f"path={RECEIVER} seq=7"]
    assert any(e == "forced_rto" for e, _ in recorded)  # Immediate Expiration acted on it


def test_receiver_answers_strays_like_a_closed_port_and_keeps_listening(tmp_path):
    """Before any connection, a non-SYN segment to the receiver's port gets a RST (RFC 9293 3.10.7.1)."""
    with netns.Sandbox("cls") as sandbox:
        path = make_path(sandbox)
        receiver = OurReceiver(path, "--time-wait", "0.2", "--notify-port", "0")
        watch = RstWatch(path)
        inject = Injector(path.a, path.link.dev_a, mac_of(path.b, path.link.dev_b))
        inject.send(bytes(IP(src=SENDER, dst=RECEIVER) / TCP(sport=SPORT, dport=DPORT, seq=1, ack=777, flags="A")))
        resets = watch.resets()
        assert len(resets) == 1
        rst = decode(resets[0])
        assert (rst.src, rst.sport, rst.seq, rst.flags) == (RECEIVER, DPORT, 777, 0x04)
        sender = OurSender(path, "--port", str(SPORT), "--bytes", "1M", "--notify-port", "0")
        sent = sender.finish()
        assert receiver.finish()["sha256"] == sent["sha256"]
        inject.close(), watch.close()
