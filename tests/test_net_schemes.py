"""The schemes that need both ends and the notification path, end to end on real packets.

Freeze-TCP: DETACH to the mobile host's receiver closes its window, the
sender freezes (no progress, no RTO) until HANDOFF reopens the window.
DSBP: PROBE_UP makes the sender send marked dummy segments to the MH's
second address, which our receiver answers with marked dummy ACKs; at
HANDOFF the sender moves to that address and sets its window from them.
"""
from __future__ import annotations

import socket
import time

import pytest

from p4handoff import netns
from p4handoff.notify import Event, Notification
from p4handoff.wire import DSCP_LE
from tests.net_support import (NOTIFY, RECEIVER, SENDER, OurReceiver, OurSender, RstWatch, make_path, needs_netns,
                               records, wait_for_data)

pytestmark = needs_netns

from p4handoff.hosts.cc import SCHEMES  # noqa: E402
from p4handoff.hosts.codec import decode  # noqa: E402
from p4handoff.hosts.net.rawio import PacketReceiver  # noqa: E402

SECOND = "10.0.9.3"


def notify(ns: netns.Namespace, to: str, *notes: Notification) -> None:
    udp = ns.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for note in notes:
        udp.sendto(note.encode(), (to, NOTIFY))
    udp.close()


@pytest.mark.skipif("freeze" not in SCHEMES, reason="no freeze scheme")
def test_freeze_receiver_stops_the_sender_on_detach_and_resumes_it_on_handoff(tmp_path):
    with netns.Sandbox("frz") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--scheme", "freeze", "--notify-port", str(NOTIFY), "--time-wait", "0.2",
                               "--trace", str(tmp_path / "recv.jsonl"))
        watch = RstWatch(path)
        sender = OurSender(path, "--scheme", "freeze", "--bytes", "3M", "--notify-port", "0",
                           "--trace", str(tmp_path / "send.jsonl"))
        wait_for_data(path.b)
        notify(path.a, RECEIVER, Notification(Event.DETACH, 1, RECEIVER, RECEIVER))
        time.sleep(1.5)  # "disconnected": longer than the 1 s minimum RTO, so a plain sender would time out
        assert sender.running()
        notify(path.a, RECEIVER, Notification(Event.HANDOFF, 2, RECEIVER, RECEIVER))
        sent = sender.finish()
        got = receiver.finish()
        assert watch.resets() == []
    assert got["sha256"] == sent["sha256"] and sent["bytes"] == "3000000"
    recv_events = [r["event"] for r in records(tmp_path / "recv.jsonl")]
    assert recv_events.index("detach") < recv_events.index("rcv_window_closed") < recv_events.index("handoff") \
        < recv_events.index("rcv_window_opened")
    send = records(tmp_path / "send.jsonl")
    events = [r["event"] for r in send]
    frozen, thawed = events.index("freeze"), events.index("unfreeze")
    assert frozen < thawed
    during = send[frozen:thawed]
    assert not any(r["event"] in ("rto", "fast_retransmit") for r in during)
    assert len({r["snd_una"] for r in during}) == 1  # no progress while frozen
    assert during[-1]["time"] - during[0]["time"] > 1.0
    assert events.count("freeze") == 1


@pytest.mark.skipif("dsbp" not in SCHEMES, reason="no dsbp scheme")
def test_dsbp_probes_the_second_address_with_marked_dummies_and_moves_there_at_handoff(tmp_path):
    with netns.Sandbox("dsb") as sandbox:
        path = make_path(sandbox)
        path.b.run(["ip", "addr", "add", SECOND + "/24", "dev", path.link.dev_b])
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--scheme", "dsbp", "--notify-port", "0", "--time-wait", "0.2",
                               "--trace", str(tmp_path / "recv.jsonl"))
        watch = RstWatch(path)
        sender = OurSender(path, "--scheme", "dsbp", "--bytes", "3M", "--notify-port", str(NOTIFY),
                           "--trace", str(tmp_path / "send.jsonl"))
        wait_for_data(path.b)
        # two captures: probing fills a socket buffer with dummies, which must not
        # crowd out the data that follows the handoff
        probe_tap = path.b.call(lambda: PacketReceiver(5001, SECOND))
        notify(path.b, SENDER, Notification(Event.PROBE_UP, 1, RECEIVER, SECOND))
        time.sleep(0.5)
        probing = [decode(r.packet) for r in probe_tap.receive(1000)]
        probe_tap.close()
        data_tap = path.b.call(lambda: PacketReceiver(5001, SECOND))
        notify(path.b, SENDER, Notification(Event.HANDOFF, 2, RECEIVER, SECOND))
        # a sender in fast recovery with a full window sends nothing new until
        # the hole is repaired (up to its RTO): wait for data, bounded
        after: list = []
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not any(s.payload and not s.dummy for s in after):
            time.sleep(0.05)
            after += [decode(r.packet) for r in data_tap.receive(1000)]
        data_tap.close()
        sent = sender.finish()
        got = receiver.finish()
        resets = watch.resets()
    assert got["sha256"] == sent["sha256"] and sent["bytes"] == "3000000"
    dummies = [s for s in probing if s.dummy]
    data = [s for s in after if not s.dummy and s.payload]
    assert dummies and all(s.dscp == DSCP_LE and s.payload for s in dummies)
    assert data and all(s.dscp == 0 for s in data)  # after HANDOFF the data itself goes to the new address
    answered = sum(r["event"] == "dummy_answered" for r in records(tmp_path / "recv.jsonl"))
    assert answered >= 1
    handoffs = [r for r in records(tmp_path / "send.jsonl") if r["event"] == "dsbp_handoff"]
    assert len(handoffs) == 1
    count = int(handoffs[0]["detail"].split()[0].split("=")[1])
    # how many dummy ACKs fell in the last probe RTT is timing here (a veth's probe RTT can be one clock
    # tick, less than one segment's serialisation, so 0 is a right count): tests/test_cc_dsbp.py checks
    # the count; here, that the sender took the answers in (a foreign segment would have drawn a RST)
    assert resets == []
    assert count <= answered and handoffs[0]["ssthresh"] == max(2, count) * handoffs[0]["mss"]


def test_sender_on_the_mobile_host_turns_its_carrier_loss_into_detach_and_handoff(tmp_path):
    """`--link-events`: the MH's own link going away and coming back restarts an `immediate` sender."""
    with netns.Sandbox("lnk") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--notify-port", "0", "--time-wait", "0.2")
        sender = OurSender(path, "--scheme", "immediate", "--bytes", "3M", "--notify-port", "0", "--link-events",
                           "--trace", str(tmp_path / "send.jsonl"))
        wait_for_data(path.b)
        path.b.run(["ip", "link", "set", "dev", path.link.dev_b, "down"])  # the MH's (a's) end loses carrier
        time.sleep(1.5)  # > 1 s: the kernel reports carrier changes of a veth at most once a second
        path.b.run(["ip", "link", "set", "dev", path.link.dev_b, "up"])
        sent = sender.finish()
        got = receiver.finish()
    assert got["sha256"] == sent["sha256"] and sent["bytes"] == "3000000"
    assert sent["link_events"] == "2"
    events = [(r["event"], r["detail"]) for r in records(tmp_path / "send.jsonl")]
    names = [e for e, _ in events]
    assert ("detach", f"path={SENDER} seq=1") in events and ("handoff", f"path={SENDER} seq=2") in events
    assert names.index("detach") < names.index("handoff") < names.index("forced_rto")
