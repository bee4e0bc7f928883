"""The validated scenario: frozen dataclasses the backends, metrics and report read (built by p4handoff.scenario.loader)."""
from __future__ import annotations

import random
import re
from collections import deque
from collections.abc import Iterable
from fnmatch import fnmatchcase
from dataclasses import dataclass
from typing import Any

from p4handoff.wire import AQM_MODES

PAPERS = ("handoff-ssthresh", "dsbp", "ucc", "ipf-mred", "none")
#: The project's account of the papers: each key above but `none` is the anchor of its section.
PAPERS_DOC = "docs/papers.md"
AQMS = tuple(AQM_MODES)      # droptail, red, mred: the P4 program's AQM_MODE_* (p4handoff/wire.py)
OUTAGE_RULES = ("excluded", "credited")
#: How a claim over repeats is decided, beside its verdict on the means (docs/lab.md, "Verdicts"): it must also
#: hold in more than half of the repeats (majority, the default), in every repeat (all), or on the means only.
REPEAT_RULES = ("majority", "all", "means")
FLOW_METRICS = ("throughput", "percent_of_ideal", "loss_rate", "data_losses", "delivered_bytes", "dummies_sent",
                "forwarded_resent")
LINK_METRICS = ("utilization", "max_avg_queue", "max_queue", "min_queue", "drops", "priority_admitted")
#: Metrics measured in b/s and as fractions (shown in Mb/s and %; files may write '2Mbps', '5%').
RATE_METRICS = ("throughput", "total_throughput", "ideal")
FRACTION_METRICS = ("loss_rate", "utilization")
GLOBAL_METRICS = ("total_throughput", "ideal")
METRICS = FLOW_METRICS + LINK_METRICS + GLOBAL_METRICS
COMPARED = "compared"
HEADER_BYTES = 52  # IPv4 + TCP + timestamp option: a 1000-byte segment is 1052 bytes on the wire
SCENARIO_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def paper_ref(paper: str) -> str:
    """Where a scenario's paper is described, as reports print it (`docs/papers.md#dsbp`)."""
    return "none (beyond the four papers)" if paper == "none" else f"{PAPERS_DOC}#{paper}"


@dataclass(frozen=True)
class QueueSpec:
    """An egress queue (packets): drop-tail, RED or M-RED, with DSBP's dummy threshold."""

    aqm: str
    limit: int
    min_th: float = 0.0
    max_th: float = 0.0
    max_p: float = 0.0
    w_q: float = 0.0
    mean_pkt_size: int = 1052
    dummy_threshold: int | None = None


@dataclass(frozen=True)
class LinkSpec:
    """A full-duplex wired link; `queue` is a→b's egress queue, `reverse_queue` b→a's."""

    a: str
    b: str
    rate_bps: float | None
    delay: float
    loss: float
    queue: QueueSpec | None
    reverse_queue: QueueSpec | None
    reverse_loss: float

    @property
    def name(self) -> str:
        return f"{self.a}->{self.b}"


@dataclass(frozen=True)
class CellSpec:
    name: str
    bs: str
    rate_bps: float
    delay: float
    loss: float
    queue: QueueSpec
    up_rate_bps: float
    up_loss: float
    up_queue_limit: int


@dataclass(frozen=True)
class BaseStationSpec:
    name: str
    ipf: bool = False
    ipf_limit: int = 64
    forward_delay: float = 0.0
    signal_forwarding: bool = True
    route_delay: float = 0.0


@dataclass(frozen=True)
class HostSpec:
    """A fixed host (correspondent) on one wired link."""

    name: str
    address: str


@dataclass(frozen=True)
class MobileHostSpec:
    name: str
    home: str
    interfaces: dict[str, str]
    start: tuple[str, str] | None       # (interface, cell) at t = 0


@dataclass(frozen=True)
class BackgroundHostSpec:
    """A host that stays in one cell the whole run (the other connections at a BS)."""

    name: str
    address: str
    cell: str


@dataclass(frozen=True)
class Topology:
    correspondents: tuple[HostSpec, ...]
    routers: tuple[str, ...]
    base_stations: tuple[BaseStationSpec, ...]
    links: tuple[LinkSpec, ...]
    cells: tuple[CellSpec, ...]
    mobile_hosts: tuple[MobileHostSpec, ...]
    background_hosts: tuple[BackgroundHostSpec, ...]
    buffer_service: bool = False     # lab: IPF's buffer in a buffer service on switch ports, not in the controller

    def cell(self, name: str) -> CellSpec:
        return next(c for c in self.cells if c.name == name)

    def host_names(self) -> list[str]:
        return ([h.name for h in self.correspondents] + [m.name for m in self.mobile_hosts]
                + [b.name for b in self.background_hosts])

    def address_of(self, host: str) -> str:
        for h in self.correspondents:
            if h.name == host:
                return h.address
        for m in self.mobile_hosts:
            if m.name == host:
                return m.home
        for b in self.background_hosts:
            if b.name == host:
                return b.address
        raise KeyError(host)

    def wired_path(self, src: str, dst: str) -> list[tuple[LinkSpec, bool]] | None:
        """Shortest-hop wired path src → dst as (link, forward?) pairs (ties: first link listed)."""
        prev: dict[str, tuple[str, LinkSpec, bool]] = {}
        seen, todo = {src}, deque([src])
        hosts = set(self.host_names())
        while todo:
            node = todo.popleft()
            if node == dst:
                break
            if node in hosts and node != src:
                continue  # hosts do not forward
            for link in self.links:
                for here, there, fwd in ((link.a, link.b, True), (link.b, link.a, False)):
                    if here == node and there not in seen:
                        seen.add(there)
                        prev[there] = (node, link, fwd)
                        todo.append(there)
        if dst not in seen:
            return None
        path: list[tuple[LinkSpec, bool]] = []
        node = dst
        while node != src:
            node, link, fwd = prev[node][0], prev[node][1], prev[node][2]
            path.append((link, fwd))
        return path[::-1]


@dataclass(frozen=True)
class TcpSpec:
    """The TCP settings of one flow; every value the papers leave open is stated, not defaulted."""

    packet_size: int        # payload bytes of a full segment (the papers' "packet size")
    window: int             # receiver window = cwnd cap, in segments
    iw: int
    min_rto: float
    delayed_ack: bool
    initial_rto: float = 1.0
    sack: bool = True
    timestamps: bool = True


@dataclass(frozen=True)
class FlowSpec:
    name: str
    src: str
    dst: str
    scheme: str
    start: float
    stop: float | None
    tcp: TcpSpec
    start_jitter: float = 0.0

    def start_at(self, seed: int) -> float:
        """When the flow starts in the run with `seed`: `start` plus a draw in [0, start_jitter) from
        the seed and the flow's name, the same in both backends. Why: a window-limited flow sends
        its window as one train per RTT, and without a draw every seed of the simulator puts a
        handoff at the same point of that train, where each lab run falls anywhere in it."""
        if not self.start_jitter:
            return self.start
        return self.start + random.Random(f"{seed}/{self.name}/start").uniform(0.0, self.start_jitter)


@dataclass(frozen=True)
class MobilityOp:
    """One primitive of the timeline; both backends replay these in order."""

    at: float
    mh: str
    op: str                 # attach | detach | handoff
    iface: str
    cell: str | None = None
    probe: bool = False
    notify: bool = True
    warn: float = 0.0

    @property
    def attach_cell(self) -> str:
        """The cell an attach joins: p4handoff.scenario.timeline gives every attach one (detach and handoff have none)."""
        if self.op != "attach" or self.cell is None:
            raise ValueError(f"{self.op} of {self.mh} at t={self.at:g} s joins no cell")
        return self.cell


@dataclass(frozen=True)
class Window:
    name: str
    t0: float
    t1: float


@dataclass(frozen=True)
class IdealSpec:
    """The papers' ideal: Σ(bottleneck rate × time the MH's path is up) / window."""

    mh: str
    source: str
    outages: str            # excluded: outage time counts 0; credited: counts at the next link's rate


def flows_matching(names: Iterable[str], patterns: Iterable[str]) -> tuple[str, ...]:
    """The names (in their order) that one of `patterns` matches: a name, or a shell pattern such as "m*"."""
    patterns = tuple(patterns)
    return tuple(n for n in names if any(fnmatchcase(n, p) for p in patterns))


@dataclass(frozen=True)
class Quantity:
    """One number a report table shows: a metric of a flow, a link or the run, in a window."""

    metric: str
    window: str
    flow: str | None = None
    link: str | None = None
    flows: tuple[str, ...] = ()      # total_throughput of the flows these match ("m*"; none: measure.flows)

    @property
    def subject(self) -> str:
        """What it is measured of, as the reports say it: " of m1", " on new", " of m1+m2", or ""."""
        if self.link:
            return f" on {self.link}"
        names = self.flow or "+".join(self.flows)
        return f" of {names}" if names else ""

    @property
    def about(self) -> str:
        """Its flow, link or flows (m1+m2), or "all": the subject in its key."""
        return self.flow or self.link or "+".join(self.flows) or "all"

    @property
    def key(self) -> str:
        return f"{self.metric}[{self.about}]@{self.window}"


@dataclass(frozen=True)
class Measure:
    windows: tuple[Window, ...]
    flows: tuple[str, ...]
    ideal: IdealSpec | None
    table: tuple[Quantity, ...]
    queue_links: tuple[str, ...]
    queue_interval: float
    series_interval: float
    plot_range: tuple[float, float]

    def window(self, name: str) -> Window:
        return next(w for w in self.windows if w.name == name)


@dataclass(frozen=True)
class Expectation:
    """A claim of the paper the report checks: an ordering, a ratio or a bound."""

    kind: str                       # order | ratio | bound
    quantity: Quantity
    variants: tuple[str, ...]
    claim: str
    at_least: float | None = None
    at_most: float | None = None
    published: float | None = None
    repeats: str = "majority"       # one of REPEAT_RULES


@dataclass(frozen=True)
class Published:
    source: str
    window: str | None
    ideal_bps: float | None
    values: dict[str, dict[str, float]]        # variant label -> {metric: value in the metric's base unit}
    findings: tuple[str, ...]
    expect: tuple[Expectation, ...]
    #: values read off the paper's figures at sweep points: (((sweep path, value), ...), label, metric, value)
    points: tuple[tuple[tuple[tuple[str, Any], ...], str, str, float], ...] = ()


@dataclass(frozen=True)
class Variant:
    """One column of the comparison: a scheme for the `compared` flows and/or field overrides."""

    label: str
    scheme: str | None
    overrides: tuple[tuple[str, Any], ...] = ()
    tcp: tuple[tuple[str, Any], ...] = ()      # TCP settings of its `compared` flows (a scheme-specific window)


@dataclass(frozen=True)
class SweepAxis:
    """Values for one field, or for several fields that move together (`path` lists them, comma-separated)."""

    path: str
    label: str
    values: tuple[Any, ...]

    @property
    def paths(self) -> list[str]:
        return [p.strip() for p in self.path.split(",")]


@dataclass(frozen=True)
class Scenario:
    """One concrete, validated run description (a variant at a sweep point)."""

    name: str
    title: str
    paper: str
    duration: float
    seed: int
    tcp: TcpSpec
    topology: Topology
    flows: tuple[FlowSpec, ...]
    mobility: tuple[MobilityOp, ...]
    marks: dict[str, float]
    measure: Measure
    assumptions: tuple[str, ...]
    variant: str
    point: tuple[tuple[str, Any], ...]
    lab_time_scale: float = 1.0     # the lab plays it this many times slower (docs/lab.md, "Time dilation")

    def flow(self, name: str) -> FlowSpec:
        return next(f for f in self.flows if f.name == name)

    def summed_flows(self, q: Quantity) -> tuple[str, ...]:
        """The flows a total_throughput sums: those its `flows` patterns match, else measure.flows."""
        return flows_matching([f.name for f in self.flows], q.flows) if q.flows else self.measure.flows
