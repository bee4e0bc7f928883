"""Deterministic discrete-event network simulator for the sans-IO endpoints.

The endpoints of `p4handoff.hosts.tcp` run here unchanged, in virtual time, on links
with rate, delay, random loss, outages and the base stations' queues
(drop-tail, RED, M-RED, DSBP's dummy class), while a mobility timeline
moves mobile hosts between cells and sends handoff notifications. Model
and choices: docs/simulator.md.
"""
from p4handoff.hosts.sim.engine import Simulator
from p4handoff.hosts.sim.link import Link
from p4handoff.hosts.sim.measure import FlowStats, QueueSampler, TraceWriter, ideal_bps
from p4handoff.hosts.sim.network import Flow, Network
from p4handoff.hosts.sim.nodes import BaseStation, Cell, Host, MobileHost, Router
from p4handoff.hosts.sim.packet import DATA, DUMMY, PRIORITY, Packet, packet_of, wire_size
from p4handoff.hosts.sim.queues import MRED, RED, Queue

__all__ = [
    "Simulator", "Network", "Flow", "Link", "Queue", "RED", "MRED",
    "Host", "MobileHost", "Router", "BaseStation", "Cell",
    "Packet", "packet_of", "wire_size", "DATA", "PRIORITY", "DUMMY",
    "FlowStats", "QueueSampler", "TraceWriter", "ideal_bps",
]
