"""Bulk TCP transfers in the simulator: a `TcpConnection` pair per flow.

The papers' experiments are greedy bulk transfers; this sets one up with
the project's real TCP core and a scheme on each side (the receiver runs
the same scheme, since DSBP's dummy ACKs and Freeze-TCP's zero window come
from our receiver), and optionally streams the sender's trace records.
"""
from __future__ import annotations

from dataclasses import dataclass

from p4handoff.hosts.sim.measure import FlowStats, TraceWriter
from p4handoff.hosts.sim.network import Flow, Network
from p4handoff.hosts.sim.nodes import Host
from p4handoff.hosts.tcp import TcpConfig, TcpConnection

_BLOCK = bytes(1 << 16)


class BulkSource:
    """`total` bytes (None: endless) of zeros, as the core's data source."""

    def __init__(self, total: int | None = None) -> None:
        if total is not None and total < 0:
            raise ValueError(f"byte count must be >= 0, got {total}")
        self.remaining = total

    def __call__(self, n: int) -> bytes:
        n = min(n, len(_BLOCK))
        if self.remaining is not None:
            n = min(n, self.remaining)
            self.remaining -= n
        return _BLOCK[:n]


class ByteCounter:
    """The receiving application: counts and discards."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, data: bytes) -> None:
        self.count += len(data)


@dataclass
class TcpFlow:
    """A flow with its two connections and the receiving application's byte count."""

    flow: Flow
    sender: TcpConnection
    receiver: TcpConnection
    received: ByteCounter

    @property
    def stats(self) -> FlowStats:
        return self.flow.stats


def tcp_flow(net: Network, name: str, sender: Host, receiver: Host, scheme: str = "newreno", *,
             config: TcpConfig | None = None, receiver_config: TcpConfig | None = None,
             sport: int | None = None, dport: int = 5001, start: float = 0.0, nbytes: int | None = None,
             trace: TraceWriter | None = None) -> TcpFlow:
    """A greedy (or `nbytes`) transfer from `sender` to `receiver` with `scheme`, opened at `start`.

    `trace` receives the sender's TraceRecords as rows (every ACK and event).
    The receiver listens on its home address; the sender connects to it.
    """
    config = config or TcpConfig()
    if sport is None:
        sport = 40000 + len(net.flows)

    snd = TcpConnection(config, sender.addr, sport, cc=scheme, trace=trace.write_record if trace else None,
                        name=f"{name}")
    received = ByteCounter()
    rcv = TcpConnection(receiver_config or config, receiver.addr, dport, cc=scheme, on_data=received,
                        name=f"{name}/rcv")
    rcv.listen()
    snd.connect(receiver.addr, dport)
    snd.set_source(BulkSource(nbytes))
    flow = net.flow(name, sender, snd, receiver, rcv, sport, dport, start=start)
    return TcpFlow(flow, snd, rcv, received)
