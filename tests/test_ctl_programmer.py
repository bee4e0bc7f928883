"""The model as P4 entries (programmer), the desired-vs-actual diff, and packet-out frames."""
from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4handoff.controller.intents import Deliver, Forward, Notify, Punt, Release, Reply, SendToward, Tunnel
from p4handoff.controller.network import load_network
from p4handoff.controller.p4runtime import TableEntry, UpdateType
from p4handoff.controller.programmer import PUNT_REASON_BUFFER, Programmer, ip, mac
from p4handoff.controller.registration import ReplyCode
from p4handoff.controller.switch_state import SwitchState, diff
from p4handoff.controller.transmit import Transmitter
from p4handoff.notify import Event, Notification
from p4handoff.wire import IP_PROTO_IPIP, UDP_PORT_HANDOFF_NOTIFY

ROOT = Path(__file__).resolve().parent.parent
NET = load_network(ROOT / "topo" / "three-switch.yaml")
P = Programmer(NET)


def by_table(entries: list[TableEntry], table: str) -> list[TableEntry]:
    return [e for e in entries if e.table == table]


def test_static_entries_of_a_base_station():
    es = P.static_entries("bs1")
    roles = {e.match["port"]: e.params["role"] for e in by_table(es, "port_role")}
    assert roles == {1: 1, 2: 2, 3: 2}                          # access, peer, peer
    peers = {(e.match["ingress_port"], e.match["src_addr"]) for e in by_table(es, "ipf_peer")}
    assert peers == {(2, ip("192.168.100.1")), (3, ip("192.168.100.3"))}
    assert [e.match for e in by_table(es, "tunnel_term")] == [{"dst_addr": ip("192.168.100.2")}]
    [arp] = by_table(es, "arp_gateway")
    assert arp.match == {"target_addr": ip("10.0.1.254")} and arp.params == {"mac": mac("02:00:00:00:01:fe")}
    default, ctl = by_table(es, "ipv4_fwd")[::-1]
    assert ctl.match == {"dst_addr": (ip("192.0.2.1"), 32)} and ctl.params == {"reason": PUNT_REASON_BUFFER}
    assert default.match == {} and default.action == "deliver"  # /0 towards the gateway: field omitted
    assert default.params == {"port": 2, "src_mac": mac("02:00:00:00:00:02"), "dst_mac": mac("02:00:00:00:00:01")}
    [aqm] = by_table(es, "aqm_port")
    assert aqm.params["mode"] == 2 and aqm.params["qlimit"] == 300 and aqm.params["dummy_th"] == 150
    assert by_table(es, "red_pb") and by_table(es, "red_pa") and by_table(es, "aqm_idle")


def test_static_entries_of_the_gateway():
    es = P.static_entries("gw")
    assert not by_table(es, "aqm_port")                           # no access port
    ctl, ch = by_table(es, "ipv4_fwd")
    assert ctl.action == "fwd_punt"                               # drain markers come back from here
    assert ch.match == {"dst_addr": (ip("10.0.0.1"), 32)}
    assert ch.params == {"port": 1, "src_mac": mac("02:00:00:00:00:01"), "dst_mac": mac("02:00:00:00:10:01")}
    [arp] = by_table(es, "arp_gateway")
    assert arp.match == {"target_addr": ip("10.0.0.254")} and arp.params == {"mac": mac("02:00:00:00:00:01")}
    assert P.ipf_config().params == {"dscp": 43} and P.ipf_config().is_default


def test_ports_with_equal_red_parameters_share_one_profile(tmp_path):
    text = (ROOT / "topo" / "three-switch.yaml").read_text()
    text = text.replace("      - {number: 2, role: peer, peer: gw}\n      - {number: 3, role: peer, peer: bs2}",
                        "      - {number: 2, role: peer, peer: gw}\n      - {number: 3, role: peer, peer: bs2}\n"
                        "      - number: 4\n        role: access\n        aqm: {mode: mred, limit: 300, min_th: 100,"
                        " max_th: 200, max_p: 0.02, w_q: 0.001953125, mean_pkt_time_us: 2048}\n"
                        "      - number: 5\n        role: access\n        aqm: {mode: red, limit: 64, min_th: 5,"
                        " max_th: 15, max_p: 0.1, w_q: 0.0078125}", 1)
    f = tmp_path / "net.yaml"
    f.write_text(text)
    es = Programmer(load_network(f)).static_entries("bs1")
    profiles = {e.match["port"]: e.params["profile"] for e in by_table(es, "aqm_port")}
    assert profiles == {1: 0, 4: 0, 5: 1}
    assert {e.match["profile"] for e in by_table(es, "red_pb")} == {0, 1}
    assert len(SwitchState(es).entries()) == len(es)             # no duplicate key


@pytest.mark.parametrize("switch, action", [
    ("bs2", Deliver(1, "02:aa:00:00:00:01")),
    ("gw", Forward("bs2")),
    ("bs1", Tunnel("bs2", True)),
    ("bs1", Tunnel("bs2", False)),
    ("bs1", Punt()),
])
def test_route_entries_decode_back_to_their_intent(switch, action):
    e = P.route_entry(switch, "10.0.1.1", action)
    assert e.match == {"dst_addr": (ip("10.0.1.1"), 32)}
    assert P.decode_route(switch, e) == ("10.0.1.1", action)


def test_route_entry_parameters():
    t = P.route_entry("bs1", "10.0.1.1", Tunnel("bs2", True))
    assert t.action == "tunnel" and t.params == {
        "port": 3, "src_mac": mac("02:00:00:00:00:02"), "dst_mac": mac("02:00:00:00:00:03"),
        "src_addr": ip("192.168.100.2"), "dst_addr": ip("192.168.100.3"), "mark": 1}
    d = P.route_entry("bs2", "10.0.1.1", Deliver(1, "02:aa:00:00:00:01"))
    assert d.params["src_mac"] == mac("02:00:00:00:01:fe")     # the anycast gateway on access ports
    assert P.route_entry("bs1", "10.0.1.1", Punt()).params == {"reason": PUNT_REASON_BUFFER}
    with pytest.raises(ValueError, match="unknown switch 'ch'"):
        P.route_entry("bs1", "10.0.1.1", Tunnel("ch", True))


def test_entries_that_are_not_mobility_routes_do_not_decode():
    assert P.decode_route("bs1", P.static_entries("bs1")[0]) is None
    default = by_table(P.static_entries("bs1"), "ipv4_fwd")[-1]
    assert default.match == {} and P.decode_route("bs1", default) is None      # the /0
    assert P.decode_route("bs1", TableEntry("ipv4_fwd", {"dst_addr": (ip("10.0.1.0"), 24)}, "fwd_drop")) is None


def test_diff_gives_minimal_writes_and_no_duplicates():
    a = P.route_entry("bs1", "10.0.1.1", Punt())
    b = P.route_entry("bs1", "10.0.1.2", Deliver(1, "02:aa:00:00:00:02"))
    b2 = P.route_entry("bs1", "10.0.1.2", Deliver(1, "02:aa:00:00:00:09"))
    stale = P.route_entry("bs1", "10.0.1.3", Tunnel("bs2", True))
    static = P.static_entries("bs1")
    plan = diff(static + [a, b2], static + [b, stale])
    assert plan.inserts == [a] and plan.modifies == [b2] and plan.deletes == [stale]
    kinds = [k for k, _ in plan.updates()]
    assert kinds == [UpdateType.DELETE, UpdateType.MODIFY, UpdateType.INSERT]
    assert len(diff(static, static)) == 0
    with pytest.raises(ValueError, match="two entries"):
        diff([a, a], [])


def test_switch_state_turns_route_changes_into_single_updates():
    st = SwitchState(P.static_entries("bs1"))
    key = P.route_key("10.0.1.1")
    punt = P.route_entry("bs1", "10.0.1.1", Punt())
    tun = P.route_entry("bs1", "10.0.1.1", Tunnel("bs2", True))
    assert st.update_for(punt, key) == (UpdateType.INSERT, punt)
    st.applied([(UpdateType.INSERT, punt)])
    assert st.update_for(punt, key) is None
    assert st.update_for(tun, key) == (UpdateType.MODIFY, tun)
    st.applied([(UpdateType.MODIFY, tun)])
    assert st.update_for(None, key) == (UpdateType.DELETE, tun)
    st.applied([(UpdateType.DELETE, tun)])
    assert st.get(key) is None and st.update_for(None, key) is None


def test_packet_outs():
    tx = Transmitter(NET)
    inner = bytes(IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=5001, dport=5001) / b"x")
    out = tx.packet_out(Release("mh1", inner, "bs1", "bs2", 1, "02:aa:00:00:00:01", True))
    f = Ether(out.frame)
    assert (out.switch, out.egress_port, out.mark_priority) == ("bs1", 3, True)
    assert f.src == "02:00:00:00:00:02" and f.dst == "02:00:00:00:00:03"
    assert f[IP].proto == IP_PROTO_IPIP and (f[IP].src, f[IP].dst) == ("192.168.100.2", "192.168.100.3")
    assert bytes(f[IP].payload) == inner
    assert out.metadata() == {"egress_port": 3, "mark_priority": 1, "lookup": 0, "telemetry": 0}
    direct = tx.packet_out(Release("mh1", inner, "bs2", "bs2", 1, "02:aa:00:00:00:01", False))
    assert (direct.switch, direct.egress_port, direct.mark_priority) == ("bs2", 1, True)
    assert Ether(direct.frame).src == "02:00:00:00:01:fe" and bytes(Ether(direct.frame)[IP]) == inner
    # the old BS is down (killed, restarting): the release leaves the new BS straight onto the MH's port
    rerouted = tx.packet_out(Release("mh1", inner, "bs1", "bs2", 1, "02:aa:00:00:00:01", True), lambda s: s != "bs1")
    assert (rerouted.switch, rerouted.egress_port, rerouted.frame) == ("bs2", 1, direct.frame)
    both_down = tx.packet_out(Release("mh1", inner, "bs1", "bs2", 1, "02:aa:00:00:00:01", True), lambda s: False)
    assert both_down.switch == "bs1"
    toward = tx.packet_out(SendToward("gw", "bs1", inner))
    assert (toward.switch, toward.egress_port, toward.mark_priority) == ("gw", 2, False)
    note = Notification(Event.HANDOFF, 5, "10.0.1.1", "10.0.1.1", 1, 2)
    n = tx.packet_out(Notify(note, "ch", "10.0.0.1", "gw", 1, "02:00:00:00:10:01"))
    nf = Ether(n.frame)
    assert nf[IP].dst == "10.0.0.1" and nf[IP].src == "192.0.2.1" and nf[UDP].dport == UDP_PORT_HANDOFF_NOTIFY
    assert Notification.decode(bytes(nf[UDP].payload)) == note
    r = tx.packet_out(Reply("bs1", 1, "02:aa:00:00:00:01", "10.0.1.1", 40000, ReplyCode.ACCEPTED, b"\x03" + bytes(19)))
    rf = Ether(r.frame)
    assert (rf[IP].src, rf[UDP].sport, rf[UDP].dport, rf.src) == ("10.0.1.254", 434, 40000, "02:00:00:00:01:fe")


P4INFO = ROOT / "build" / "bs.p4info.txtpb"


@pytest.mark.bmv2
@pytest.mark.skipif(not P4INFO.exists(), reason=f"{P4INFO} not built (p4c-bm2-ss missing or 'make build' not run)")
def test_every_entry_encodes_against_the_real_p4info_and_reads_back_equal():
    from p4handoff.controller.p4runtime import P4Info
    from p4handoff.controller.p4runtime.entities import normalize
    p4info = P4Info.load(P4INFO)
    for sw in NET.switches:
        entries = P.static_entries(sw.name) + [
            P.route_entry(sw.name, "10.0.1.1", a) for a in (
                [Deliver(1, "02:aa:00:00:00:01"), Punt(), Tunnel("bs2" if sw.name != "bs2" else "bs1", True)]
                if sw.is_bs else [Forward("bs1"), Punt()])]
        for e in entries:
            n = normalize(p4info, e)
            assert (n.table, dict(n.match), n.action, dict(n.params), n.priority) == \
                (e.table, dict(e.match), e.action, dict(e.params), e.priority), e
    normalize(p4info, P.ipf_config())



def test_a_route_entry_is_one_object_per_switch_address_and_action():
    """Programmer.route_entry's memo: a client's Writes encode an object once (EncodedEntries)."""
    p = Programmer(NET)
    addr = NET.mobile_hosts[0].address
    assert p.route_entry("bs1", addr, Punt()) is p.route_entry("bs1", addr, Punt())
    assert p.route_entry("bs2", addr, Punt()) is not p.route_entry("bs1", addr, Punt())
    assert p.route_entry("bs1", addr, Punt()) == Programmer(NET).route_entry("bs1", addr, Punt())
    assert p.route_key(addr) is p.route_key(addr)
