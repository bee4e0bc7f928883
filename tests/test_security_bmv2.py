"""A host in a cell can no longer move another MH's traffic (issue 23), through real switches.

mh1 is attached at bs1 and receiving a stream from the correspondent. A
second host in bs2's cell sends well-formed registrations for mh1's home
address with fresh identifications: without the authentication extension,
signed with its own (mh2's) key, and under the wrong SPI. BMv2 punts each,
the real `ctl run` refuses each with code 131: every switch's entries stay as
they were and mh1 receives its whole stream at bs1. Skips by name and reason
where BMv2, the program or namespaces are missing (tests/bmv2_support.py).
"""
from __future__ import annotations

import time

import pytest

from p4handoff.controller.packets import ethernet, udp_packet
from p4handoff.controller.registration import RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.registration_auth import sign, verify_reply
from p4handoff.keyfile import HostKey
from p4handoff.topo.testbed import SWITCH_IP, Collector, mh_ip, mh_name, parse_udp_frame, received_seqs
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
from p4handoff.ntptime import ntp_time
from tests.bmv2_support import BMV2_NETNS_MARKS, running_testbed
from tests.bmv2_support import attach, send_stream

pytestmark = BMV2_NETNS_MARKS
INTRUDER_MAC = "02:bb:00:00:00:66"


@pytest.fixture
def tb(tmp_path):
    with running_testbed(tmp_path, n_mobiles=2) as bed:
        yield bed


def test_a_stranger_cannot_register_another_mhs_address(tb):
    attach(tb, 0, "bs1", 1)
    attach(tb, 1, "bs2", 1)
    assert tb.keys is not None
    own = tb.keys.get(mh_name(1))
    assert own is not None
    before = {n: tb.ctl({"cmd": "entries", "switch": n})["entries"] for n in ("gw", "bs1", "bs2")}
    cell1, cell2 = Collector(tb.hosts["cell1"]), Collector(tb.hosts["cell2"])
    n, gap = 200, 0.01
    sender = send_stream(tb, 0, range(n), gap)
    forgeries = {
        "unauthenticated": lambda raw: raw,
        "another MH's key": lambda raw: sign(raw, own),
        "wrong SPI": lambda raw: sign(raw, HostKey(own.key, own.spi + 1)),
    }
    sent = 0
    for _ in range(5):
        for forge in forgeries.values():
            req = RegistrationRequest(mh_ip(0), mh_ip(0), SWITCH_IP["gw"], 0xFFFF, ntp_time(time.time()))
            frame = ethernet("ff:ff:ff:ff:ff:ff", INTRUDER_MAC, udp_packet(
                mh_ip(0), "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
                forge(req.encode())))
            tb.hosts["cell2"].send(frame)
            sent += 1
        time.sleep(0.3)
    sender.join(10)
    time.sleep(1.0)
    got1 = [s for s, _ in received_seqs(cell1.stop(), mh_ip(0))]
    frames2 = cell2.stop()
    st = tb.mh_status(0)
    assert st["bs"] == "bs1" and st["phase"] == "attached"
    assert got1 == list(range(n)), f"mh1's transfer lost {sorted(set(range(n)) - set(got1))}"
    assert received_seqs(frames2, mh_ip(0)) == []
    assert {n: tb.ctl({"cmd": "entries", "switch": n})["entries"] for n in ("gw", "bs1", "bs2")} == before
    refused = tb.ctl({"cmd": "status", "counters": False})["registrations_unauthenticated"]
    assert refused["missing"] == 5 and refused["bad_mac"] == 5 and refused["wrong_spi"] == 5
    replies = [u for u in (parse_udp_frame(f) for f in frames2)
               if u is not None and u.sport == UDP_PORT_MIP_REGISTRATION and u.dst == mh_ip(0)]
    codes = [RegistrationReply.decode(u.payload).code for u in replies]
    assert codes.count(ReplyCode.FAILED_AUTHENTICATION) == sent
    mh1_key = tb.keys.get(mh_name(0))
    assert mh1_key is not None and all(verify_reply(u.payload, mh1_key) == "" for u in replies)
    assert not tb.log_events("internal_error")


def test_notifications_to_the_correspondent_carry_a_valid_trailer(tb):
    from p4handoff.notify import Event, Notification
    from p4handoff.notify_auth import Opener
    from p4handoff.wire import UDP_PORT_HANDOFF_NOTIFY
    attach(tb, 0, "bs1", 1)
    ch = Collector(tb.hosts["ch"])
    tb.register(0, "bs2", 2, wait_reply=0)
    tb.wait_for(lambda s: tb.mh_status(0)["bs"] == "bs2", timeout=10)
    time.sleep(0.5)
    ch_key = tb.keys.get("ch") if tb.keys is not None else None
    assert ch_key is not None
    opener = Opener(ch_key.key)
    got = [Notification.decode(opener.open(u.payload)) for u in (parse_udp_frame(f) for f in ch.stop())
           if u is not None and u.dport == UDP_PORT_HANDOFF_NOTIFY]
    assert [(x.event, x.mh_addr) for x in got] == [(Event.HANDOFF, mh_ip(0))]
