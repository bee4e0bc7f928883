"""Credit for packet-outs: at most `window` per switch that the switch has not yet been seen to read.

A big flush sent as one burst of packet-outs loses packets in BMv2: the
switch reads the stream faster than an egress port drains, and
simple_switch drops at a full egress queue (64 packets unless set
otherwise) without telling anyone (bench/packet_out_burst.py: 26 % and
6.5 % of two 1,000-packet bursts lost at depth 64, none at depth 4,096 or
when paced in chunks of 32 or 64). So the daemon sends a telemetry probe
after its packet-outs to a switch (the same probe that fences releases,
release_fence.py): P4Runtime streams are in order and the switch's ingress
is one FIFO, so the probe's answer means every packet-out before it has
left ingress and is queued (or sent) at its egress port. Before a packet-out
that would exceed the window the daemon waits for answers; a flush of up
to `window` packets never waits. This bounds what ingress has not yet read,
not what waits at egress: an egress thread slower than ingress can still
fill a queue across windows (docs/controller.md, "Not yet a guarantee").

Sans-IO: the daemon sends the probes and feeds the answers in; probes on a
switch's fence port are answered in the order they were sent, whoever sent
them, so one record here says which answer is whose.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

WINDOW = 32     # packet-outs per switch: half of BMv2's default egress depth, the other half for what is still queued
# (the description's `controller.packet_out_window`: a deployment whose switches have deeper queues sets it)


@dataclass
class _Switch:
    sent: int = 0                    # packet-outs sent to it, ever (this session)
    read: int = 0                    # of which the switch has been seen to read
    probes: deque[tuple[int, bool]] = field(default_factory=deque)    # (sent when probed, a release fence's?)


class ReleaseCredit:
    """Per-switch count of packet-outs in flight and the probes that will acknowledge them."""

    def __init__(self, window: int = WINDOW) -> None:
        if window < 1:
            raise ValueError(f"the credit window must be at least 1 packet-out, not {window}")
        self.window = window
        self._switches: dict[str, _Switch] = {}

    def _sw(self, switch: str) -> _Switch:
        return self._switches.setdefault(switch, _Switch())

    def sent(self, switch: str) -> None:
        self._sw(switch).sent += 1

    def in_flight(self, switch: str) -> int:
        s = self._sw(switch)
        return s.sent - s.read

    def exhausted(self, switch: str) -> bool:
        """Would one more packet-out exceed the window?"""
        return self.in_flight(switch) >= self.window

    def uncovered(self, switch: str) -> bool:
        """Packet-outs sent after the last probe (no answer on the way will acknowledge them)."""
        s = self._sw(switch)
        return s.sent > (s.probes[-1][0] if s.probes else s.read)

    def probe_sent(self, switch: str, fence: bool) -> None:
        s = self._sw(switch)
        s.probes.append((s.sent, fence))

    def answered(self, switch: str) -> bool | None:
        """A probe answer on the switch's fence port: was it a release fence's (True) or credit's (False)?
        None: no probe of ours was outstanding there (someone else's answer)."""
        s = self._switches.get(switch)
        if s is None or not s.probes:
            return None
        covered, fence = s.probes.popleft()
        s.read = max(s.read, covered)
        return fence

    def forget(self, switch: str) -> None:
        """The switch's session is gone: nothing outstanding will be answered; a new session starts empty."""
        self._switches.pop(switch, None)
