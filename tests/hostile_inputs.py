"""Hypothesis strategies for hostile control-plane input: packet-ins a switch could punt, and control lines.

Every input here must change nothing: it is malformed, names no mobile host,
replays an identification, comes from a port or switch that may not
register, or is a punt reason the controller does not serve. (A well-formed,
fresh registration for a known MH at an access port is *not* hostile in this
protocol: it moves the MH — docs/reliability.md, "What is not defended".)
Each strategy yields `(switch, metadata, payload)` for a packet-in, built
from real frames (controller/packets.py) and mutated structurally.
"""
from __future__ import annotations

import ipaddress
import json
import struct
from typing import Any

from hypothesis import strategies as st

from p4handoff.controller.network import PORT_ACCESS, Network
from p4handoff.controller.packets import MARKER_PORT, ethernet, marker_packet, udp_packet
from p4handoff.controller.registration import FLAG_S, REQUEST_SIZE, RegistrationRequest
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION, load_constants

_C = load_constants()
BUFFER, ARP, REGISTRATION, TELEMETRY, NO_ROUTE = (_C[f"PUNT_REASON_{n}"] for n in
                                                  ("BUFFER", "ARP", "REGISTRATION", "TELEMETRY", "NO_ROUTE"))
MH_MAC = "02:aa:00:00:00:99"
REJECT_EVENTS = {"registration_rejected", "punt_malformed", "punt_dropped", "marker_stale", "marker_forged",
                 "packet_in_ignored", "registration_unauthenticated"}
PacketIn = tuple[str, dict[str, Any], bytes]

addresses = st.integers(1, 2**32 - 2).map(lambda n: str(ipaddress.IPv4Address(n)))
macs = st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b))


def known_addresses(net: Network) -> set[str]:
    """Addresses a punt may legitimately be for (whose packets are buffered or markers routed)."""
    out = {m.address for m in net.mobile_hosts} | {a for m in net.mobile_hosts for _, a in m.cell_addresses}
    return out | {net.controller.address}


def access_points(net: Network) -> list[tuple[str, int]]:
    return [(s.name, p.number) for s in net.base_stations for p in s.ports if p.role == PORT_ACCESS]


def not_allowed_points(net: Network) -> list[tuple[str, int]]:
    """(switch, port) pairs a registration may not come from: gateway ports, BS peer ports, unknown ports."""
    out = [(s.name, p.number) for s in net.switches for p in s.ports if not (s.is_bs and p.role == PORT_ACCESS)]
    return out + [(s.name, 7) for s in net.switches] + [(net.switches[-1].name, 511)]


def registration_frame(src: str, payload: bytes, mac: str = MH_MAC, sport: int = UDP_PORT_MIP_REGISTRATION,
                       dport: int = UDP_PORT_MIP_REGISTRATION) -> bytes:
    return ethernet("ff:ff:ff:ff:ff:ff", mac, udp_packet(src, "255.255.255.255", sport, dport, payload))


def _request(home: str, ident: int, care_of: str | None = None, flags: int = 0, lifetime: int = 0xFFFF) -> bytes:
    return RegistrationRequest(home, care_of or home, "192.168.100.1", lifetime, ident, flags).encode()


@st.composite
def hostile_registration_payload(draw: st.DrawFn, net: Network) -> tuple[str, bytes, str]:
    """(source address, UDP payload, kind) of a request refused at an access port of a BS."""
    mh = draw(st.sampled_from(net.mobile_hosts))
    known = known_addresses(net)
    fresh = draw(st.integers(2**40, 2**64 - 1))           # above any identification the tests use
    kind = draw(st.sampled_from(["truncated", "type", "extension", "zero", "unknown", "replay", "care-of",
                                 "probe-care-of"]))
    good = _request(mh.address, fresh)
    if kind == "truncated":
        payload = good[:draw(st.integers(0, REQUEST_SIZE - 1))]
    elif kind == "type":
        payload = bytes([draw(st.integers(0, 255).filter(lambda t: t != 1))]) + good[1:]
    elif kind == "extension":
        ext_type = draw(st.integers(1, 255))
        claimed = draw(st.integers(1, 255))
        payload = good + bytes([ext_type, claimed]) + draw(st.binary(max_size=claimed - 1))
        if draw(st.booleans()):
            payload = good + bytes([ext_type])                # a type byte without its length
    elif kind == "zero":
        payload = _request("0.0.0.0", fresh, mh.address) if draw(st.booleans()) else good[:12] + bytes(4) + good[16:]
    elif kind == "unknown":
        home = draw(addresses.filter(lambda a: a not in known))
        payload = _request(home, fresh, flags=draw(st.integers(0, 255)), lifetime=draw(st.integers(0, 0xFFFF)))
    elif kind == "replay":
        payload = _request(mh.address, 0, flags=draw(st.sampled_from([0, FLAG_S])),
                           lifetime=draw(st.integers(0, 0xFFFF)))
    elif kind == "care-of":
        payload = _request(mh.address, fresh, draw(addresses.filter(lambda a: a != mh.address)),
                           lifetime=draw(st.integers(1, 0xFFFF)))
    else:
        cells = set(dict(mh.cell_addresses).values())
        payload = _request(mh.address, fresh, draw(addresses.filter(lambda a: a not in cells)), FLAG_S)
    return mh.address, payload, kind


@st.composite
def hostile_registration(draw: st.DrawFn, net: Network) -> PacketIn:
    """A packet-in with reason REGISTRATION that must be refused."""
    how = draw(st.sampled_from(["payload", "where", "framing", "truncate", "metadata"]))
    mh = draw(st.sampled_from(net.mobile_hosts))
    valid_fresh = registration_frame(mh.address, _request(mh.address, draw(st.integers(2**40, 2**64 - 1))))
    switch, port = draw(st.sampled_from(access_points(net)))
    if how == "payload":
        src, payload, _ = draw(hostile_registration_payload(net))
        return switch, {"ingress_port": port, "reason": REGISTRATION}, registration_frame(src, payload)
    if how == "where":        # a fresh, valid request, but from a port or switch that may not register
        switch, port = draw(st.sampled_from(not_allowed_points(net)))
        return switch, {"ingress_port": port, "reason": REGISTRATION}, valid_fresh
    if how == "truncate":     # truncations at every offset of a valid frame
        cut = draw(st.integers(0, len(valid_fresh) - 1))
        return switch, {"ingress_port": port, "reason": REGISTRATION}, valid_fresh[:cut]
    if how == "metadata":
        meta = draw(st.sampled_from([{"reason": REGISTRATION}, {"reason": REGISTRATION, "ingress_port": -1},
                                     {"reason": REGISTRATION, "ingress_port": 512}]))
        return switch, meta, valid_fresh
    frame = bytearray(valid_fresh)
    field = draw(st.sampled_from(["ethertype", "version", "ihl", "total", "proto", "udp_len", "dport"]))
    if field == "ethertype":
        frame[12:14] = struct.pack("!H", draw(st.integers(0, 0xFFFF).filter(lambda t: t != 0x0800)))
    elif field == "version":
        frame[14] = (draw(st.integers(0, 15).filter(lambda v: v != 4)) << 4) | 5
    elif field == "ihl":
        frame[14] = 0x40 | draw(st.integers(0, 4))
    elif field == "total":
        n = len(frame) - 14
        frame[16:18] = struct.pack("!H", draw(st.one_of(st.integers(0, 19), st.integers(n + 1, 0xFFFF))))
    elif field == "proto":
        frame[23] = draw(st.integers(0, 255).filter(lambda p: p != 17))
    elif field == "udp_len":
        n = len(frame) - 34
        frame[38:40] = struct.pack("!H", draw(st.one_of(st.integers(0, 7), st.integers(n + 1, 0xFFFF))))
    else:
        frame[36:38] = struct.pack("!H", draw(st.integers(0, 0xFFFF).filter(lambda p: p != UDP_PORT_MIP_REGISTRATION)))
    return switch, {"ingress_port": port, "reason": REGISTRATION}, bytes(frame)


@st.composite
def hostile_buffer_punt(draw: st.DrawFn, net: Network) -> PacketIn:
    """A packet-in with reason BUFFER that is malformed, for no MH, or a marker nobody awaits."""
    switch = draw(st.sampled_from([s.name for s in net.switches]))
    meta = {"ingress_port": draw(st.integers(0, 511)), "reason": BUFFER}
    known = known_addresses(net) - {net.controller.address}
    kind = draw(st.sampled_from(["random", "stranger", "to-controller", "marker", "forged-marker", "truncated",
                                 "mangled"]))
    mh = draw(st.sampled_from(net.mobile_hosts))
    data = udp_packet("10.0.0.1", mh.address, 5001, 5001, draw(st.binary(min_size=4, max_size=64)))
    if kind == "random":
        frame = draw(st.binary(max_size=200))
        if len(frame) > 30:                 # IPv4 destination in 240/4: never an MH's, never the controller's
            frame = frame[:30] + bytes([0xF0 | frame[30] & 0x0F]) + frame[31:]
    elif kind == "stranger":
        frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01",
                         udp_packet("10.0.0.1", draw(addresses.filter(lambda a: a not in known)), 5001, 5001,
                                    draw(st.binary(max_size=64))))
    elif kind == "to-controller":
        payload = draw(st.binary(max_size=64).filter(lambda p: not p.startswith(b"P4HM")))
        frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01",
                         udp_packet("10.0.0.1", net.controller.address, MARKER_PORT, MARKER_PORT, payload))
    elif kind == "marker":          # forged drain marker: a nonce no handoff is waiting for
        dst = draw(st.sampled_from([net.controller.address, mh.address]))
        frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01",
                         marker_packet("192.0.2.1", dst, draw(st.integers(0, 2**40))))
    elif kind == "forged-marker":   # a marker whose tag was guessed: never reaches the state machine
        dst = draw(st.sampled_from([net.controller.address, mh.address]))
        frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01",
                         udp_packet("10.0.0.1", dst, MARKER_PORT, MARKER_PORT,
                                    b"P4HM" + draw(st.binary(min_size=0, max_size=40))))
    elif kind == "truncated":
        full = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01", data)
        frame = full[:draw(st.integers(0, len(full) - 1))]
    else:
        raw = bytearray(data)
        if draw(st.booleans()):
            raw[0] = (draw(st.integers(0, 15).filter(lambda v: v != 4)) << 4) | 5
        else:
            raw[0] = 0x40 | draw(st.integers(0, 4))
        frame = ethernet("02:00:00:00:00:01", "02:00:00:00:10:01", bytes(raw))
    return switch, meta, frame


@st.composite
def unserved_punt(draw: st.DrawFn, net: Network) -> PacketIn:
    """A packet-in whose reason the controller does not act on (ARP, no route, unknown, missing)."""
    switch = draw(st.sampled_from([s.name for s in net.switches]))
    reason = draw(st.one_of(st.sampled_from([ARP, NO_ROUTE, 0]), st.integers(6, 255), st.none()))
    meta: dict[str, Any] = {"ingress_port": draw(st.integers(0, 511))}
    if reason is not None:
        meta["reason"] = reason
    if draw(st.booleans()):
        meta["id9"] = draw(st.integers(0, 255))      # a field this P4Info does not know
    return switch, meta, draw(st.binary(max_size=120))


def hostile_packet_in(net: Network) -> st.SearchStrategy[PacketIn]:
    return st.one_of(hostile_registration(net), hostile_buffer_punt(net), unserved_punt(net))


# ---- the control socket

_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                            lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                                                      max_size=4), max_leaves=12)


@st.composite
def hostile_control_line(draw: st.DrawFn, net: Network) -> bytes:
    """One request line that must be refused (bad-request or refused), never change the model."""
    names = {m.name for m in net.mobile_hosts} | {m.address for m in net.mobile_hosts}
    stranger = st.text(min_size=0, max_size=30).filter(lambda s: s not in names)
    bs = [s.name for s in net.base_stations]
    kind = draw(st.sampled_from(["bytes", "json", "shape", "unknown-mh", "not-bs", "bad-port", "nested",
                                 "unknown-switch", "unknown-cmd"]))
    if kind == "bytes":
        line = draw(st.binary(max_size=200)).replace(b"\n", b"")
        return line
    if kind == "json":
        value = draw(_json_values.filter(lambda v: not (isinstance(v, dict) and v.get("cmd") in ("status",))))
        if isinstance(value, dict) and value.get("cmd") in ("handoff", "detach", "entries"):
            value["cmd"] = "x"
        return json.dumps(value).encode()
    if kind == "shape":
        cmd = draw(st.sampled_from(["handoff", "detach", "entries", "status"]))
        body: dict[str, Any] = {"cmd": cmd}
        bad = draw(st.sampled_from([None, 1, [], {}, True]))
        if cmd == "status":
            body["counters"] = draw(st.sampled_from(["yes", 1, None, []]))
        else:
            body[{"handoff": "mh", "detach": "mh", "entries": "switch"}[cmd]] = bad
            body["to"] = "bs1"
        return json.dumps(body).encode()
    if kind == "unknown-mh":
        cmd = draw(st.sampled_from(["handoff", "detach"]))
        return json.dumps({"cmd": cmd, "mh": draw(stranger), "to": draw(st.sampled_from(bs))}).encode()
    if kind == "not-bs":
        to = draw(st.one_of(st.just(net.gateway.name), st.text(max_size=10).filter(lambda s: s not in bs)))
        return json.dumps({"cmd": "handoff", "mh": draw(st.sampled_from(sorted(names))), "to": to}).encode()
    if kind == "bad-port":
        port = draw(st.one_of(st.integers(-2**70, 2**70).filter(lambda p: p not in (1,)), st.floats(), st.text(max_size=3)))
        return json.dumps({"cmd": "handoff", "mh": net.mobile_hosts[0].name, "to": draw(st.sampled_from(bs)),
                           "port": port}).encode()
    if kind == "nested":
        depth = draw(st.integers(1000, 30000))
        return b"[" * depth + b"]" * draw(st.sampled_from([0, depth]))
    if kind == "unknown-switch":
        return json.dumps({"cmd": "entries", "switch": draw(st.text(max_size=10))}).encode()
    return json.dumps({"cmd": draw(st.text(max_size=12).filter(lambda c: c not in ("status", "handoff", "detach",
                                                                                    "entries")))}).encode()
