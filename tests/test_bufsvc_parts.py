"""The buffer service's sans-IO parts: the authenticated channel (bufsvc_wire.py), the release pacer
(bufsvc_pacer.py), the description's buffer_service and the routes the programmer makes of it."""
from __future__ import annotations

import copy
import queue
import socket

import pytest
import yaml

from p4handoff.controller.bufsvc_link import ServiceArrivals, ServiceLink, ServiceState
from p4handoff.controller.bufsvc_pacer import ReleasePacer
from p4handoff.controller.bufsvc_wire import ARRIVALS, RELEASE, Channel, ChannelError, pack_items, unpack_items
from p4handoff.controller.intents import Punt
from p4handoff.controller.network import NetworkError, parse_network
from p4handoff.controller.programmer import Programmer

KEY = bytes(range(32))


def handshake(svc_key: bytes = KEY, ctl_key: bytes = KEY) -> tuple[Channel, Channel]:
    svc, ctl = Channel(svc_key, "service"), Channel(ctl_key, "controller")
    _, auth = ctl.feed(svc.hello())
    _, welcome = svc.feed(auth)
    ctl.feed(welcome)
    return svc, ctl


def test_both_ends_authenticate_and_frames_pass_in_order_split_anywhere():
    svc, ctl = handshake()
    assert svc.ready and ctl.ready
    items = [("192.168.100.2", bytes(range(40))), ("192.168.100.3", b"\x45" + bytes(59))]
    data = ctl.frame(RELEASE, pack_items(7, items)) + ctl.frame(ARRIVALS, pack_items(1, []))
    got = []
    for i in range(0, len(data), 5):                  # TCP delivers in any chunks
        got += svc.feed(data[i:i + 5])[0]
    assert [k for k, _ in got] == [RELEASE, ARRIVALS]
    assert unpack_items(got[0][1]) == (7, items)


def test_the_controllers_link_keeps_arrivals_that_come_in_one_read_with_the_handshakes_end():
    """The service sends what was not acknowledged right behind its last handshake message; over loopback TCP
    (one `sendall` here, as TCP_NODELAY made it happen) the controller's link reads both at once."""
    listener = socket.create_server(("127.0.0.1", 0))
    posted: queue.Queue[object] = queue.Queue()
    link = ServiceLink(f"127.0.0.1:{listener.getsockname()[1]}", KEY, posted.put, lambda e, f: None)
    link.start()
    items = [("192.168.100.2", b"\x45" + bytes(39))]
    try:
        listener.settimeout(5)
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            svc = Channel(KEY, "service")
            conn.sendall(svc.hello())
            _, welcome = svc.feed(conn.recv(4096))
            assert svc.ready
            conn.sendall(welcome + svc.frame(ARRIVALS, pack_items(1, items)))
            got = [posted.get(timeout=5), posted.get(timeout=5)]
    finally:
        link.stop()
        listener.close()
    assert got == [ServiceState(True), ServiceArrivals(1, items)]


def test_a_wrong_key_is_refused_at_either_end():
    svc, ctl = Channel(KEY, "service"), Channel(b"\x01" * 32, "controller")
    _, auth = ctl.feed(svc.hello())
    with pytest.raises(ChannelError, match="does not check"):
        svc.feed(auth)
    # a service with the wrong key cannot pass itself off as the service either
    svc2, ctl2 = Channel(b"\x02" * 32, "service"), Channel(KEY, "controller")
    _, auth = ctl2.feed(svc2.hello())
    forged = Channel(b"\x02" * 32, "service", nonce=svc2.nonce)
    with pytest.raises(ChannelError):
        _, welcome = forged.feed(auth)


def test_replayed_reordered_or_altered_frames_are_refused():
    svc, ctl = handshake()
    f1, f2 = ctl.frame(RELEASE, pack_items(1, [])), ctl.frame(RELEASE, pack_items(2, []))
    with pytest.raises(ChannelError, match="out of order"):
        svc.feed(f2)
    svc, ctl = handshake()
    f1 = ctl.frame(RELEASE, pack_items(1, []))
    svc.feed(f1)
    with pytest.raises(ChannelError, match="out of order"):
        svc.feed(f1)                                  # the same frame again: a replay
    svc, ctl = handshake()
    f1 = bytearray(ctl.frame(RELEASE, pack_items(1, [("10.0.0.1", b"abc")])))
    f1[-20] ^= 1
    with pytest.raises(ChannelError, match="not authenticated"):
        svc.feed(bytes(f1))
    other, _ = handshake()                            # a frame of another connection
    with pytest.raises(ChannelError):
        other.feed(handshake()[1].frame(RELEASE, pack_items(1, [])))


def test_the_pacer_keeps_order_and_at_most_a_window_per_bs_unechoed():
    p = ReleasePacer(window=8)
    p.add(1, [("A", bytes([i])) for i in range(20)] + [("B", b"b")])
    sent = p.pump(0.0)
    releases = [s for s in sent if s.echo is None]
    assert [s.packet for s in releases] == [bytes([i]) for i in range(8)]      # A's window; B waits behind A
    echoes = [s.echo for s in sent if s.echo is not None]
    assert len(echoes) == 4 and p.inflight["A"] == 8                           # every quarter window
    assert p.echoed(echoes[0]) == [] and p.inflight["A"] == 6
    more = [s for s in p.pump(0.0) if s.echo is None]
    assert [s.packet for s in more] == [bytes([8]), bytes([9])]
    done: list[int] = []
    while p.echoes or p.queue:
        for nonce in list(p.echoes):
            done += p.echoed(nonce)
        p.pump(0.0)
    assert done == [1] and p.inflight == {"A": 0, "B": 0}


def test_a_lost_echo_gives_its_credit_back_after_the_timeout_and_batches_finish_in_order():
    p = ReleasePacer(window=4)
    p.add(1, [("A", b"1")])
    p.add(2, [("B", b"2")])
    sent = p.pump(0.0)
    echo_a, echo_b = (s.echo for s in sent if s.echo is not None)
    assert p.echoed(echo_b) == []                      # batch 2 is through, but batch 1 is older
    assert p.echoed(12345) == []                       # not an echo it sent (forged or stale): ignored
    assert p.expire(1.0) == []
    assert p.expire(5.0) == [1, 2] and p.timeouts == 1


def service_network(tmp_path, **svc) -> dict:
    doc = yaml.safe_load(open("topo/three-switch.yaml"))
    doc = copy.deepcopy(doc)
    keys = tmp_path / "keys.yaml"
    keys.write_text("hosts: {}\n")
    keys.chmod(0o600)
    doc["controller"].pop("auth", None)
    doc["controller"]["keys"] = str(keys)
    for sw in doc["switches"]:
        sw["ports"].append({"number": 9, "role": "buffer"})
    doc["buffer_service"] = {"address": "192.168.100.9", "mac": "02:00:00:00:00:09", "control": "127.0.0.1:5099",
                             **svc}
    return doc


def test_with_a_buffer_service_punt_is_a_tunnel_to_it_out_of_the_buffer_port(tmp_path):
    net = parse_network(service_network(tmp_path))
    prog = Programmer(net)
    for sw in net.switches:
        entry = prog.route_entry(sw.name, "10.0.1.1", Punt())
        assert entry.action == "tunnel" and entry.params["port"] == 9 and entry.params["mark"] == 0
        assert prog.decode_route(sw.name, entry) == ("10.0.1.1", Punt())
        static = prog.static_entries(sw.name)
        assert any(e.table == "ipf_peer" and e.match["ingress_port"] == 9 for e in static)
        assert any(e.table == "port_role" and e.match["port"] == 9 for e in static)


def test_buffer_ports_and_the_service_must_come_together(tmp_path):
    doc = service_network(tmp_path)
    doc["switches"][0]["ports"].pop()
    with pytest.raises(NetworkError, match="exactly one buffer port"):
        parse_network(doc)
    doc = service_network(tmp_path)
    del doc["buffer_service"]
    with pytest.raises(NetworkError, match="needs a buffer_service"):
        parse_network(doc)
    doc = service_network(tmp_path, address=doc["switches"][0]["address"])
    with pytest.raises(NetworkError, match="already another"):
        parse_network(doc)


def test_with_a_service_releases_and_their_drain_marker_are_tunnelled_even_between_unpeered_bss(tmp_path):
    """The service reaches every BS through its own buffer port, so a handoff between BSs that are not
    peered still releases by tunnel (from the service), and the drain marker follows the releases on that
    path; a BS that still diverts the MH (it came back mid-handoff) is released to directly."""
    from p4handoff.controller.intents import Release, SendToward
    from p4handoff.controller.mobility import Mobility
    from p4handoff.controller.packets import udp_packet

    doc = service_network(tmp_path)
    for sw in doc["switches"]:
        sw["ports"] = [p for p in sw["ports"] if not (p.get("role") == "peer" and {sw["name"], p["peer"]} ==
                                                        {"bs1", "bs2"})]
    net = parse_network(doc)
    assert not net.peered("bs1", "bs2")
    mob = Mobility(net, seed=1)
    st = mob.state("mh1")
    mob.ipf.attach(st, "bs1", 1, "02:aa:00:00:00:01", 0.0, "test")
    mob.detach("mh1", 0.1)
    for seq in range(3):
        mob.packet_in("bs1", udp_packet("10.0.0.1", "10.0.1.1", 1, 2, bytes([seq])), 0.2)
    fx = mob.move("mh1", "bs2", 0.3)
    rel = [e for e in fx if isinstance(e, Release)]
    assert len(rel) == 4 and all(r.tunnel and r.target == "bs2" for r in rel)     # 3 packets + the drain marker
    assert not [e for e in fx if isinstance(e, SendToward) and e.switch == "bs2"]
    # back at bs1 before the handoff completed: bs1 diverts, so releases there are direct
    mob.move("mh1", "bs1", 0.31)
    mob.packet_in("bs1", udp_packet("10.0.0.1", "10.0.1.1", 1, 2, b"x"), 0.32)
    assert st.bs == "bs1" and not st.release_tunnel
