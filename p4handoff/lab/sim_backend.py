"""The `sim` backend: a scenario mapped onto the deterministic simulator (`p4handoff.hosts.sim`).

Every scenario element has a direct counterpart (docs/simulator.md):
correspondents → `host`, routers → `router`, base stations →
`base_station` (IPF buffering as configured), links → `link` with their
queues, cells → `cell`, mobile hosts → `mobile_host`, background hosts →
one-interface mobile hosts that never move, the resolved timeline →
`attach`/`detach`/`handoff`, flows → `tcp_flow` with the project's real
TCP core and schemes. The run is a pure function of the scenario and the
seed.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from p4handoff.hosts.sim import MRED, RED, Network, Queue, QueueSampler, TraceWriter
from p4handoff.hosts.sim.nodes import BaseStation, Cell, Host, MobileHost, Node
from p4handoff.hosts.sim.tcpflow import BulkSource, TcpFlow, tcp_flow
from p4handoff.hosts.tcp import TcpConfig
from p4handoff.lab.rundata import FlowData, RunData
from p4handoff.scenario.loader import QueueSpec, Scenario

BACKGROUND_IFACE = "radio"


def make_queue(spec: QueueSpec | None) -> Queue | None:
    """The simulator's queue for a scenario queue spec (None: the simulator's default)."""
    if spec is None:
        return None
    if spec.aqm == "droptail":
        return Queue(spec.limit, spec.dummy_threshold)
    cls = RED if spec.aqm == "red" else MRED
    return cls(spec.limit, spec.min_th, spec.max_th, spec.max_p, spec.w_q, spec.mean_pkt_size, spec.dummy_threshold)


def tcp_config(scn: Scenario, flow_name: str, seed: int) -> TcpConfig:
    t = scn.flow(flow_name).tcp
    return TcpConfig(mss=t.packet_size, window_segments=t.window, iw=t.iw, min_rto=t.min_rto,
                     initial_rto=t.initial_rto, delayed_ack=t.delayed_ack, sack=t.sack, timestamps=t.timestamps,
                     seed=seed)


def sim_link_name(scn: Scenario, name: str) -> str:
    """The simulator's name for a scenario link name (a cell's name means its downlink)."""
    return f"{name}/down" if any(c.name == name for c in scn.topology.cells) else name


def build(scn: Scenario, seed: int, trace_dir: Path | None) -> tuple[Network, dict[str, TcpFlow], list[TraceWriter]]:
    """The network, its flows (sender traces into `trace_dir`) and the open trace writers."""
    topo = scn.topology
    net = Network(seed=seed)
    hosts: dict[str, Host] = {}             # flow ends: correspondents, mobile and background hosts
    stations: dict[str, BaseStation] = {}
    nodes: dict[str, Node] = {}             # link ends: correspondents, routers, base stations
    for h in topo.correspondents:
        nodes[h.name] = hosts[h.name] = net.host(h.name, h.address)
    for r in topo.routers:
        nodes[r] = net.router(r)
    for b in topo.base_stations:
        nodes[b.name] = stations[b.name] = net.base_station(b.name, b.ipf, b.ipf_limit, b.forward_delay,
                                                                 b.signal_forwarding, b.route_delay)
    for link in topo.links:
        net.link(nodes[link.a], nodes[link.b], link.rate_bps, link.delay, link.loss,
                 queue=make_queue(link.queue), reverse_queue=make_queue(link.reverse_queue),
                 reverse_loss=link.reverse_loss)
    cells: dict[str, Cell] = {}
    for c in topo.cells:
        cells[c.name] = net.cell(c.name, stations[c.bs], c.rate_bps, c.delay, c.loss,
                                 queue=make_queue(c.queue), up_rate_bps=c.up_rate_bps, up_loss=c.up_loss,
                                 up_queue_limit=c.up_queue_limit)
    mobiles: dict[str, MobileHost] = {}
    for m in topo.mobile_hosts:
        nodes[m.name] = hosts[m.name] = mobiles[m.name] = mh = net.mobile_host(m.name, m.home, dict(m.interfaces))
        if m.start:
            net.start_in(mh, m.start[0], cells[m.start[1]])
    for k, bgs in enumerate(topo.background_hosts):
        # the simulator wants a care-of address distinct from the home address; nothing sends to it
        coa = f"169.254.{k // 250}.{k % 250 + 1}"
        nodes[bgs.name] = hosts[bgs.name] = bg = net.mobile_host(bgs.name, bgs.address, {BACKGROUND_IFACE: coa})
        net.start_in(bg, BACKGROUND_IFACE, cells[bgs.cell])
    for op in scn.mobility:
        mh = mobiles[op.mh]
        if op.op == "attach":
            net.attach(mh, op.iface, cells[op.attach_cell], at=op.at, probe=op.probe)
        elif op.op == "detach":
            net.detach(mh, op.iface, at=op.at, notify=op.notify, warn=op.warn)
        else:
            net.handoff(mh, op.iface, at=op.at, notify=op.notify)
    flows: dict[str, TcpFlow] = {}
    writers: list[TraceWriter] = []
    for k, f in enumerate(scn.flows):
        writer = TraceWriter(trace_dir / f"trace-{f.name}.csv") if trace_dir is not None else None
        if writer is not None:
            writers.append(writer)
        flows[f.name] = tf = tcp_flow(net, f.name, hosts[f.src], hosts[f.dst], f.scheme,
                                      config=tcp_config(scn, f.name, seed), sport=40001 + k, dport=5001 + k,
                                      start=f.start_at(seed), trace=writer)
        if f.stop is not None and f.stop < scn.duration:
            net.sim.at(f.stop, _stop_sending, tf)
    return net, flows, writers


def _stop_sending(tf: TcpFlow) -> None:
    """The application has no more data: the sender finishes what it has and closes."""
    if tf.sender.closed:
        return
    tf.sender.set_source(BulkSource(0))
    host = tf.flow.sender
    assert isinstance(host, Host)
    host.service(tf.flow.sender_slot)


def run(scn: Scenario, seed: int, out_dir: Path | None,
        progress: Callable[[float], None] | None = None) -> RunData:
    """Run `scn` with `seed`; sender traces and nothing else are written to `out_dir` (if given)."""
    net, flows, writers = build(scn, seed, out_dir)
    data = RunData(flows={}, link_rates={}, backend="sim")
    for name in flows:
        data.flows[name] = FlowData(name, trace=(out_dir / f"trace-{name}.csv") if out_dir else None)
    names = [c.name for c in scn.topology.cells]
    for link in scn.topology.links:
        names += [f"{link.a}->{link.b}", f"{link.b}->{link.a}"]
    sim_links = {name: net.link_named(sim_link_name(scn, name)) for name in names}
    data.link_rates = {name: link.rate_bps for name, link in sim_links.items()}

    def snapshot() -> None:
        data.link_snapshots[net.now] = {name: link.counters() for name, link in sim_links.items()}

    for t in sorted({w.t0 for w in scn.measure.windows} | {w.t1 for w in scn.measure.windows}):
        net.sim.at(t, snapshot)
    sampler = None
    if scn.measure.queue_links:
        sampler = QueueSampler(net.sim, [sim_links[n] for n in scn.measure.queue_links], scn.measure.queue_interval)
    start = time.perf_counter()
    try:
        net.run(scn.duration, progress=progress, step=max(scn.duration / 200, 0.05))
    finally:
        for w in writers:
            w.close()
    data.wall_seconds = time.perf_counter() - start
    for name, tf in flows.items():
        st, fd = tf.stats, data.flows[name]
        fd.ack_times, fd.ack_bytes = list(st.ack_times), list(st.ack_bytes)
        fd.send_times = list(st.data_send_times)
        fd.drop_times, fd.drops = list(st.data_drop_times), dict(st.data_drops)
        fd.dummies_sent, fd.dummy_acks = st.dummies_sent, st.dummy_acks_received
        fd.forwarded_resent_times = st.forwarded_resent_times()
    if sampler is not None:
        back = {sim_link_name(scn, n): n for n in scn.measure.queue_links}
        data.queue_rows = [(t, back[link], q, d, dm, avg) for t, link, q, d, dm, avg in sampler.rows]
    data.timeline = list(net.timeline)
    data.notifications = [(t, f"{n.event.name} seq={n.seq} old_cell={n.old_cell} new_cell={n.new_cell}")
                          for t, n in net.notifications]
    data.counters = net.counters()
    return data


class SimBackend:
    """The runner's view of this module."""

    name = "sim"

    def run(self, scn: Scenario, seed: int, out_dir: Path, progress: Callable[[float], None]) -> RunData:
        return run(scn, seed, out_dir, progress)
