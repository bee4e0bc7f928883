"""Replace a namespace's default route over rtnetlink, without starting `ip`.

The lab moves a mobile host's default route at every handoff. `ip netns exec
… ip route replace` forks and execs twice; on the lab's loaded 2-core
machine that took 50–160 ms per MH, longer than the scenario's whole 50 ms
outage, and the group's MHs waited behind each other (docs/lab.md, "The
lab's outage"). One RTM_NEWROUTE message on a netlink socket opened inside
the namespace (`Namespace.call`) does the same in well under a millisecond,
and its acknowledgement says whether the kernel took it.

The message is what `ip route replace default via GW dev DEV onlink src SRC`
sends: table main, protocol boot, scope universe, unicast, RTNH_F_ONLINK.
"""
from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct

NETLINK_ROUTE = 0
RTM_NEWROUTE = 24
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 0x1, 0x4, 0x100, 0x400
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST, RTNH_F_ONLINK = 254, 3, 0, 1, 4
RTA_OIF, RTA_GATEWAY, RTA_PREFSRC = 4, 5, 7

_NLMSGHDR = struct.Struct("=IHHII")     # length, type, flags, sequence, port id
_RTMSG = struct.Struct("=BBBBBBBBI")    # family, dst_len, src_len, tos, table, protocol, scope, type, flags
_RTATTR = struct.Struct("=HH")          # length, type
ACK_TIMEOUT = 5.0                       # s: the kernel answers at once; this only bounds a broken socket


class RouteError(OSError):
    """The kernel refused the route (errno and the route in the message)."""


def _attr(kind: int, payload: bytes) -> bytes:
    body = _RTATTR.pack(_RTATTR.size + len(payload), kind) + payload
    return body + b"\0" * (-len(body) % 4)


def default_route_message(seq: int, ifindex: int, gateway: str, src: str) -> bytes:
    """The RTM_NEWROUTE request (replace or create) for `default via gateway dev ifindex onlink src src`."""
    for addr in (gateway, src):
        if not isinstance(ipaddress.ip_address(addr), ipaddress.IPv4Address):
            raise ValueError(f"{addr}: an IPv4 address is needed")
    if not 0 < ifindex < 2**31:
        raise ValueError(f"interface index {ifindex} is out of range")
    body = (_RTMSG.pack(socket.AF_INET, 0, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RTN_UNICAST,
                        RTNH_F_ONLINK)
            + _attr(RTA_GATEWAY, socket.inet_aton(gateway)) + _attr(RTA_OIF, struct.pack("=I", ifindex))
            + _attr(RTA_PREFSRC, socket.inet_aton(src)))
    flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_REPLACE | NLM_F_CREATE
    return _NLMSGHDR.pack(_NLMSGHDR.size + len(body), RTM_NEWROUTE, flags, seq, 0) + body


def ack_errno(reply: bytes, seq: int) -> int:
    """The error number in the kernel's acknowledgement of request `seq` (0: done)."""
    if len(reply) < _NLMSGHDR.size + 4:
        raise RouteError(errno.EPROTO, f"netlink: short reply ({len(reply)} bytes)")
    _, kind, _, got_seq, _ = _NLMSGHDR.unpack_from(reply)
    if kind != NLMSG_ERROR or got_seq != seq:
        raise RouteError(errno.EPROTO, f"netlink: unexpected reply type {kind} seq {got_seq} (asked {seq})")
    (code,) = struct.unpack_from("=i", reply, _NLMSGHDR.size)
    return -code


def replace_default_route(dev: str, gateway: str, src: str) -> None:
    """`ip route replace default via gateway dev dev onlink src src` in the calling thread's namespace."""
    ifindex = socket.if_nametoindex(dev)
    seq = int.from_bytes(os.urandom(4), "big") or 1
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE) as nl:
        nl.settimeout(ACK_TIMEOUT)
        nl.bind((0, 0))
        nl.send(default_route_message(seq, ifindex, gateway, src))
        code = ack_errno(nl.recv(65536), seq)
    if code:
        raise RouteError(code, f"default via {gateway} dev {dev} onlink src {src}: {os.strerror(code)}")
