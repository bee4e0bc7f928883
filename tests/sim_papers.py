"""The papers' simulated setups, built on the simulator's API.

Each builder returns an `Experiment` (network, flows, mobile host) ready
to `run`. Values the papers do not give are parameters with the defaults
stated in docs/simulator.md ("The papers' setups"); the lab's scenario
files describe the same topologies in YAML.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from p4handoff.hosts.sim.measure import TraceWriter
from p4handoff.hosts.sim.network import Network
from p4handoff.hosts.sim.nodes import Host, MobileHost
from p4handoff.hosts.sim.queues import Queue
from p4handoff.hosts.sim.tcpflow import TcpFlow, tcp_flow
from p4handoff.hosts.tcp import TcpConfig

WLAN = (20e6, 0.001)      # IEEE 802.11a: rate b/s, one-way delay s
UMTS = (384e3, 0.070)     # IMT-2000 (3G)
LAN = (100e6, 0.005)      # wired LAN interface


@dataclass
class Experiment:
    net: Network
    flows: list[TcpFlow]
    source: Host
    mh: MobileHost | None = None
    notes: dict[str, object] = field(default_factory=dict)

    def run(self, until: float) -> None:
        self.net.run(until)

    def ideal_intervals(self) -> list[tuple[float, float, float]]:
        if self.mh is None:
            raise ValueError("no mobile host in this experiment")
        return self.net.path_intervals(self.mh, self.source)


def vertical_handoff(scheme: str, *, seed: int = 0, first: tuple[float, float] = WLAN,
                     second: tuple[float, float] = UMTS, switches: Sequence[float] = (10.0,),
                     outage: float = 0.5, warn: float = 0.0, wired_rate: float = 10e6, wired_delay: float = 0.001,
                     wired_buffer: int = 50, first_buffer: int = 50, second_buffer: int = 10,
                     mss: int = 1000, window_segments: int = 64, min_rto: float = 1.0,
                     loss: float = 0.0, trace: TraceWriter | None = None) -> Experiment:
    """Tsukamoto et al.: CH —(wired bottleneck)— access router with two cells — MH.

    The MH starts on `first`; at each time in `switches` it leaves the
    current interface and, `outage` seconds later, is on the other one.
    `second_buffer` is the bottleneck buffer that matters after a switch to
    a slower cell (packets, drop-tail); `loss` is random loss on both cells;
    `warn` sends DETACH that long before each switch (Freeze-TCP).
    """
    net = Network(seed=seed)
    ch = net.host("ch", "10.0.0.1")
    ar = net.base_station("ar")
    net.link(ch, ar, wired_rate, wired_delay, queue=Queue(wired_buffer))
    cells = {"if1": net.cell("if1", ar, first[0], first[1], loss=loss, queue=Queue(first_buffer)),
             "if2": net.cell("if2", ar, second[0], second[1], loss=loss, queue=Queue(second_buffer))}
    mh = net.mobile_host("mh", "10.0.9.1", {"if1": "10.0.1.9", "if2": "10.0.2.9"})
    net.start_in(mh, "if1", cells["if1"])
    current = "if1"
    for t in switches:
        other = "if2" if current == "if1" else "if1"
        net.vertical_handoff(mh, current, other, cells[other], at=t, outage=outage, warn=warn)
        current = other
    config = TcpConfig(mss=mss, window_segments=window_segments, min_rto=min_rto)
    flow = tcp_flow(net, scheme, ch, mh, scheme, config=config, trace=trace)
    return Experiment(net, [flow], ch, mh, {"second_buffer": second_buffer, "window_segments": window_segments,
                                            "min_rto": min_rto, "wired_buffer": wired_buffer})


def overlap_handoff(scheme: str, *, seed: int = 0, old_rate: float = 6e6, new_rate: float = 11e6,
                    enter: float = 10.0, speed_kmh: float = 50.0, radius: float = 500.0,
                    distance: float = 850.0, rtt: float = 0.060, wired_rate: float = 155e6,
                    cell_buffer: int = 50, mss: int = 1024, window_segments: int = 90,
                    trace: TraceWriter | None = None) -> Experiment:
    """Taleb et al. (DSBP): gateway serving two overlapping cells; handoff at the overlap's middle.

    The overlap length is 2·radius − distance (150 m); at `speed_kmh` the MH
    spends overlap/speed seconds in it. One-way delays add up to `rtt`/2:
    1 ms CH–gateway, 1 ms gateway–BS, the rest on the radio link.
    """
    overlap_m = 2 * radius - distance
    if overlap_m <= 0:
        raise ValueError(f"cells of radius {radius} m that far apart ({distance} m) do not overlap")
    if speed_kmh <= 0:
        raise ValueError(f"speed must be positive, got {speed_kmh}")
    dwell = overlap_m / (speed_kmh / 3.6)
    radio_delay = rtt / 2 - 0.002
    if radio_delay < 0:
        raise ValueError(f"rtt {rtt} s is shorter than the wired part (4 ms)")
    net = Network(seed=seed)
    ch = net.host("ch", "10.0.0.1")
    gw = net.router("gw")
    bs1, bs2 = net.base_station("bs1"), net.base_station("bs2")
    net.link(ch, gw, wired_rate, 0.001)
    net.link(gw, bs1, wired_rate, 0.001)
    net.link(gw, bs2, wired_rate, 0.001)
    old = net.cell("old", bs1, old_rate, radio_delay, queue=Queue(cell_buffer))
    new = net.cell("new", bs2, new_rate, radio_delay, queue=Queue(cell_buffer))
    mh = net.mobile_host("mh", "10.0.9.1", {"old": "10.0.1.9", "new": "10.0.2.9"})
    net.start_in(mh, "old", old)
    net.overlap(mh, "old", "new", new, enter=enter, handoff=enter + dwell / 2, leave=enter + dwell)
    config = TcpConfig(mss=mss, window_segments=window_segments)
    flow = tcp_flow(net, scheme, ch, mh, scheme, config=config, trace=trace)
    return Experiment(net, [flow], ch, mh, {"enter": enter, "handoff": enter + dwell / 2,
                                            "leave": enter + dwell, "cell_buffer": cell_buffer,
                                            "window_segments": window_segments})


def dumbbell(schemes: Sequence[str], *, seed: int = 0, loss: float = 0.01, rate: float = 10e6,
             delay: float = 0.020, buffer: int = 50, mss: int = 1000, window_segments: int = 256,
             trace: TraceWriter | None = None) -> Experiment:
    """Utsumi & Zabir (UCC): senders —100 Mb/s, 0 ms— R —`rate`, `delay`, `loss`— receiver.

    One sender per scheme in `schemes` (N1, N2, …), all to one receiver;
    random loss on R → receiver only (data direction), R's buffer `buffer`.
    """
    if not schemes:
        raise ValueError("a dumbbell needs at least one flow")
    net = Network(seed=seed)
    r = net.router("r")
    rx = net.host("rx", "10.0.1.1")
    net.link(r, rx, rate, delay, loss=loss, reverse_loss=0.0, queue=Queue(buffer))
    flows = []
    config = TcpConfig(mss=mss, window_segments=window_segments)
    for k, scheme in enumerate(schemes, start=1):
        tx = net.host(f"n{k}", f"10.0.0.{k}")
        net.link(tx, r, 100e6, 0.0)
        flows.append(tcp_flow(net, f"{scheme}{k}", tx, rx, scheme, config=config, dport=5000 + k,
                              trace=trace))
    return Experiment(net, flows, flows[0].flow.sender, None, {"buffer": buffer, "loss": loss,
                                                               "window_segments": window_segments})
