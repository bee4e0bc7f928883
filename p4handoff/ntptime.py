"""NTP-format timestamps (64 bits: seconds since 1900 << 32 | fraction), the clock of our replay checks.

Registration identifications in RFC 5944's timestamp mode (§5.7.1) and the
notification trailer's counter (p4handoff/notify_auth.py) both use it.
"""
from __future__ import annotations

NTP_EPOCH = 2_208_988_800        # s from 1900-01-01 to 1970-01-01


def ntp_time(t: float) -> int:
    """A Unix time as a 64-bit NTP timestamp."""
    return (int(t) + NTP_EPOCH) << 32 | int((t % 1) * (1 << 32))


def ntp_seconds(stamp: int) -> float:
    """The Unix time of a 64-bit NTP timestamp."""
    return (stamp >> 32) - NTP_EPOCH + (stamp & 0xFFFFFFFF) / (1 << 32)
