"""The lab's default-route move over rtnetlink (p4handoff/netlink_route.py): the kernel's route equals the
one `ip route replace … onlink src …` installs, in a real namespace; refusals name the route."""
from __future__ import annotations

import errno
import struct
from typing import Iterator

import pytest

from p4handoff import netns
from p4handoff.netlink_route import (NLMSG_ERROR, RouteError, ack_errno, default_route_message,
                                     replace_default_route)

REASON = netns.unavailable_reason()
needs_netns = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def default_routes(ns: netns.Namespace) -> list[str]:
    return [" ".join(line.split()) for line in ns.run(["ip", "-4", "route", "show", "default"]).stdout.splitlines()]


@pytest.fixture
def mh() -> Iterator[netns.Namespace]:
    """An MH namespace with two radios toward a BS namespace and its home address on lo."""
    with netns.Sandbox("nlr") as sandbox:
        mh, bs = sandbox.namespace("mh"), sandbox.namespace("bs")
        sandbox.veth(mh, bs, "10.7.0.1/24", "10.7.0.2/24", dev_a="radio0")
        sandbox.veth(mh, bs, "10.8.0.1/24", "10.8.0.2/24", dev_a="radio1", dev_b="veth1")
        mh.run(["ip", "addr", "add", "10.9.0.5/32", "dev", "lo"])
        yield mh


@pytest.mark.netns
@needs_netns
def test_the_route_is_the_one_ip_installs_and_replaces_the_previous(mh):
    mh.run(["ip", "route", "replace", "default", "via", "10.99.0.1", "dev", "radio0", "onlink",
            "src", "10.9.0.5"])
    by_ip = default_routes(mh)
    mh.run(["ip", "route", "del", "default"])
    mh.call(lambda: replace_default_route("radio0", "10.99.0.1", "10.9.0.5"))
    assert default_routes(mh) == by_ip == ["default via 10.99.0.1 dev radio0 src 10.9.0.5 onlink"]
    mh.call(lambda: replace_default_route("radio1", "10.99.0.1", "10.9.0.5"))
    assert default_routes(mh) == ["default via 10.99.0.1 dev radio1 src 10.9.0.5 onlink"]


@pytest.mark.netns
@needs_netns
def test_a_refused_route_names_itself_and_changes_nothing(mh):
    mh.call(lambda: replace_default_route("radio0", "10.99.0.1", "10.9.0.5"))
    before = default_routes(mh)
    with pytest.raises(RouteError, match="src 10.9.9.9") as err:     # not an address of this namespace
        mh.call(lambda: replace_default_route("radio0", "10.99.0.1", "10.9.9.9"))
    assert err.value.errno == errno.EINVAL
    with pytest.raises(OSError):
        mh.call(lambda: replace_default_route("nosuchdev", "10.99.0.1", "10.9.0.5"))
    assert default_routes(mh) == before


def test_bad_arguments_and_replies_are_refused_clearly():
    with pytest.raises(ValueError, match="IPv4"):
        default_route_message(1, 2, "fe80::1", "10.0.0.1")
    with pytest.raises(ValueError, match="out of range"):
        default_route_message(1, 0, "10.0.0.1", "10.0.0.2")
    ack = struct.pack("=IHHII", 36, NLMSG_ERROR, 0, 7, 0) + struct.pack("=i", -errno.EEXIST) + bytes(16)
    assert ack_errno(ack, 7) == errno.EEXIST
    with pytest.raises(RouteError, match="seq 7"):
        ack_errno(ack, 8)
    with pytest.raises(RouteError, match="short"):
        ack_errno(ack[:10], 7)
