"""Deterministic discrete-event network simulator for the sans-IO endpoints.

The endpoints of `hosts.tcp` run here unchanged, in virtual time, on links
with rate, delay, random loss, outages and the base stations' queues
(drop-tail, RED, M-RED, DSBP's dummy class), while a mobility timeline
moves mobile hosts between cells and sends handoff notifications. Model
and choices: docs/simulator.md.
"""
from hosts.sim.engine import Simulator
from hosts.sim.link import Link
from hosts.sim.measure import FlowStats, QueueSampler, TraceWriter, ideal_bps
from hosts.sim.network import Flow, Network
from hosts.sim.nodes import BaseStation, Cell, Host, MobileHost, Router
from hosts.sim.packet import DATA, DUMMY, PRIORITY, Packet, packet_of, wire_size
from hosts.sim.queues import MRED, RED, Queue

__all__ = [
    "Simulator", "Network", "Flow", "Link", "Queue", "RED", "MRED",
    "Host", "MobileHost", "Router", "BaseStation", "Cell",
    "Packet", "packet_of", "wire_size", "DATA", "PRIORITY", "DUMMY",
    "FlowStats", "QueueSampler", "TraceWriter", "ideal_bps",
]
