"""The controller's CPU per handoff without BMv2: bench/controller.py's `--inmemory` (docs/controller.md).

The real daemon (`Daemon`, its sessions' packet-in decoding, `P4RuntimeClient`'s Write and packet-out
building) runs in this process against switches that answer at once: each client's gRPC stub and stream
are replaced by `_OfflineStub` / `_OfflineStream`, which serialise every request as gRPC would and send
nothing. A marker the daemon sends toward a peer comes straight back as that peer's packet-in, as the
switches punt it. The network is the benchmark's testbed (topo/testbed.py: gw, bs1, bs2; N MHs with keys,
signed registrations); all MHs attach at bs1 (not measured), then `movers` of them register at the other
BS at once, `rounds` times (ping-pong). Measured: the process's CPU time from the first registration
posted to the last `handoff_active` logged, per handoff; profiled (cProfile) in a separate pass, per
stage. What it leaves out: gRPC's own sending and receiving, and the switches.
"""
from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ctl_profile import STAGES, stage_table
from p4handoff.controller.daemon import Daemon
from p4handoff.controller.intents import Punt
from p4handoff.controller.eventlog import JsonLog
from p4handoff.controller.network import Switch, parse_network
from p4handoff.controller.p4runtime import P4RuntimeClient
from p4handoff.controller.p4runtime._protos import p4runtime_pb2
from p4handoff.controller.p4runtime.client import EncodedEntries
from p4handoff.controller.packets import PacketError, ethernet, parse_ipv4, split_ethernet, udp_packet
from p4handoff.controller.punts import REASON_BUFFER, REASON_REGISTRATION, REASON_TELEMETRY
from p4handoff.controller.registration import RegistrationRequest
from p4handoff.controller.registration_auth import sign
from p4handoff.controller.replay_journal import NotificationSequence
from p4handoff.controller.session import Connected
from p4handoff.keyfile import write_keys
from p4handoff.ntptime import ntp_time
from p4handoff.topo.testbed import CH_IP, CH_MAC, GATEWAY_IP, GATEWAY_MAC, SWITCH_IP, SWITCH_MAC, cell_ip, mh_ip, mh_mac, mh_name
from p4handoff.wire import TELEMETRY, UDP_PORT_MIP_REGISTRATION

IPPROTO_IPIP = 4

# the encoding stages this benchmark adds to the daemon's (bench/ctl_profile.py)
INMEMORY_STAGES = STAGES + [
    ("packet-in decoding (session, receiver thread)", "controller/session.py", "_packet_in"),
    ("route entries encoded (table_entry_bytes; before: encode_table_entry)", "controller/p4runtime/entities.py",
     ("table_entry_bytes", "encode_table_entry")),
    ("Write requests built (write_request)", "controller/p4runtime/client.py", "write_request"),
    ("packet-out frames (Transmitter.packet_out)", "controller/transmit.py", "packet_out"),
    ("packet-out messages (packet_out_message)", "controller/p4runtime/client.py", "packet_out_message"),
    ("requests serialised (what gRPC would do)", "bench/ctl_inmemory.py", "_serialise"),
]


def _serialise(request: Any) -> int:
    return len(request.SerializeToString())


class _Done:
    def result(self) -> None:
        return None


class _Write:
    def __call__(self, request: p4runtime_pb2.WriteRequest, timeout: float | None = None) -> None:
        _serialise(request)

    def future(self, request: p4runtime_pb2.WriteRequest, timeout: float | None = None) -> _Done:
        _serialise(request)
        return _Done()


class _OfflineStub:
    """The P4Runtime stub of a switch that accepts everything at once (no pipeline until one is pushed)."""

    def __init__(self) -> None:
        self.Write = _Write()

    def GetForwardingPipelineConfig(self, request: Any, timeout: float | None = None) -> Any:
        return p4runtime_pb2.GetForwardingPipelineConfigResponse()

    def SetForwardingPipelineConfig(self, request: Any, timeout: float | None = None) -> None:
        _serialise(request)


class _OfflineStream:
    """The stream of one switch: packet-outs are serialised; a drain or gateway marker (a frame to the
    controller's address out of a peer port) comes back at once as the peer's packet-in."""

    alive = True
    is_primary = True

    def __init__(self, bench: "InMemory", switch: str) -> None:
        self.bench, self.switch = bench, switch

    def send(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        _serialise(request)
        self.bench.packet_out(self.switch, request.packet)


def offline_client(bench: "InMemory", switch: str) -> P4RuntimeClient:
    """A real P4RuntimeClient whose stub and stream are the offline ones (its own code runs unchanged)."""
    client = P4RuntimeClient.__new__(P4RuntimeClient)
    client.address, client.device_id, client.election_id, client.timeout = f"offline:{switch}", 0, (0, 10), 10.0
    client.p4info = None
    client._packet_out_headers, client._packet_out_info, client._encoded = {}, None, EncodedEntries()
    client._stub = _OfflineStub()                       # type: ignore[assignment]
    client.stream = _OfflineStream(bench, switch)       # type: ignore[assignment]
    return client


def description(workdir: Path, n: int) -> dict[str, Any]:
    """The benchmark testbed's network (topo/testbed.py), its gRPC addresses unused."""
    write_keys(workdir / "keys.yaml", [mh_name(i) for i in range(n)] + ["ch"])

    def sw(name: str, role: str, ports: list[dict]) -> dict:
        return {"name": name, "role": role, "grpc": f"127.0.0.1:{50000 + int(SWITCH_IP[name].rsplit('.', 1)[1])}", "device_id": 0, "address": SWITCH_IP[name],
                "mac": SWITCH_MAC[name], "ports": ports, **({"cell_id": int(name[-1])} if role == "bs" else {})}
    access = {"number": 1, "role": "access", "aqm": {"mode": "mred", "limit": 64, "min_th": 16, "max_th": 48,
                                                     "max_p": 0.1, "w_q": 0.001953125}}
    return {
        "controller": {"election_id": 10, "socket": str(workdir / "ctl.sock"), "hold_time_ms": 200,
                       "keys": str(workdir / "keys.yaml")},
        "buffer": {"per_mh_packets": 64, "total_packets": max(4096, 64 * n)},
        "punt_budget": {"packets_per_s": 10_000, "burst": 2_000},
        "access_gateway": {"address": GATEWAY_IP, "mac": GATEWAY_MAC},
        "switches": [
            sw("gw", "gateway", [{"number": 1, "role": "core"}, {"number": 2, "role": "peer", "peer": "bs1"},
                                 {"number": 3, "role": "peer", "peer": "bs2"}]),
            sw("bs1", "bs", [access, {"number": 2, "role": "peer", "peer": "gw"},
                             {"number": 3, "role": "peer", "peer": "bs2"}]),
            sw("bs2", "bs", [access, {"number": 2, "role": "peer", "peer": "gw"},
                             {"number": 3, "role": "peer", "peer": "bs1"}]),
        ],
        "fixed_hosts": [{"name": "ch", "address": CH_IP, "mac": CH_MAC, "switch": "gw",
                         "port": 1}],
        "mobile_hosts": [{"name": mh_name(i), "address": mh_ip(i), "mac": mh_mac(i), "correspondents": ["ch"],
                          "cell_addresses": {"bs1": cell_ip(i, "bs1"), "bs2": cell_ip(i, "bs2")}}
                         for i in range(n)],
    }


class _CountingLog(JsonLog):
    """The daemon's log (a file, held and flushed as in `ctl run`), counting the handoffs that completed."""

    active = 0

    def __call__(self, event: str, fields: dict[str, Any]) -> None:
        if event == "handoff_active":
            self.active += 1
        super().__call__(event, fields)


class InMemory:
    """One daemon over offline switches; `round(bs)` moves the movers there and returns its CPU seconds."""

    def __init__(self, workdir: Path, n: int, movers: int) -> None:
        self.n, self.movers = n, movers
        self.net = parse_network(description(workdir, n))
        self.logfile = open(workdir / "controller.log", "w")
        self.log = _CountingLog(self.logfile)
        self.daemon = d = Daemon(self.net, self.log)
        if d.spool is not None:
            d.spool.open()
        d.replay.open()
        d.mobility.notifier.sequence = NotificationSequence(d.replay)
        self.clients = {s.name: offline_client(self, s.name) for s in self.net.switches}
        for name, client in self.clients.items():
            d.events.put(Connected(name, client))
            d._step()
        assert all(d.states.values()), "a switch was not reconciled"
        p4info = self.clients["bs1"].need_p4info()
        fields = {m.name: m.id for m in p4info.controller_metadata("packet_in").metadata}
        self._in_ids = fields["ingress_port"], fields["reason"]
        self._out_ids = {m.name: m.id for m in p4info.controller_metadata("packet_out").metadata}
        self._keys = d.guard.keys
        self._ident = ntp_time(time.time())
        self.at = {i: "" for i in range(n)}
        self.round("bs1", list(range(n)))              # the set-up: everyone attached at bs1

    def close(self) -> None:
        d = self.daemon
        if d.spool is not None:
            d.spool.close()
        d.replay.close()
        self.logfile.close()

    def punt(self, switch: str, port: int, reason: int, frame: bytes) -> None:
        """The switch's packet-in of `frame`, through the session's decoding (as on the receiver thread)."""
        proto = p4runtime_pb2.PacketIn(payload=frame)
        proto.metadata.add(metadata_id=self._in_ids[0], value=port.to_bytes(2, "big"))
        proto.metadata.add(metadata_id=self._in_ids[1], value=reason.to_bytes(1, "big"))
        self.daemon.sessions[switch]._packet_in(self.clients[switch], proto)

    def packet_out(self, switch: str, packet: p4runtime_pb2.PacketOut) -> None:
        """A packet-out out of a peer port arrives at the peer, which punts it if its route says so (a marker
        to the controller's address, or to an MH the peer diverts); IPv4-in-IPv4 to the peer is decapsulated
        first. Routes are the controller's view of the switch (`Daemon.states`), which the Writes before
        this packet-out made true. Anything else (to hosts) is not followed."""
        meta = {m.metadata_id: int.from_bytes(m.value, "big") for m in packet.metadata}
        if meta[self._out_ids["telemetry"]]:             # a fence or credit probe: answered from its port
            port_number = meta[self._out_ids["egress_port"]]
            answer = TELEMETRY.struct.pack(port_number, *([0] * (len(TELEMETRY.fields) - 1)))
            self.punt(switch, port_number, REASON_TELEMETRY, answer)
            return
        port = self._switch(switch).port(meta[self._out_ids["egress_port"]])
        if port is None or port.peer is None:
            return
        peer = self._switch(port.peer)
        try:
            ip = parse_ipv4(split_ethernet(packet.payload)[2])
            if ip.proto == IPPROTO_IPIP and ip.dst == peer.address:
                ip = parse_ipv4(ip.packet[ip.header_len:])
        except PacketError:
            return
        if ip.dst != self.net.controller.address:
            state, programmer = self.daemon.states[peer.name], self.daemon.programmer
            entry = state.get(programmer.route_key(ip.dst)) if state is not None else None
            route = programmer.decode_route(peer.name, entry) if entry is not None else None
            if route is None or not isinstance(route[1], Punt):
                return
        back = peer.peer_port(switch)
        assert back is not None, f"{peer.name} has no port back to {switch}"
        self.punt(peer.name, back.number, REASON_BUFFER, packet.payload)

    def _switch(self, name: str) -> Switch:
        sw = self.net.switch(name)
        assert sw is not None, f"unknown switch {name}"
        return sw

    def registration(self, i: int, bs: str) -> bytes:
        self._ident = max(self._ident + 1, ntp_time(time.time()))     # fresh, above the MH's last
        req = RegistrationRequest(mh_ip(i), mh_ip(i), SWITCH_IP["gw"], 0xFFFF, self._ident, 0)
        key = self._keys.get(mh_name(i)) if self._keys is not None else None
        assert key is not None, f"no key for {mh_name(i)}"
        payload = sign(req.encode(), key)
        return ethernet("ff:ff:ff:ff:ff:ff", mh_mac(i),
                        udp_packet(mh_ip(i), "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
                                   payload))

    def round(self, bs: str, which: list[int], profile: cProfile.Profile | None = None) -> float:
        """`which` MHs register at `bs` at once; CPU seconds until the last of their handoffs is active (or,
        for first attachments, until every registration was handled)."""
        frames = [self.registration(i, bs) for i in which]
        moving = sum(1 for i in which if self.at[i])
        d, target = self.daemon, self.log.active + moving
        cpu0 = time.process_time()
        if profile is not None:
            profile.enable()
        for frame in frames:
            self.punt(bs, 1, REASON_REGISTRATION, frame)
        d._step()                                       # the batch of registrations
        deadline = time.monotonic() + 30
        while self.log.active < target or not d.events.empty():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{target - self.log.active} handoffs did not complete")
            d._step()
        if profile is not None:
            profile.disable()
        cpu = time.process_time() - cpu0
        for i in which:
            self.at[i] = bs
        return cpu


def measure(n: int = 1000, movers: int = 200, rounds: int = 5, profile: bool = True,
            top: int = 15) -> dict[str, float]:
    """µs of CPU per handoff (median over `rounds`), and with `profile` the stage table and top functions
    (printed as comments) of one more profiled pass; the figures as name -> value."""
    with tempfile.TemporaryDirectory(prefix="p4h-inmem-") as tmp:
        bench = InMemory(Path(tmp), n, movers)
        try:
            groups = [list(range(g * movers, (g + 1) * movers)) for g in range(n // movers)]
            if len(groups) < rounds + profile:
                raise ValueError(f"{n} MHs make {len(groups)} groups of {movers}: fewer than the rounds")
            us = [bench.round("bs2", groups[r]) * 1e6 / movers for r in range(rounds)]
            out = {"inmem_handoff_us": statistics.median(us), "inmem_handoff_us_min": min(us)}
            if profile:
                prof = cProfile.Profile()
                bench.round("bs2", groups[rounds], prof)
                stats = pstats.Stats(prof, stream=io.StringIO())
                rows = stage_table(stats, movers, INMEMORY_STAGES)
                print(f"# inmem: profile of the in-memory path, {movers} of {n} MHs move at once; cProfile, µs per handoff")
                for label, calls, stage_us in rows:
                    if calls:
                        print(f"# inmem {label:66s} {calls:8d} {stage_us:11.0f}")
                print(f"# inmem {'own time, top ' + str(top):66s} {'calls':>8s} {'µs/handoff':>11s}")
                table = stats.stats  # type: ignore[attr-defined]
                for (path, line, name), (_, ncalls, tt, _, _) in sorted(table.items(), key=lambda kv: -kv[1][2])[:top]:
                    label = (Path(path).name + ":" + str(line) + " " + name)[:66]
                    print(f"# inmem {label:66s} {ncalls:8d} {tt * 1e6 / movers:11.0f}")
                loop = next(us for label, _, us in rows if label.startswith("daemon loop"))
                out["inmem_profiled_us"] = loop
                for label, _, stage_us in rows:
                    if label.startswith("route entries encoded"):
                        out["inmem_encode_share"] = stage_us / loop if loop else 0.0
            return out
        finally:
            bench.close()
