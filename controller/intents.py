"""What the mobility logic asks of the network, independent of P4 names and transport.

Route actions say what one switch does with packets for one address; effects
are the ordered steps of a handoff (route changes, packets to send,
notifications, registration replies). `p4handoff.controller.programmer` turns routes
into P4Runtime entries by P4Info name and `p4handoff.controller.transmit` turns packet
effects into packet-outs, so the state machine in `p4handoff.controller.mobility` runs
unchanged against BMv2 or the in-memory network of the unit tests.
"""
from __future__ import annotations

from dataclasses import dataclass

from p4handoff.notify import Notification
from p4handoff.controller.registration import ReplyCode


# ---- route actions: one per (switch, IPv4 address)

@dataclass(frozen=True)
class Deliver:
    """Send out of a local port to this MAC (the MH on an access port)."""

    port: int
    mac: str


@dataclass(frozen=True)
class Forward:
    """Plain IPv4 forwarding to a directly peered switch (gateway → BS)."""

    peer: str


@dataclass(frozen=True)
class Tunnel:
    """IPv4-in-IPv4 to a peered BS; `priority` marks the outer header (IPF)."""

    peer: str
    priority: bool


@dataclass(frozen=True)
class Punt:
    """Divert to the controller's buffer for this MH (packet-in reason BUFFER)."""


RouteAction = Deliver | Forward | Tunnel | Punt


# ---- effects, applied in order

@dataclass(frozen=True)
class SetRoute:
    """Make `switch` do `action` for `addr` (None: remove the host route).

    `with_previous`: no order against the route change just before it in its list (another switch's): the
    two may be written at once, in one step (effect_batch.py). Effects after both still wait for both."""

    switch: str
    addr: str
    action: RouteAction | None
    with_previous: bool = False


@dataclass(frozen=True)
class Release:
    """Hand one buffered IPv4 packet on towards the MH, priority-marked.

    tunnel=True: packet-out at `source` on its peer port to `target`, wrapped
    in IPv4-in-IPv4 (source → target); the new BS decapsulates and delivers.
    tunnel=False: packet-out at `target` straight onto the MH's access port.
    """

    mh: str
    packet: bytes
    source: str
    target: str
    port: int
    mac: str
    tunnel: bool


@dataclass(frozen=True)
class SendToward:
    """Packet-out of a plain IPv4 packet at `switch` on its peer port to `peer` (gateway drain marker)."""

    switch: str
    peer: str
    packet: bytes


@dataclass(frozen=True)
class Notify:
    """One handoff notification datagram to one host at (switch, port, mac)."""

    note: Notification
    host: str
    addr: str
    switch: str
    port: int
    mac: str


@dataclass(frozen=True)
class Reply:
    """A Registration Reply to the MH that sent the request, out of the access port it came in on."""

    switch: str
    port: int
    mac: str
    dst_addr: str
    dst_port: int
    code: ReplyCode
    payload: bytes


@dataclass(frozen=True)
class Completed:
    """Marks the end of a handoff's effects: everything before it is applied when it is reached
    (the daemon logs `handoff_active` with the time since `started`, the registration's arrival)."""

    mh: str
    started: float


PacketEffect = Release | SendToward | Notify | Reply      # the effects that leave as a packet-out
Effect = SetRoute | PacketEffect | Completed
