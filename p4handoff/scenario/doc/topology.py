"""`topology:` of a scenario file: hosts, routers, base stations, wired links, cells and their queues.

References to other items (a cell's base station, a link's ends, a host's
cell) are checked against the names the file declares
(`p4handoff.scenario.doc.names`); checks across the whole topology
(unique names and addresses, one link per fixed host, a wired path from
every fixed host to every base station) run once every item is valid.
"""
from __future__ import annotations

from typing import Annotated, Any, Iterable, Iterator

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticKnownError

from p4handoff.aqm_fields import RED_KEYS
from p4handoff.docmodel import IPv4, Checked, DocModel, Loc, Name, Problem, fail, kind, real, whole
from p4handoff.scenario.doc.moves import Move, known_cell
from p4handoff.scenario.doc.names import declared, refers_to
from p4handoff.scenario.doc.values import Flag, NonNegative, Probability, Rate, Time, one_of
from p4handoff.scenario.model import (AQMS, BackgroundHostSpec, BaseStationSpec, CellSpec, HostSpec, LinkSpec,
                                          MobileHostSpec, QueueSpec, Topology)
from p4handoff.wire import QUEUE_MAX

QueueLimit = Annotated[int, whole(1, QUEUE_MAX)]     # the switches' bound (constants.p4)
OpenUnit = Annotated[float, real(0.0, 1.0, lo_open=True)]


def _red_param(description: str) -> Any:
    return Field(default=None, validate_default=True, description=f"{description} (red and mred only, required there)")


class QueueDoc(DocModel):
    """An egress queue in packets: drop-tail, RED or M-RED, with DSBP's dummy threshold."""

    aqm: Annotated[str, one_of(AQMS)] = "droptail"
    limit: QueueLimit
    dummy_threshold: Annotated[int, whole(0, QUEUE_MAX)] | None = Field(
        default=None, description="DSBP: occupancy from which dummy packets are refused (at most limit)")
    min_th: NonNegative | None = _red_param("average queue (packets) where early drops begin")
    max_th: NonNegative | None = _red_param("average queue (packets) where early drops reach max_p")
    max_p: OpenUnit | None = _red_param("drop probability at max_th")
    w_q: OpenUnit | None = _red_param("EWMA weight of the average queue, as the paper states it (the simulator "
                                      "runs it; the lab the nearest 2**-k, k 1..16, noted in the report)")
    mean_pkt_size: Annotated[int, whole(1, 65535)] | None = Field(
        default=None, description="RED idle correction, bytes (default: tcp.packet_size + 52 header bytes)")

    @field_validator("dummy_threshold")
    @classmethod
    def _within_limit(cls, dummy: int | None, info: ValidationInfo) -> int | None:
        limit = info.data.get("limit")
        if dummy is not None and limit is not None and dummy > limit:
            raise ValueError(f"must not exceed limit ({limit}), got {dummy}")
        return dummy

    @field_validator(*RED_KEYS, "mean_pkt_size")
    @classmethod
    def _red_only(cls, value: float | None, info: ValidationInfo) -> float | None:
        """The RED parameters are required by red and mred and refused on a drop-tail queue."""
        aqm = info.data.get("aqm")
        if aqm == "droptail" and value is not None:
            raise ValueError(f"only for aqm red or mred (this queue is {aqm})")
        if aqm in ("red", "mred") and value is None and info.field_name in RED_KEYS:
            raise PydanticKnownError("missing")
        min_th = info.data.get("min_th")
        if info.field_name == "max_th" and value is not None and min_th is not None and not min_th < value:
            raise ValueError(f"must be greater than min_th ({min_th}), got {value}")
        return value

    def spec(self, mean_pkt: int) -> QueueSpec:
        if self.aqm == "droptail":
            return QueueSpec(self.aqm, self.limit, dummy_threshold=self.dummy_threshold)
        assert self.min_th is not None and self.max_th is not None and self.max_p is not None and self.w_q is not None
        return QueueSpec(self.aqm, self.limit, self.min_th, self.max_th, self.max_p, self.w_q,
                         self.mean_pkt_size or mean_pkt, self.dummy_threshold)


class CorrespondentDoc(DocModel):
    """A fixed host on exactly one wired link."""

    name: Name
    address: IPv4


class RouterDoc(DocModel):
    name: Name


class BaseStationDoc(DocModel):
    name: Name
    ipf: Flag = Field(default=False, description="IPF: buffer a leaving MH's packets and flush them to the new BS")
    ipf_limit: QueueLimit = Field(default=64, description="IPF buffer per MH, packets")
    forward_delay: Time = Field(default=0.0, description=(
        "simulator: old BS -> new BS forwarding delay (the flush waits this long after the handoff); "
        "the lab refuses a non-zero value"))
    signal_forwarding: Flag = Field(default=True, description=(
        "IPF: the HANDOFF notification tells the senders that the flight is forwarded (revision 2); "
        "false: a network that sends revision-1 notifications"))
    route_delay: Time = Field(default=0.0, description=(
        "simulator: when an MH leaves this BS, the other nodes' routes follow it this long after the handoff, "
        "this BS forwarding meanwhile, and the HANDOFF notification leaves with them (the lab controller's ordered "
        "handoff; docs/lab.md, 'A route delay'); "
        "the lab refuses a non-zero value, its controller has its own"))


def _pair(value: Any) -> tuple[Any, Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError(f"must be a list of two node names, got {value!r}")
    return value[0], value[1]


class LinkDoc(DocModel):
    """A full-duplex wired link; `queue` is a->b's egress queue, `reverse_queue` b->a's."""

    between: Annotated[tuple[str, str], Checked(_pair, {"type": "array", "items": {"type": "string"},
                                                        "minItems": 2, "maxItems": 2})]
    rate: Rate | None = Field(description="b/s, '10Mbps', or null for an ideal wire (no queue)")
    delay: Time
    loss: Probability = 0.0
    queue: QueueDoc | None = Field(default=None, validate_default=True,
                                   description="the buffer a->b, e.g. {limit: 50}: a link with a rate needs one")
    reverse_queue: QueueDoc | None = Field(default=None, validate_default=True, description="the buffer b->a")
    reverse_loss: Probability | None = Field(default=None, description="b->a loss (default: loss)")

    @field_validator("between")
    @classmethod
    def _wired_ends(cls, ends: tuple[str, str], info: ValidationInfo) -> tuple[str, str]:
        names = declared(info)
        if names is None:
            return ends
        wired, hosts = names("correspondents", "routers", "base_stations"), names("correspondents")
        radio = names("mobile_hosts", "background_hosts").names
        problems: list[Problem] = [
            ((j,), f"{end!r} is not a correspondent, router or base station"
                   + (" (mobile and background hosts reach the network through cells)" if end in radio else ""))
            for j, end in enumerate(ends) if end not in wired]
        if ends[0] == ends[1]:
            problems.append(((), "a link needs two different nodes"))
        elif not problems and ends[0] in hosts.names and ends[1] in hosts.names:
            problems.append(((), "hosts do not forward: connect them through a router"))
        if problems:
            fail(cls, [], problems)
        return ends

    @field_validator("queue", "reverse_queue")
    @classmethod
    def _buffer_with_a_rate(cls, queue: QueueDoc | None, info: ValidationInfo) -> QueueDoc | None:
        if "rate" not in info.data:
            return queue            # the rate's own error
        if info.data["rate"] is None and queue is not None:
            raise ValueError("an ideal wire (rate null) has no queue")
        if info.data["rate"] is not None and queue is None and info.field_name == "queue":
            raise PydanticKnownError("missing")
        return queue

    def spec(self, mean_pkt: int) -> LinkSpec:
        return LinkSpec(self.between[0], self.between[1], self.rate, self.delay, self.loss,
                        self.queue.spec(mean_pkt) if self.queue else None,
                        self.reverse_queue.spec(mean_pkt) if self.reverse_queue else None,
                        self.loss if self.reverse_loss is None else self.reverse_loss)


class UplinkDoc(DocModel):
    rate: Rate | None = Field(default=None, description="default: the cell's (downlink) rate")
    loss: Probability | None = Field(default=None, description="default: the cell's loss")
    queue_limit: QueueLimit = 100


class CellDoc(DocModel):
    """A base station's radio side: the downlink is the bottleneck a handoff changes."""

    name: Name
    bs: Name = Field(description="the base station serving the cell")
    rate: Rate
    delay: Time
    loss: Probability = 0.0
    queue: QueueDoc = Field(description="the cell's buffer (the papers leave it open, so state it)")
    uplink: UplinkDoc = Field(default_factory=lambda: UplinkDoc())

    check_bs = field_validator("bs")(refers_to(("base_stations",), "base station", "base stations"))

    def spec(self, mean_pkt: int) -> CellSpec:
        up = self.uplink
        return CellSpec(self.name, self.bs, self.rate, self.delay, self.loss, self.queue.spec(mean_pkt),
                        self.rate if up.rate is None else up.rate, self.loss if up.loss is None else up.loss,
                        up.queue_limit)


class StartDoc(DocModel):
    iface: Name
    cell: Name

    check_cell = field_validator("cell")(known_cell)


def _missing_interfaces(refs: Iterable[tuple[Loc, str]], info: ValidationInfo) -> list[Problem]:
    """The interface names a mobile host's start or moves use that it does not have."""
    if "interfaces" not in info.data:
        return []               # their own error
    ifaces = info.data["interfaces"]
    return [(loc, f"{info.data.get('name', 'the mobile host')} has no interface {name!r} (has: {', '.join(ifaces)})")
            for loc, name in refs if name not in ifaces]


def _interfaces(value: Any) -> Any:
    if not isinstance(value, dict) or not value:
        raise ValueError(f"must map interface names to care-of addresses, e.g. {{wlan: 10.0.1.9}}, got {kind(value)}")
    return value


class MobileHostDoc(DocModel):
    name: Name
    home: IPv4 = Field(description="home address, the flows' end")
    interfaces: dict[Name, IPv4] = Field(description="care-of address per interface, e.g. {wlan: 10.0.1.9}")
    start: StartDoc | None = Field(default=None, description="attached and active at t = 0")
    moves: tuple[Move, ...] = ()

    check_interfaces = field_validator("interfaces", mode="before")(_interfaces)

    @field_validator("start")
    @classmethod
    def _start_iface(cls, start: StartDoc | None, info: ValidationInfo) -> StartDoc | None:
        problems = _missing_interfaces([(("iface",), start.iface)] if start else [], info)
        if problems:
            fail(cls, [], problems)
        return start

    @field_validator("moves")
    @classmethod
    def _move_ifaces(cls, moves: tuple[Any, ...], info: ValidationInfo) -> tuple[Any, ...]:
        refs = ((((k, *loc), name) for k, move in enumerate(moves) for loc, name in move.ifaces()))
        problems = _missing_interfaces(refs, info)
        if problems:
            fail(cls, [], problems)
        return moves

    def spec(self) -> MobileHostSpec:
        return MobileHostSpec(self.name, self.home, dict(self.interfaces),
                              (self.start.iface, self.start.cell) if self.start else None)


class BackgroundHostDoc(DocModel):
    """A host that stays in one cell the whole run (the other connections at a BS)."""

    name: Name
    address: IPv4
    cell: Name

    check_cell = field_validator("cell")(known_cell)


class TopologyDoc(DocModel):
    correspondents: tuple[CorrespondentDoc, ...] = Field(description="fixed hosts, one wired link each")
    routers: tuple[RouterDoc, ...] = ()
    base_stations: tuple[BaseStationDoc, ...] = Field(description="the base stations cells belong to")
    links: tuple[LinkDoc, ...] = ()
    cells: tuple[CellDoc, ...] = Field(description="each base station's radio cells")
    mobile_hosts: tuple[MobileHostDoc, ...] = ()
    background_hosts: tuple[BackgroundHostDoc, ...] = ()
    buffer_service: Flag = Field(default=False, description=(
        "lab: the IPF base stations' buffer is a buffer service on a port of every switch (dbuf's design; "
        "docs/controller.md, 'The buffer service on switch ports'); false: the controller holds it (packet-in / "
        "packet-out). The simulator's base stations hold their buffer themselves either way"))

    @model_validator(mode="after")
    def _across_items(self) -> TopologyDoc:
        problems = [*self._unique_names(), *self._unique_addresses(), *self._host_links()]
        if not problems:
            topo = self.spec(0)
            problems += [(("links",), f"no wired path from {h.name} to base station {b.name}")
                         for h in self.correspondents for b in self.base_stations if topo.wired_path(h.name, b.name) is None]
        if problems:
            fail(type(self), [], problems)
        return self

    def _named(self) -> Iterator[tuple[str, int, str]]:
        for section in ("correspondents", "routers", "base_stations", "cells", "mobile_hosts", "background_hosts"):
            for i, item in enumerate(getattr(self, section)):
                yield section, i, item.name

    def _unique_names(self) -> Iterator[Problem]:
        first: dict[str, str] = {}
        for section, i, name in self._named():
            if name in first:
                yield (section, i, "name"), f"{name!r} is already used by {first[name]}"
            else:
                first[name] = f"topology.{section}[{name}]"

    def _unique_addresses(self) -> Iterator[Problem]:
        items: list[tuple[Loc, str, str]] = [(("correspondents", i, "address"), f"correspondents[{h.name}].address",
                                              h.address) for i, h in enumerate(self.correspondents)]
        for i, m in enumerate(self.mobile_hosts):
            items.append((("mobile_hosts", i, "home"), f"mobile_hosts[{m.name}].home", m.home))
            items += [(("mobile_hosts", i, "interfaces", iface), f"mobile_hosts[{m.name}].interfaces.{iface}", coa)
                      for iface, coa in m.interfaces.items()]
        items += [(("background_hosts", i, "address"), f"background_hosts[{b.name}].address", b.address)
                  for i, b in enumerate(self.background_hosts)]
        first: dict[str, str] = {}
        for loc, where, addr in items:
            if addr in first:
                yield loc, f"address {addr} is already used by topology.{first[addr]}"
            else:
                first[addr] = where

    def _host_links(self) -> Iterator[Problem]:
        """Every fixed host has exactly one link."""
        hosts = {h.name for h in self.correspondents}
        count: dict[str, int] = {}
        for k, link in enumerate(self.links):
            for end in link.between:
                if end in hosts:
                    count[end] = count.get(end, 0) + 1
                    if count[end] == 2:
                        yield ("links", k, "between"), f"host {end} already has a link (hosts have exactly one)"
        yield from ((("correspondents", i), "has no link (add one under topology.links)")
                    for i, h in enumerate(self.correspondents) if h.name not in count)

    def spec(self, mean_pkt: int) -> Topology:
        """The topology the backends run; RED queues without a mean packet size take `mean_pkt`."""
        return Topology(tuple(HostSpec(h.name, h.address) for h in self.correspondents),
                        tuple(r.name for r in self.routers),
                        tuple(BaseStationSpec(b.name, b.ipf, b.ipf_limit, b.forward_delay, b.signal_forwarding,
                                              b.route_delay) for b in self.base_stations),
                        tuple(li.spec(mean_pkt) for li in self.links), tuple(c.spec(mean_pkt) for c in self.cells),
                        tuple(m.spec() for m in self.mobile_hosts),
                        tuple(BackgroundHostSpec(b.name, b.address, b.cell) for b in self.background_hosts),
                        self.buffer_service)
