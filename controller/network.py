"""The network description: one YAML file, validated before any switch is touched.

Every check collects its problems instead of stopping at the first one, so a
user fixing a file sees all of them at once, each naming the field path
(``switches[1].ports[0].peer``) and what is wrong with it. The result is a
tree of frozen dataclasses the rest of the controller reads and never
mutates; everything derived (BS peering, cell ids, defaults) is resolved here
so later layers need no second look at the raw file.
"""
from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, field, replace as _replace
from pathlib import Path
from typing import Any

from p4handoff.wire import AQM_MODES as WIRE_AQM_MODES
from p4handoff.wire import DSCP_BEST_EFFORT, DSCP_IPF_PRIORITY_DEFAULT, DSCP_LE
from p4handoff.yamlfile import DocumentError, read_yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_P4INFO = REPO_ROOT / "build" / "bs.p4info.txtpb"
DEFAULT_DEVICE_CONFIG = REPO_ROOT / "build" / "bs.json"
# The program the switches run (controller.target) and where `make build` /
# `make build-tofino` put it: P4Info and device config. The Tofino targets run
# p4src/tna/ (controller/tofino.py maps the entries); their device config is the
# compiler's binary as is (docs/tofino.md, "Driving a Tofino").
V1MODEL = "v1model"
PIPELINES: dict[str, tuple[Path, Path]] = {
    V1MODEL: (DEFAULT_P4INFO, DEFAULT_DEVICE_CONFIG),
    **{chip: (REPO_ROOT / "build" / "tofino" / chip / "bs_tna.p4info.txtpb",
              REPO_ROOT / "build" / "tofino" / chip / "pipe" / f"{chip}.bin") for chip in ("tofino", "tofino2")},
}
DEFAULT_SOCKET = "/run/p4handoff/ctl.sock"
DEFAULT_CONTROLLER_ADDRESS = "192.0.2.1"   # RFC 5737 TEST-NET-1: never a real host

ROLE_GATEWAY, ROLE_BS = "gateway", "bs"
PORT_ACCESS, PORT_PEER, PORT_CORE = "access", "peer", "core"
AQM_MODES = tuple(WIRE_AQM_MODES)     # droptail, red, mred: the one spelling (p4src AQM_MODE_*)
RENAMED_AQM_MODES = {"drop-tail": "droptail"}   # refused with the new spelling (docs/controller.md)
MAX_PORT = 510          # BMv2 ports are 9 bits; 511 is the drop port
MAX_QUEUE_LIMIT = 65535
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


class NetworkError(DocumentError):
    """A description that cannot be used; `errors` lists every (path, problem)."""

    kind = "network description"


@dataclass(frozen=True)
class AqmConfig:
    """Queue management of one access egress port (packets; w_q = 2**-w_q_shift)."""

    mode: str = "droptail"
    limit: int = 64
    min_th: int = 0
    max_th: int = 0
    max_p: float = 0.0
    w_q_shift: int = 9
    dummy_threshold: int = 32  # DSBP: total occupancy from which dummies are refused (default limit/2)
    mean_pkt_time_us: float | None = None   # RED idle correction: transmission time of a typical packet


@dataclass(frozen=True)
class Port:
    number: int
    role: str
    peer: str | None = None          # peer ports: the neighbour switch's name
    aqm: AqmConfig | None = None     # access ports only


@dataclass(frozen=True)
class Switch:
    name: str
    role: str
    grpc: str
    device_id: int
    address: str                     # router/tunnel endpoint address
    mac: str                         # source MAC on non-access ports
    ports: tuple[Port, ...]
    cell_id: int = 0                 # BSs: cell id used in notifications

    def port(self, number: int) -> Port | None:
        return next((p for p in self.ports if p.number == number), None)

    def peer_port(self, peer: str) -> Port | None:
        return next((p for p in self.ports if p.role == PORT_PEER and p.peer == peer), None)

    @property
    def is_bs(self) -> bool:
        return self.role == ROLE_BS


@dataclass(frozen=True)
class FixedHost:
    name: str
    address: str
    mac: str
    switch: str
    port: int
    gateway: str | None = None       # the host's default gateway address: its switch answers ARP for it


@dataclass(frozen=True)
class MobileHost:
    name: str
    address: str                                  # home address, kept in every cell
    correspondents: tuple[str, ...]               # fixed host names told about handoffs
    cell_addresses: tuple[tuple[str, str], ...] = ()   # (bs, address) for DSBP's second path
    mac: str | None = None                        # learned from the registration if absent
    buffer_packets: int = 64

    def cell_address(self, bs: str) -> str | None:
        return dict(self.cell_addresses).get(bs)


@dataclass(frozen=True)
class ControllerConfig:
    election_id: int = 1
    target: str = V1MODEL            # PIPELINES: v1model (BMv2), tofino, tofino2 (TNA)
    socket: str = DEFAULT_SOCKET
    hold_time_ms: int = 500          # old BS keeps tunnelling to the new one this long
    marker_timeout_ms: int = 200     # drain marker not back by then: proceed without it
    flush_timeout_ms: int = 2000     # a handoff that has not drained by then is completed anyway
    p4info: str = str(DEFAULT_P4INFO)
    device_config: str = str(DEFAULT_DEVICE_CONFIG)
    address: str = DEFAULT_CONTROLLER_ADDRESS   # the controller in the data plane: source of notifications
                                               # and markers; every switch punts packets sent to it
    spool: str | None = None         # buffered packets journaled here (outlive a controller restart); None: off
    spool_fsync: bool = False        # fsync every spool record (survives power loss, not only a crash)


@dataclass(frozen=True)
class AccessGateway:
    """The anycast gateway every BS presents on its access ports (same IP and MAC)."""

    address: str
    mac: str


@dataclass(frozen=True)
class BufferLimits:
    per_mh_packets: int = 64
    total_packets: int = 4096


@dataclass(frozen=True)
class Network:
    switches: tuple[Switch, ...]
    fixed_hosts: tuple[FixedHost, ...]
    mobile_hosts: tuple[MobileHost, ...]
    access_gateway: AccessGateway
    controller: ControllerConfig = field(default_factory=ControllerConfig)
    buffer: BufferLimits = field(default_factory=BufferLimits)
    priority_dscp: int = DSCP_IPF_PRIORITY_DEFAULT

    def switch(self, name: str) -> Switch | None:
        return next((s for s in self.switches if s.name == name), None)

    @property
    def gateway(self) -> Switch:
        return next(s for s in self.switches if s.role == ROLE_GATEWAY)

    @property
    def base_stations(self) -> tuple[Switch, ...]:
        return tuple(s for s in self.switches if s.is_bs)

    def mobile(self, name_or_address: str) -> MobileHost | None:
        return next((m for m in self.mobile_hosts
                     if name_or_address in (m.name, m.address)), None)

    def fixed(self, name: str) -> FixedHost | None:
        return next((h for h in self.fixed_hosts if h.name == name), None)

    def peered(self, a: str, b: str) -> bool:
        sw = self.switch(a)
        return sw is not None and sw.peer_port(b) is not None


# --------------------------------------------------------------------------- loading

def load_network(path: str | Path) -> Network:
    """Read and validate a description file; raise NetworkError listing every problem."""
    path = Path(path)
    raw = read_yaml(path, NetworkError)
    return parse_network(raw, source=str(path), base_dir=path.parent)


def parse_network(raw: Any, source: str = "<description>", base_dir: Path | None = None) -> Network:
    """Validate an already-parsed description (a dict)."""
    v = _Validator()
    net = v.network(raw, base_dir)
    if v.errors or net is None:
        raise NetworkError(source, v.errors or [("(root)", "empty description")])
    return net


# --------------------------------------------------------------------------- validation

class _Validator:
    """Collects (path, problem) pairs while building the dataclasses."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str]] = []
        # names declared in the file, even by entries with other errors: cross-references
        # check against these so one bad field does not cascade into "unknown" errors
        self.declared_switches: dict[str, Any] = {}
        self.declared_hosts: set[str] = set()

    def err(self, path: str, problem: str) -> None:
        self.errors.append((path, problem))

    # ---- primitives: each returns None (after recording an error) when invalid

    def mapping(self, value: Any, path: str, allowed: set[str], required: set[str] = frozenset()) -> dict | None:
        if not isinstance(value, dict):
            self.err(path, f"must be a mapping, got {_kind(value)}")
            return None
        for key in value:
            if key not in allowed:
                self.err(f"{path}.{key}" if path else str(key),
                         f"unknown field (allowed: {', '.join(sorted(allowed))})")
        for key in sorted(required - set(value)):
            self.err(f"{path}.{key}" if path else key, "missing required field")
        return value

    def seq(self, value: Any, path: str) -> list | None:
        if not isinstance(value, list):
            self.err(path, f"must be a list, got {_kind(value)}")
            return None
        return value

    def integer(self, value: Any, path: str, lo: int, hi: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.err(path, f"must be an integer, got {_kind(value)}")
            return None
        if not lo <= value <= hi:
            self.err(path, f"{value} is out of range [{lo}, {hi}]")
            return None
        return value

    def number(self, value: Any, path: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.err(path, f"must be a number, got {_kind(value)}")
            return None
        if value < lo or value > hi or (lo_open and value == lo):
            self.err(path, f"{value} is out of range {'(' if lo_open else '['}{lo}, {hi}]")
            return None
        return float(value)

    def name(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not _NAME_RE.match(value):
            self.err(path, f"must be a name (letter, then letters/digits/_/-, at most 32), got {value!r}")
            return None
        return value

    def ipv4(self, value: Any, path: str) -> str | None:
        try:
            addr = ipaddress.IPv4Address(value) if isinstance(value, str) else None
        except ValueError:
            addr = None
        if addr is None:
            self.err(path, f"must be an IPv4 address like 10.0.1.1, got {value!r}")
            return None
        if addr.is_multicast or addr.is_unspecified or addr == ipaddress.IPv4Address("255.255.255.255"):
            self.err(path, f"{value} is not a unicast host address")
            return None
        return str(addr)

    def mac(self, value: Any, path: str) -> str | None:
        if not isinstance(value, str) or not _MAC_RE.match(value):
            self.err(path, f"must be a MAC address like 02:00:00:00:00:01, got {value!r}")
            return None
        if int(value[:2], 16) & 1:
            self.err(path, f"{value} is a multicast MAC address")
            return None
        return value.lower()

    def grpc_address(self, value: Any, path: str) -> str | None:
        """host:port, or unix:/absolute/path (a switch in another namespace, e.g. in the Mininet lab)."""
        if isinstance(value, str) and value.startswith("unix:"):
            if not value[5:].startswith("/") or "\0" in value:
                self.err(path, f"a Unix socket address must be unix:/absolute/path, got {value!r}")
                return None
            return value
        host, sep, port = value.rpartition(":") if isinstance(value, str) else ("", "", "")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            self.err(path, f"must be host:port (e.g. 127.0.0.1:50051) or unix:/path, got {value!r}")
            return None
        return value

    def unique(self, items: list[tuple[str, Any]], what: str) -> None:
        """items: (path, value); report every value seen before."""
        first: dict[Any, str] = {}
        for path, value in items:
            if value is None:
                continue
            if value in first:
                self.err(path, f"duplicate {what} {value!r} (also at {first[value]})")
            else:
                first[value] = path

    # ---- sections

    def network(self, raw: Any, base_dir: Path | None) -> Network | None:
        top = self.mapping(raw, "", {"switches", "fixed_hosts", "mobile_hosts", "access_gateway",
                                     "controller", "buffer", "priority_dscp"},
                           {"switches", "mobile_hosts", "access_gateway"})
        if top is None:
            return None
        controller = self.controller(top.get("controller", {}), "controller", base_dir)
        buffer = self.buffer(top.get("buffer", {}), "buffer")
        dscp = DSCP_IPF_PRIORITY_DEFAULT
        if "priority_dscp" in top:
            dscp = self.integer(top["priority_dscp"], "priority_dscp", 0, 63)
            if dscp in (DSCP_BEST_EFFORT, DSCP_LE):
                self.err("priority_dscp", f"{dscp} is reserved (best effort / DSBP lower-effort)")
        gw = self.access_gateway(top["access_gateway"], "access_gateway") if "access_gateway" in top else None
        switches = self.switches(top["switches"], "switches") if "switches" in top else []
        fixed = self.fixed_hosts(top.get("fixed_hosts", []), "fixed_hosts", switches)
        mobiles = self.mobile_hosts(top["mobile_hosts"], "mobile_hosts", buffer) if "mobile_hosts" in top else []
        self.address_clashes(switches, fixed, mobiles, gw, controller)
        if self.errors or None in (controller, buffer, dscp, gw):
            return None
        return Network(tuple(switches), tuple(fixed), tuple(mobiles), gw, controller, buffer, dscp)

    def controller(self, raw: Any, path: str, base_dir: Path | None) -> ControllerConfig | None:
        d = self.mapping(raw, path, {"election_id", "target", "socket", "hold_time_ms", "marker_timeout_ms",
                                     "flush_timeout_ms", "p4info", "device_config", "address", "spool",
                                     "spool_fsync"})
        if d is None:
            return None
        out: dict[str, Any] = {}
        target = d.get("target", V1MODEL)
        if not isinstance(target, str) or target not in PIPELINES:
            self.err(f"{path}.target", f"must be one of {', '.join(PIPELINES)}, got {target!r}")
            return None
        out["target"] = target
        out["p4info"], out["device_config"] = (str(p) for p in PIPELINES[target])
        if "election_id" in d:
            out["election_id"] = self.integer(d["election_id"], f"{path}.election_id", 1, 2**128 - 1)
        for key, hi in (("hold_time_ms", 600_000), ("marker_timeout_ms", 60_000), ("flush_timeout_ms", 600_000)):
            if key in d:
                out[key] = self.integer(d[key], f"{path}.{key}", 0 if key == "hold_time_ms" else 1, hi)
        for key in ("socket", "p4info", "device_config"):
            if key in d:
                if not isinstance(d[key], str) or not d[key]:
                    self.err(f"{path}.{key}", f"must be a path, got {d[key]!r}")
                    out[key] = None
                elif key != "socket" and base_dir is not None:
                    out[key] = str((base_dir / d[key]).resolve())
                else:
                    out[key] = d[key]
        if "address" in d:
            out["address"] = self.ipv4(d["address"], f"{path}.address")
        if "spool_fsync" in d:
            if isinstance(d["spool_fsync"], bool):
                out["spool_fsync"] = d["spool_fsync"]
            else:
                self.err(f"{path}.spool_fsync", f"must be true or false, got {d['spool_fsync']!r}")
                out["spool_fsync"] = None
        if None in out.values():
            return None
        spool = d.get("spool", "")
        if spool is None:                         # explicitly off
            pass
        elif not isinstance(spool, str):
            self.err(f"{path}.spool", f"must be a path or null, got {spool!r}")
            return None
        elif spool == "":                         # default: beside the control socket
            spool = str(Path(out.get("socket", DEFAULT_SOCKET)).with_suffix(".spool"))
        elif base_dir is not None:
            spool = str((base_dir / spool).resolve())
        return ControllerConfig(**out, spool=spool)

    def buffer(self, raw: Any, path: str) -> BufferLimits | None:
        d = self.mapping(raw, path, {"per_mh_packets", "total_packets"})
        if d is None:
            return None
        per = self.integer(d.get("per_mh_packets", 64), f"{path}.per_mh_packets", 1, 1_000_000)
        total = self.integer(d.get("total_packets", 4096), f"{path}.total_packets", 1, 100_000_000)
        if per is None or total is None:
            return None
        if total < per:
            self.err(f"{path}.total_packets", f"{total} is below per_mh_packets ({per})")
            return None
        return BufferLimits(per, total)

    def access_gateway(self, raw: Any, path: str) -> AccessGateway | None:
        d = self.mapping(raw, path, {"address", "mac"}, {"address", "mac"})
        if d is None or "address" not in d or "mac" not in d:
            return None
        addr, mac = self.ipv4(d["address"], f"{path}.address"), self.mac(d["mac"], f"{path}.mac")
        return AccessGateway(addr, mac) if addr and mac else None

    def switches(self, raw: Any, path: str) -> list[Switch]:
        items = self.seq(raw, path)
        if items is None:
            return []
        if not items:
            self.err(path, "at least a gateway and one base station are needed")
        out: list[Switch] = []
        raw_cells: list[tuple[str, int | None]] = []
        self.declared_switches = {s["name"]: s.get("role") for s in items
                                  if isinstance(s, dict) and isinstance(s.get("name"), str)}
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            d = self.mapping(item, p, {"name", "role", "grpc", "device_id", "address", "mac", "ports", "cell_id"},
                             {"name", "role", "grpc", "device_id", "address", "mac", "ports"})
            if d is None:
                continue
            name = self.name(d.get("name"), f"{p}.name") if "name" in d else None
            role = d.get("role")
            if "role" in d and role not in (ROLE_GATEWAY, ROLE_BS):
                self.err(f"{p}.role", f"must be 'gateway' or 'bs', got {role!r}")
                role = None
            grpc = self.grpc_address(d["grpc"], f"{p}.grpc") if "grpc" in d else None
            dev = self.integer(d["device_id"], f"{p}.device_id", 0, 2**64 - 1) if "device_id" in d else None
            addr = self.ipv4(d["address"], f"{p}.address") if "address" in d else None
            mac = self.mac(d["mac"], f"{p}.mac") if "mac" in d else None
            cell = None
            if "cell_id" in d:
                if role == ROLE_GATEWAY:
                    self.err(f"{p}.cell_id", "only base stations have a cell id")
                else:
                    cell = self.integer(d["cell_id"], f"{p}.cell_id", 1, 65535)
            ports = self.ports(d.get("ports"), f"{p}.ports", role) if "ports" in d else None
            if role == ROLE_BS:
                raw_cells.append((f"{p}.cell_id", cell if "cell_id" in d else None))
            if None in (name, role, grpc, dev, addr, mac, ports):
                continue
            out.append(Switch(name, role, grpc, dev, addr, mac, tuple(ports), cell or 0))
        self.unique([(f"{path}[{i}].name", s.get("name")) for i, s in enumerate(items) if isinstance(s, dict)
                     and isinstance(s.get("name"), str)], "switch name")
        self.unique([(f"{path}[{i}].grpc", (s.get("grpc"), s.get("device_id"))) for i, s in enumerate(items)
                     if isinstance(s, dict) and isinstance(s.get("grpc"), str)], "(grpc, device_id)")
        self.unique([(f"{path}[{i}].mac", str(s.get("mac")).lower()) for i, s in enumerate(items)
                     if isinstance(s, dict) and "mac" in s], "switch MAC")
        gateways = [s for s in out if s.role == ROLE_GATEWAY]
        if items and len([s for s in items if isinstance(s, dict) and s.get("role") == ROLE_GATEWAY]) != 1:
            self.err(path, "exactly one switch must have role 'gateway'")
        if items and not any(isinstance(s, dict) and s.get("role") == ROLE_BS for s in items):
            self.err(path, "at least one switch must have role 'bs'")
        self.unique([(p, c) for p, c in raw_cells], "cell id")
        # cell ids: explicit, else the lowest ids not taken, in file order
        used = {c for _, c in raw_cells if c is not None}
        free = (n for n in range(1, 65536) if n not in used)
        resolved = [_replace(sw, cell_id=next(free)) if sw.is_bs and not sw.cell_id else sw for sw in out]
        self.topology(resolved, gateways, path)
        return resolved

    def ports(self, raw: Any, path: str, switch_role: str | None) -> list[Port] | None:
        items = self.seq(raw, path)
        if items is None:
            return None
        out: list[Port] = []
        ok = True
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            d = self.mapping(item, p, {"number", "role", "peer", "aqm"}, {"number", "role"})
            if d is None:
                ok = False
                continue
            number = self.integer(d["number"], f"{p}.number", 0, MAX_PORT) if "number" in d else None
            role = d.get("role")
            if "role" in d and role not in (PORT_ACCESS, PORT_PEER, PORT_CORE):
                self.err(f"{p}.role", f"must be one of access, peer, core; got {role!r}")
                role = None
            if role == PORT_ACCESS and switch_role == ROLE_GATEWAY:
                self.err(f"{p}.role", "the gateway has no access ports (mobile hosts attach to base stations)")
                role = None
            peer = None
            if role == PORT_PEER:
                if "peer" not in d:
                    self.err(f"{p}.peer", "peer ports must name the neighbour switch")
                    role = None
                else:
                    peer = self.name(d["peer"], f"{p}.peer")
            elif "peer" in d and role is not None:
                self.err(f"{p}.peer", f"only peer ports have a peer ({role} port)")
            aqm = None
            if role == PORT_ACCESS:
                aqm = self.aqm(d.get("aqm", {}), f"{p}.aqm")
            elif "aqm" in d and role is not None:
                self.err(f"{p}.aqm", f"AQM is configured on access ports only ({role} port)")
            if number is None or role is None or (role == PORT_PEER and peer is None) \
                    or (role == PORT_ACCESS and aqm is None):
                ok = False
                continue
            out.append(Port(number, role, peer, aqm))
        self.unique([(f"{path}[{i}].number", d.get("number")) for i, d in enumerate(items)
                     if isinstance(d, dict) and isinstance(d.get("number"), int)], "port number")
        self.unique([(f"{path}[{i}].peer", d.get("peer")) for i, d in enumerate(items)
                     if isinstance(d, dict) and d.get("role") == PORT_PEER and isinstance(d.get("peer"), str)],
                    "peer (one port per neighbour)")
        return out if ok else None

    def aqm(self, raw: Any, path: str) -> AqmConfig | None:
        d = self.mapping(raw, path, {"mode", "limit", "min_th", "max_th", "max_p", "w_q", "dummy_threshold",
                                     "mean_pkt_time_us"})
        if d is None:
            return None
        mode = d.get("mode", "droptail")
        if mode in RENAMED_AQM_MODES:
            self.err(f"{path}.mode", f"{mode!r} is now spelled {RENAMED_AQM_MODES[mode]!r} (one spelling in network "
                                     f"and scenario files)")
            return None
        if mode not in AQM_MODES:
            self.err(f"{path}.mode", f"must be one of {', '.join(AQM_MODES)}; got {mode!r}")
            return None
        limit = self.integer(d.get("limit", 64), f"{path}.limit", 1, MAX_QUEUE_LIMIT)
        dummy = self.integer(d.get("dummy_threshold", (limit or 2) // 2), f"{path}.dummy_threshold",
                             0, MAX_QUEUE_LIMIT)
        if limit is not None and dummy is not None and dummy > limit:
            self.err(f"{path}.dummy_threshold", f"{dummy} exceeds the queue limit {limit}")
            dummy = None
        pkt_time = None
        if "mean_pkt_time_us" in d:
            pkt_time = self.number(d["mean_pkt_time_us"], f"{path}.mean_pkt_time_us", 0.0, 1e9, lo_open=True)
            if pkt_time is None:
                return None
        if mode == "droptail":
            for key in ("min_th", "max_th", "max_p", "w_q", "mean_pkt_time_us"):
                if key in d:
                    self.err(f"{path}.{key}", "RED parameter given for a droptail port")
            if limit is None or dummy is None:
                return None
            return AqmConfig(mode, limit, dummy_threshold=dummy)
        for key in ("min_th", "max_th", "max_p", "w_q"):
            if key not in d:
                self.err(f"{path}.{key}", f"missing: required for mode {mode}")
        min_th = self.integer(d["min_th"], f"{path}.min_th", 0, MAX_QUEUE_LIMIT) if "min_th" in d else None
        max_th = self.integer(d["max_th"], f"{path}.max_th", 1, MAX_QUEUE_LIMIT) if "max_th" in d else None
        max_p = self.number(d["max_p"], f"{path}.max_p", 0.0, 1.0, lo_open=True) if "max_p" in d else None
        shift = self.w_q(d["w_q"], f"{path}.w_q") if "w_q" in d else None
        if min_th is not None and max_th is not None and min_th >= max_th:
            self.err(f"{path}.max_th", f"{max_th} must be above min_th ({min_th})")
            return None
        if max_th is not None and limit is not None and max_th > limit:
            self.err(f"{path}.max_th", f"{max_th} exceeds the queue limit {limit}")
            return None
        if None in (limit, min_th, max_th, max_p, shift, dummy):
            return None
        return AqmConfig(mode, limit, min_th, max_th, max_p, shift, dummy, pkt_time)

    def w_q(self, value: Any, path: str) -> int | None:
        """w_q must be 2**-k (shift-only EWMA, Tofino-portable); return k."""
        w = self.number(value, path, 0.0, 0.5, lo_open=True)
        if w is None:
            return None
        k = -math.log2(w)
        if abs(k - round(k)) > 1e-9 or not 1 <= round(k) <= 16:
            nearest = min(range(1, 17), key=lambda n: abs(2.0 ** -n - w))
            self.err(path, f"{value} is not a power of two 2**-k (k in 1..16); "
                           f"nearest: {2.0 ** -nearest!r} (2**-{nearest})")
            return None
        return round(k)

    def topology(self, switches: list[Switch], gateways: list[Switch], path: str) -> None:
        """Peer links must name known switches, be symmetric, and star every BS to the gateway."""
        by_name = {s.name: (i, s) for i, s in enumerate(switches)}
        for i, sw in enumerate(switches):
            for j, port in enumerate(sw.ports):
                if port.role != PORT_PEER:
                    continue
                p = f"{path}[{i}].ports[{j}].peer"
                if port.peer == sw.name:
                    self.err(p, "a switch cannot peer with itself")
                elif port.peer not in self.declared_switches:
                    self.err(p, f"unknown switch {port.peer!r}")
                elif port.peer not in by_name:
                    continue        # declared but invalid: its own errors are reported
                elif by_name[port.peer][1].peer_port(sw.name) is None:
                    self.err(p, f"{port.peer!r} has no peer port back to {sw.name!r} (peering must be symmetric)")
            if sw.is_bs and not any(p.role == PORT_ACCESS for p in sw.ports):
                self.err(f"{path}[{i}].ports", f"base station {sw.name!r} has no access port")
        if len(gateways) == 1:
            gw = gateways[0]
            for i, sw in enumerate(switches):
                if sw.is_bs and gw.peer_port(sw.name) is None:
                    self.err(f"{path}[{i}]", f"base station {sw.name!r} is not peered with the gateway {gw.name!r}")

    def fixed_hosts(self, raw: Any, path: str, switches: list[Switch]) -> list[FixedHost]:
        items = self.seq(raw, path)
        if items is None:
            return []
        by_name = {s.name: s for s in switches}
        self.declared_hosts = {d["name"] for d in items if isinstance(d, dict) and isinstance(d.get("name"), str)}
        out = []
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            d = self.mapping(item, p, {"name", "address", "mac", "switch", "port", "gateway"},
                             {"name", "address", "mac", "switch", "port"})
            if d is None or not {"name", "address", "mac", "switch", "port"} <= set(d):
                continue
            name = self.name(d["name"], f"{p}.name")
            addr = self.ipv4(d["address"], f"{p}.address")
            mac = self.mac(d["mac"], f"{p}.mac")
            port = self.integer(d["port"], f"{p}.port", 0, MAX_PORT)
            gateway = self.ipv4(d["gateway"], f"{p}.gateway") if "gateway" in d else None
            bad_gw = "gateway" in d and gateway is None
            sw = by_name.get(d["switch"])
            if d["switch"] not in self.declared_switches:
                self.err(f"{p}.switch", f"unknown switch {d['switch']!r}")
            elif sw is None:
                pass                # declared but invalid: its own errors are reported
            elif port is not None:
                sp = sw.port(port)
                if sp is None:
                    self.err(f"{p}.port", f"switch {sw.name!r} has no port {port}")
                    port = None
                elif sp.role == PORT_PEER:
                    self.err(f"{p}.port", f"port {port} of {sw.name!r} is a peer port (hosts attach to core or access ports)")
                    port = None
            if None not in (name, addr, mac, port, sw) and not bad_gw:
                out.append(FixedHost(name, addr, mac, sw.name, port, gateway))
        self.unique([(f"{path}[{i}].name", d.get("name")) for i, d in enumerate(items) if isinstance(d, dict)
                     and isinstance(d.get("name"), str)], "host name")
        return out

    def mobile_hosts(self, raw: Any, path: str, buffer: BufferLimits | None) -> list[MobileHost]:
        items = self.seq(raw, path)
        if items is None:
            return []
        bs_names = {n for n, role in self.declared_switches.items() if role == ROLE_BS}
        fixed_names = self.declared_hosts
        default_buf = buffer.per_mh_packets if buffer else 64
        out = []
        for i, item in enumerate(items):
            p = f"{path}[{i}]"
            d = self.mapping(item, p, {"name", "address", "mac", "correspondents", "cell_addresses", "buffer_packets"},
                             {"name", "address"})
            if d is None or not {"name", "address"} <= set(d):
                continue
            name = self.name(d["name"], f"{p}.name")
            addr = self.ipv4(d["address"], f"{p}.address")
            mac = self.mac(d["mac"], f"{p}.mac") if "mac" in d else None
            bad = "mac" in d and mac is None
            corr: tuple[str, ...] = tuple(sorted(fixed_names))
            if "correspondents" in d:
                names = self.seq(d["correspondents"], f"{p}.correspondents")
                if names is None:
                    bad = True
                else:
                    for j, n in enumerate(names):
                        if n not in fixed_names:
                            self.err(f"{p}.correspondents[{j}]", f"unknown fixed host {n!r}")
                            bad = True
                    corr = tuple(names)
            cells: list[tuple[str, str]] = []
            if "cell_addresses" in d:
                cm = d["cell_addresses"]
                if not isinstance(cm, dict):
                    self.err(f"{p}.cell_addresses", f"must be a mapping bs-name: address, got {_kind(cm)}")
                    bad = True
                else:
                    for bs, a in cm.items():
                        if bs not in bs_names:
                            self.err(f"{p}.cell_addresses.{bs}", "not a base station")
                            bad = True
                            continue
                        ca = self.ipv4(a, f"{p}.cell_addresses.{bs}")
                        if ca is None:
                            bad = True
                        elif ca == addr:
                            self.err(f"{p}.cell_addresses.{bs}", "must differ from the home address")
                            bad = True
                        else:
                            cells.append((bs, ca))
            buf = default_buf
            if "buffer_packets" in d:
                limit = buffer.total_packets if buffer else 100_000_000
                buf = self.integer(d["buffer_packets"], f"{p}.buffer_packets", 1, limit)
            if bad or None in (name, addr, buf):
                continue
            out.append(MobileHost(name, addr, corr, tuple(sorted(cells)), mac, buf))
        self.unique([(f"{path}[{i}].name", d.get("name")) for i, d in enumerate(items) if isinstance(d, dict)
                     and isinstance(d.get("name"), str)], "mobile host name")
        return out

    def address_clashes(self, switches: list[Switch], fixed: list[FixedHost], mobiles: list[MobileHost],
                        gw: AccessGateway | None, controller: ControllerConfig | None) -> None:
        """Every address routes to exactly one place."""
        items: list[tuple[str, str]] = []
        if controller is not None:
            items.append(("controller.address", controller.address))
        items += [(f"switch {s.name}.address", s.address) for s in switches]
        items += [(f"fixed host {h.name}.address", h.address) for h in fixed]
        gateways = {h.gateway: h.name for h in fixed if h.gateway}
        items += [(f"fixed host {name}.gateway", addr) for addr, name in gateways.items()]
        for m in mobiles:
            items.append((f"mobile host {m.name}.address", m.address))
            items += [(f"mobile host {m.name}.cell_addresses.{bs}", a) for bs, a in m.cell_addresses]
        if gw is not None:
            items.append(("access_gateway.address", gw.address))
        self.unique(items, "address")
        names = [(f"switch {s.name}", s.name) for s in switches] + [(f"fixed host {h.name}", h.name) for h in fixed] \
            + [(f"mobile host {m.name}", m.name) for m in mobiles]
        self.unique(names, "name (switches and hosts share one namespace)")


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__

