"""Keep the kernel's TCP from answering segments that belong to our user-space connection.

The kernel sees every segment our AF_PACKET socket sees; with no socket of its
own for them it would answer each with a RST and kill the connection. We
stop that at the first netfilter hook: an nftables table of our own, in the
namespace the driver runs in, drops inbound TCP to our (address,) port at
prerouting with priority raw (-300), i.e. before conntrack, routing and the
kernel's TCP. AF_PACKET taps packets earlier than netfilter, so we still
receive them. The table is named per process and port and deleted on close.

The port itself is reserved by an ordinary kernel TCP socket bound to it and
never listening, so the kernel never hands it to one of its own connections
(and a port already in use is a clear error, not a silent clash).
"""
from __future__ import annotations

import itertools
import os
import socket
import subprocess

from p4handoff import netns

_tables = itertools.count()
NFT_TIMEOUT = 10.0


class GuardError(OSError):
    """nftables refused the rule (not root, no nf_tables, ...)."""


def _nft(args: list[str], netns_fd: int, script: str | None = None) -> str:
    """Run nft in the namespace the guard was made in, whichever thread calls."""
    try:
        done = subprocess.run(["nft", *args], input=script, capture_output=True, text=True,
                              timeout=NFT_TIMEOUT, preexec_fn=lambda: netns.enter(netns_fd))
    except FileNotFoundError as exc:
        raise GuardError("nft (nftables) is not installed: it is needed to keep the kernel's TCP "
                         "from resetting our connections") from exc
    except subprocess.TimeoutExpired as exc:
        raise GuardError(f"nft did not answer within {NFT_TIMEOUT} s") from exc
    if done.returncode != 0:
        raise GuardError(f"nft {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


class KernelTcpGuard:
    """Reserve a local TCP port and make the kernel deaf to inbound segments for it."""

    def __init__(self, port: int = 0, addr: str | None = None) -> None:
        self.addr = addr
        self._netns = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        self._reservation = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._reservation.bind((addr or "0.0.0.0", port))
        except OSError as exc:
            self._reservation.close()
            os.close(self._netns)
            raise OSError(exc.errno, f"cannot reserve TCP port {port} on {addr or 'any address'}: "
                                     f"{exc.strerror}") from None
        self.port: int = self._reservation.getsockname()[1]
        self.table = f"p4h_guard_{os.getpid()}_{self.port}_{next(_tables)}"
        match = f"ip daddr {addr} " if addr else ""
        try:
            _nft(["-f", "-"], self._netns, f"table inet {self.table} {{\n"
                 f"  chain pre {{ type filter hook prerouting priority raw; policy accept;\n"
                 f"    {match}tcp dport {self.port} counter drop\n  }}\n}}\n")
        except GuardError:
            self._reservation.close()
            os.close(self._netns)
            raise

    def dropped_packets(self) -> int:
        """How many segments the rule has hidden from the kernel so far."""
        words = _nft(["list", "table", "inet", self.table], self._netns).split()
        for word, value in zip(words, words[1:]):
            if word == "packets":
                return int(value)
        return 0

    def close(self) -> None:
        if self._reservation.fileno() != -1:
            self._reservation.close()
            try:
                _nft(["delete", "table", "inet", self.table], self._netns)
            finally:
                os.close(self._netns)

    def __enter__(self) -> "KernelTcpGuard":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
