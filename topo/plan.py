"""How a scenario becomes a lab: switches, ports, bridges, emulators, queue rates, the controller's description.

Pure data, no processes: `plan(scn)` checks what the lab can build and
returns a `LabPlan` that `p4handoff.topo.rig` builds. The mapping:

- the one router is the **gateway** switch; every correspondent hangs off a
  gateway port (core), every base station off another (peer); BS–BS links
  are peer links (the IPF flush path);
- each **cell** is an access port of its BS with the cell's AQM (the
  controller's description) and BMv2 egress queue: rate in packets/s for
  the scenario's wire packet size (payload + 52 B), depth = the cell's
  buffer. That queue is the cell's bottleneck, so RED/M-RED act on it;
- behind the access port a Linux bridge (in the BS switch's namespace) is
  the shared radio medium; every
  host that may ever use the cell (mobile, background) has its own path to
  that bridge through a **link emulator** (the cell's one-way delay and
  loss both ways, the uplink's rate and buffer, up/down = attached or not);
- a wired link with a rate gets its rate as the egress queue rate of the
  switch port it leaves (gateway → BS, BS → gateway, BS → BS) or, where it
  leaves a host, in an emulator in front of the gateway port; a wired link
  with delay or loss always gets an emulator.

With `lab.time_scale` S (time dilation, docs/lab.md) the lab's network is
the scenario's stretched S times: every rate divided by S, every delay
multiplied by it; the run's clock and the endpoints' stretch the rest.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field, replace
from typing import Any

from p4handoff.aqm_fields import nearest_wq_shift
from p4handoff.topo.emulator.model import LinkParams
from p4handoff.scenario.loader import HEADER_BYTES, LinkSpec, QueueSpec, Scenario
from p4handoff.scenario.model import Topology

ACCESS_GATEWAY = ("172.31.255.1", "02:00:00:00:01:fe")   # anycast gateway of every cell (address, MAC)
HOST_GATEWAY = "172.31.255.254"                          # correspondents' default gateway (their switch answers)
SWITCH_NET = ipaddress.IPv4Network("192.168.100.0/24")
UNBOUNDED = 10000        # frames: an emulator queue that never limits (the switch queue does)
BUFFER_SERVICE = (str(SWITCH_NET[250]), "02:03:00:00:00:01")   # the buffer service's address and MAC, if any


class LabError(ValueError):
    """What the lab cannot build for this scenario (every reason listed)."""

    def __init__(self, scenario: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{scenario}: the lab cannot build this scenario:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class Emulated:
    """An emulator's two directions: `down` is switch → host (or towards the first switch), see `Wire`."""

    down: LinkParams
    up: LinkParams


@dataclass(frozen=True)
class Wire:
    """A connection between two nodes (switch or host names; a node's interfaces live in its namespace).

    `kind`: "switch-switch" (two switch ports), "host-switch" (a host's
    device to a switch port), "switch-bridge" (an access port to its cell's
    bridge, both in the BS switch), "host-bridge" (a host's device to a
    cell's bridge). With `emu`, an emulator sits in the middle, in the
    namespace of `emu_node`: its mh side faces the host (or the first
    switch), its bs side the switch/bridge, so its *down* direction is
    switch → host.
    """

    kind: str
    a: tuple[str, str]          # (node: host or switch name, interface)
    b: tuple[str, str]
    emu: Emulated | None = None
    up_at_start: bool = True
    key: str = ""               # for host-bridge wires: "<host>/<iface>/<cell>"

    @property
    def emu_node(self) -> str:
        """The node whose namespace holds the emulator: the switch side (the first switch between two)."""
        return self.a[0] if self.kind == "switch-switch" else self.b[0]


@dataclass(frozen=True)
class SwitchPlan:
    name: str
    role: str                   # gateway | bs
    address: str
    mac: str
    ports: dict[int, str]       # port number -> interface in the switch's namespace
    cell_id: int = 0
    signal_forwarding: bool = True   # BSs: the controller's HANDOFF after this BS's flush says so (revision 2)


@dataclass(frozen=True)
class QueueRate:
    switch: str
    port: int
    pps: int
    depth: int


@dataclass(frozen=True)
class HostPlan:
    name: str
    address: str
    kind: str                                   # fixed | mobile | background
    devices: dict[str, tuple[str, str]] = field(default_factory=dict)   # "<iface>/<cell>" -> (dev, mac)
    coas: dict[str, str] = field(default_factory=dict)                  # iface -> care-of address
    switch_port: int = 0                                                # fixed hosts: their gateway port


@dataclass
class LabPlan:
    switches: list[SwitchPlan]
    wires: list[Wire]
    queues: list[QueueRate]
    hosts: dict[str, HostPlan]
    cell_ports: dict[str, tuple[str, int]]        # cell -> (bs, access port)
    bridges: dict[str, str]                       # cell -> bridge name (in the cell's BS switch)
    network: dict[str, Any]                       # the controller's description (without controller paths)
    notes: list[str]
    service_ports: dict[str, int] = field(default_factory=dict)   # switch -> its buffer port (buffer_service)

    def device(self, host: str, iface: str, cell: str) -> tuple[str, str]:
        return self.hosts[host].devices[f"{iface}/{cell}"]

    def bs_of_device(self, host: str, dev: str) -> str:
        """The BS switch whose cell `host`'s device `dev` is in."""
        key = next(k for k, (d, _) in self.hosts[host].devices.items() if d == dev)
        return self.cell_ports[key.split("/", 1)[1]][0]


def run_description(p: LabPlan, grpc: dict[str, str], controller: dict[str, Any],
                    service: dict[str, Any] | None = None) -> dict[str, Any]:
    """The controller's description for one run: the plan's, with what only the run knows (each switch's gRPC
    address, the controller's section, the buffer service's control address and interfaces)."""
    desc = {**p.network, "controller": controller,
            "switches": [dict(s, grpc=grpc[s["name"]]) for s in p.network["switches"]]}
    if service is not None:
        desc["buffer_service"] = {**desc["buffer_service"], **service}
    return desc


def wire_bytes(scn: Scenario) -> int:
    return scn.tcp.packet_size + HEADER_BYTES


def pps(rate_bps: float, size: int) -> int:
    """BMv2's queue rate (packets/s) that carries `rate_bps` of `size`-byte packets (at least 1)."""
    return max(1, round(rate_bps / (8 * size)))


def _mac(kind: int, k: int) -> str:
    return f"02:{kind:02x}:00:{(k >> 16) & 0xFF:02x}:{(k >> 8) & 0xFF:02x}:{k & 0xFF:02x}"


def _aqm(q: QueueSpec, rate_bps: float, size: int, notes: list[str], where: str) -> dict[str, Any]:
    d: dict[str, Any] = {"mode": q.aqm, "limit": q.limit}
    if q.dummy_threshold is not None:
        d["dummy_threshold"] = q.dummy_threshold
    if q.aqm in ("red", "mred"):
        k = nearest_wq_shift(q.w_q)
        if abs(2.0 ** -k - q.w_q) > 1e-9 * q.w_q:
            notes.append(f"{where}: w_q {q.w_q:g} runs as 2^-{k} = {2.0 ** -k:g} (the switch's EWMA is shift-only)")
        if not (float(q.min_th).is_integer() and float(q.max_th).is_integer()):
            notes.append(f"{where}: thresholds {q.min_th:g}/{q.max_th:g} rounded to whole packets")
        d.update(min_th=round(q.min_th), max_th=round(q.max_th), max_p=q.max_p, w_q=2.0 ** -k,
                 mean_pkt_time_us=round(q.mean_pkt_size * 8 / rate_bps * 1e6, 3))
    return d


def stretched(topo: Topology, scale: float) -> Topology:
    """The network `scale` times slower: rates divided, delays multiplied (time dilation; buffers, losses and
    RED's per-packet settings stay, so each packet meets the same network, only later)."""
    if scale == 1.0:
        return topo
    links = tuple(replace(li, rate_bps=None if li.rate_bps is None else li.rate_bps / scale, delay=li.delay * scale)
                  for li in topo.links)
    cells = tuple(replace(c, rate_bps=c.rate_bps / scale, up_rate_bps=c.up_rate_bps / scale, delay=c.delay * scale)
                  for c in topo.cells)
    return replace(topo, links=links, cells=cells)     # BSs' forward/route delays: refused in the lab anyway


def plan(scn: Scenario) -> LabPlan:
    """The lab for `scn` (LabError listing everything the lab cannot build)."""
    problems: list[str] = []
    notes: list[str] = []
    if scn.lab_time_scale != 1.0:
        scn = replace(scn, topology=stretched(scn.topology, scn.lab_time_scale))
        notes.append(f"time dilation: the lab plays the scenario {scn.lab_time_scale:g} times slower (its network's "
                     "rates divided and delays multiplied by that, the endpoints on a clock as much slower; the "
                     "controller and the switches are not slowed); times and rates are reported on the scenario's "
                     "clock")
    topo = scn.topology
    size = wire_bytes(scn)
    if len(topo.routers) != 1:
        problems.append(f"needs exactly one router (the gateway switch), the scenario has {len(topo.routers)}")
        raise LabError(scn.name, problems)
    gw = topo.routers[0]
    # the controller's model has one cell per BS: a BS with several cells runs as one switch per cell,
    # each with all of the BS's links (only one of them carries a given MH at a time)
    lab_of: dict[str, list[str]] = {}
    cell_switch: dict[str, str] = {}
    for b in topo.base_stations:
        cells = [c.name for c in topo.cells if c.bs == b.name]
        if len(cells) > 1:
            lab_of[b.name] = [f"{b.name}-{c}"[:32] for c in cells]
            cell_switch.update({c: f"{b.name}-{c}"[:32] for c in cells})
            notes.append(f"base station {b.name} serves {len(cells)} cells: it runs as {len(cells)} BMv2 switches "
                         f"({', '.join(lab_of[b.name])}), each with the BS's links")
        else:
            lab_of[b.name] = [b.name]
            cell_switch.update({c: b.name for c in cells})
    bs_names = [s for b in topo.base_stations for s in lab_of[b.name]]
    hosts = {h.name for h in topo.correspondents}
    switches: dict[str, dict[int, str]] = {gw: {}, **{b: {} for b in bs_names}}
    order = [gw, *bs_names]

    def ifname(sw: str, port: int) -> str:
        return f"s{order.index(sw)}p{port}"
    peers: dict[str, dict[str, int]] = {s: {} for s in switches}
    wires: list[Wire] = []
    queues: list[QueueRate] = []
    host_plans: dict[str, HostPlan] = {}

    def port_of(sw: str) -> int:
        return max(switches[sw], default=0) + 1

    def host_link(link: LinkSpec) -> Emulated | None:
        """A correspondent's link in an emulator (rate, delay, loss both ways); None if it is an ideal wire."""
        if link.rate_bps is None and not (link.delay or link.loss or link.reverse_loss):
            return None
        up = LinkParams(link.rate_bps, link.delay, link.loss, link.queue.limit if link.queue else UNBOUNDED)
        down = LinkParams(link.rate_bps, link.delay, link.reverse_loss,
                          link.reverse_queue.limit if link.reverse_queue else UNBOUNDED)
        return Emulated(down, up)

    # wired links: correspondent <-> gateway, gateway <-> BS, BS <-> BS
    for link in topo.links:
        ends = {link.a, link.b}
        host = next((e for e in (link.a, link.b) if e in hosts), None)
        if host is not None:
            other = link.b if link.a == host else link.a
            if other != gw:
                problems.append(f"link {link.a}–{link.b}: correspondents must hang off the gateway ({gw})")
                continue
            if link.a != host:
                problems.append(f"link {link.a}–{link.b}: write host links as [host, {gw}] (the host's egress first)")
                continue
            p = port_of(gw)
            switches[gw][p] = f"g{p}"
            wires.append(Wire("host-switch", (host, "eth0"), (gw, f"g{p}"), host_link(link)))
            host_plans[host] = HostPlan(host, topo.address_of(host), "fixed",
                                        {"eth0": ("eth0", _mac(0x10, len(host_plans) + 1))}, switch_port=p)
            continue
        if not ends <= {gw, *lab_of}:
            problems.append(f"link {link.a}–{link.b}: unknown switch")
            continue
        emu = None
        if link.delay or link.loss or link.reverse_loss:
            emu = Emulated(LinkParams(None, link.delay, link.reverse_loss, UNBOUNDED),
                           LinkParams(None, link.delay, link.loss, UNBOUNDED))
        for sa in lab_of.get(link.a, [link.a]):
            for sb in lab_of.get(link.b, [link.b]):
                pa = port_of(sa)
                switches[sa][pa] = ifname(sa, pa)
                pb = port_of(sb)
                switches[sb][pb] = ifname(sb, pb)
                peers[sa][sb], peers[sb][sa] = pa, pb
                wires.append(Wire("switch-switch", (sa, switches[sa][pa]), (sb, switches[sb][pb]), emu))
                for sw, port, q in ((sa, pa, link.queue), (sb, pb, link.reverse_queue)):
                    if link.rate_bps is not None:
                        queues.append(QueueRate(sw, port, pps(link.rate_bps, size), q.limit if q else 64))
    for b in topo.base_stations:
        if any(sw not in peers[gw] for sw in lab_of[b.name]):
            problems.append(f"base station {b.name} has no link to the gateway {gw}")
        if b.route_delay:
            problems.append(f"base station {b.name}: route_delay is the simulator's stand-in for the controller's "
                            "handoff time; the lab's controller takes its own (set it to 0 for the lab)")
        if b.forward_delay:
            problems.append(f"base station {b.name}: forward_delay is not emulated in the lab (its controller "
                            "flushes as soon as the handoff's markers allow); set it to 0 for the lab")
    for h in topo.correspondents:
        if h.name not in host_plans and not any(h.name in p for p in problems):
            problems.append(f"correspondent {h.name} has no link to the gateway")
    # cells: access ports, bridges, AQM, queue rates
    cell_ports: dict[str, tuple[str, int]] = {}
    bridges: dict[str, str] = {}
    aqm: dict[tuple[str, int], dict[str, Any]] = {}
    for k, c in enumerate(topo.cells):
        sw = cell_switch[c.name]
        p = port_of(sw)
        switches[sw][p] = ifname(sw, p)
        cell_ports[c.name] = (sw, p)
        bridges[c.name] = f"br{k}"
        wires.append(Wire("switch-bridge", (sw, switches[sw][p]), (sw, f"br{k}")))
        queues.append(QueueRate(sw, p, pps(c.rate_bps, size), c.queue.limit))
        aqm[(sw, p)] = _aqm(c.queue, c.rate_bps, size, notes, f"cell {c.name}")
        if c.up_rate_bps != c.rate_bps:
            notes.append(f"cell {c.name}: the uplink's {c.up_rate_bps:g} b/s is emulated per host, not shared")
    # hosts in cells: every (host, iface, cell) the timeline ever uses gets a path
    places: dict[str, set[tuple[str, str]]] = {}
    active_at_start: dict[str, tuple[str, str]] = {}
    for m in topo.mobile_hosts:
        places[m.name] = set()
        if m.start:
            places[m.name].add(m.start)
            active_at_start[m.name] = m.start
    for op in scn.mobility:
        if op.op == "attach":
            places[op.mh].add((op.iface, op.attach_cell))
    for bg in topo.background_hosts:
        places[bg.name] = {("radio", bg.cell)}
        active_at_start[bg.name] = ("radio", bg.cell)
    n_dev = 0
    for m in topo.mobile_hosts:
        devices = {}
        for iface, cell in sorted(places[m.name]):
            n_dev += 1
            dev = f"{iface[:6]}-{cell[:6]}"
            devices[f"{iface}/{cell}"] = (dev, _mac(0x20, n_dev))
            wires.append(_cell_wire(scn, m.name, iface, cell, dev, (cell_ports[cell][0], bridges[cell]),
                                    active_at_start.get(m.name) == (iface, cell)))
        host_plans[m.name] = HostPlan(m.name, m.home, "mobile", devices, dict(m.interfaces))
    for bg in topo.background_hosts:
        n_dev += 1
        dev = f"radio-{bg.cell[:6]}"
        host_plans[bg.name] = HostPlan(bg.name, bg.address, "background",
                                       {f"radio/{bg.cell}": (dev, _mac(0x20, n_dev))})
        wires.append(_cell_wire(scn, bg.name, "radio", bg.cell, dev, (cell_ports[bg.cell][0], bridges[bg.cell]), True))
    service_ports: dict[str, int] = {}
    if topo.buffer_service:        # one port of every switch to the service (the rig puts its end in the root namespace)
        for sw in order:
            service_ports[sw] = port_of(sw)
            switches[sw][service_ports[sw]] = ifname(sw, service_ports[sw])
    if problems:
        raise LabError(scn.name, problems)
    plans = []
    silent = {s for b in topo.base_stations if not b.signal_forwarding for s in lab_of[b.name]}
    for k, name in enumerate([gw, *bs_names]):
        plans.append(SwitchPlan(name, "gateway" if name == gw else "bs", str(SWITCH_NET[k + 1]), _mac(0x01, k + 1),
                                dict(sorted(switches[name].items())), 0 if name == gw else k, name not in silent))
    network = _description(scn, plans, peers, host_plans, cell_ports, aqm, service_ports)
    return LabPlan(plans, wires, queues, host_plans, cell_ports, bridges, network, notes, service_ports)


def _cell_wire(scn: Scenario, host: str, iface: str, cell: str, dev: str, bridge: tuple[str, str],
               up: bool) -> Wire:
    c = scn.topology.cell(cell)
    down = LinkParams(None, c.delay, c.loss, UNBOUNDED)            # the BS's egress queue is the bottleneck
    upl = LinkParams(c.up_rate_bps, c.delay, c.up_loss, c.up_queue_limit)
    return Wire("host-bridge", (host, dev), bridge, Emulated(down, upl), up_at_start=up,
                key=f"{host}/{iface}/{cell}")


def _description(scn: Scenario, switches: list[SwitchPlan], peers: dict[str, dict[str, int]],
                 hosts: dict[str, HostPlan], cell_ports: dict[str, tuple[str, int]],
                 aqm: dict[tuple[str, int], dict[str, Any]], service_ports: dict[str, int]) -> dict[str, Any]:
    """The controller's network description (docs/controller.md); paths, gRPC addresses and the buffer
    service's control address and interfaces are added at run time."""
    gw = switches[0]
    out_switches = []
    for sw in switches:
        ports = []
        for number in sw.ports:
            peer = next((n for n, p in peers[sw.name].items() if p == number), None)
            if peer is not None:
                ports.append({"number": number, "role": "peer", "peer": peer})
            elif service_ports.get(sw.name) == number:
                ports.append({"number": number, "role": "buffer"})
            elif (sw.name, number) in aqm:
                ports.append({"number": number, "role": "access", "aqm": aqm[(sw.name, number)]})
            else:
                ports.append({"number": number, "role": "core"})
        d: dict[str, Any] = {"name": sw.name, "role": sw.role, "device_id": 0, "address": sw.address,
                             "mac": sw.mac, "ports": ports}
        if sw.role == "bs":
            d["cell_id"] = sw.cell_id
            if not sw.signal_forwarding:
                d["signal_forwarding"] = False      # revision-1 HANDOFFs after this BS's flush
        out_switches.append(d)
    fixed = []
    for h in hosts.values():
        if h.kind == "fixed":
            fixed.append({"name": h.name, "address": h.address, "mac": h.devices["eth0"][1], "switch": gw.name,
                          "port": h.switch_port, "gateway": HOST_GATEWAY})
    mobiles = []
    partners: dict[str, set[str]] = {}
    for f in scn.flows:
        partners.setdefault(f.src, set()).add(f.dst)
        partners.setdefault(f.dst, set()).add(f.src)
    fixed_names = {h.name for h in hosts.values() if h.kind == "fixed"}
    probes = {(op.mh, op.iface, op.attach_cell) for op in scn.mobility if op.op == "attach" and op.probe}
    for h in hosts.values():
        if h.kind == "fixed":
            continue
        d = {"name": h.name, "address": h.address,
             "correspondents": sorted(partners.get(h.name, set()) & fixed_names)}
        cells = {cell_ports[cell][0]: h.coas[iface] for _, iface, cell in
                 ((m, i, c) for m, i, c in probes if m == h.name)}
        if cells:
            d["cell_addresses"] = cells
        mobiles.append(d)
    service = {"buffer_service": {"address": BUFFER_SERVICE[0], "mac": BUFFER_SERVICE[1]}} if service_ports else {}
    return {**service, "buffer": {"per_mh_packets": 64, "total_packets": max(4096, 64 * len(mobiles))},
            "access_gateway": {"address": ACCESS_GATEWAY[0], "mac": ACCESS_GATEWAY[1]},
            "switches": out_switches, "fixed_hosts": fixed, "mobile_hosts": mobiles}
