"""The lab's Mininet network without BMv2: hosts, links (also a node to itself), bridges, names, teardown."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from p4handoff import netns
from p4handoff.topo.mininet_net import LabNet, mininet_available

_netns_why = netns.unavailable_reason()
_mn_ok, _mn_why = mininet_available()
pytestmark = [pytest.mark.netns, pytest.mark.mininet,
              pytest.mark.skipif(_netns_why is not None, reason=f"netns: {_netns_why}"),
              pytest.mark.skipif(not _mn_ok, reason=f"Mininet: {_mn_why}")]


def _shell_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_hosts_links_and_bridge_carry_traffic_and_everything_goes_at_stop() -> None:
    sandbox = netns.Sandbox("mn")
    net = LabNet(sandbox, mtu=1500)
    try:
        a, b, mid = net.host("a"), net.host("b"), net.host("mid")
        assert a.name.endswith("-mna") and (netns.NETNS_DIR / a.name).exists()
        net.bridge("mid", "br0")
        net.link("a", "eth0", "mid", "pa")
        net.link("b", "eth0", "mid", "pb")
        net.link("mid", "loop1", "mid", "loop2")        # both ends in one node (an emulator's pair)
        for port in ("pa", "pb"):
            net.enslave("mid", port, "br0")
        net.start()
        a.run(["ip", "addr", "add", "10.7.0.1/24", "dev", "eth0"])
        b.run(["ip", "addr", "add", "10.7.0.2/24", "dev", "eth0"])
        assert "mtu 1500" in a.run(["ip", "link", "show", "dev", "eth0"]).stdout
        assert "tcp-segmentation-offload: off" in b.run(["ethtool", "-k", "eth0"]).stdout
        assert "UP" in a.run(["ip", "link", "show", "dev", "lo"]).stdout
        mid_links = mid.run(["ip", "-o", "link", "show"]).stdout
        assert "loop1@loop2" in mid_links and "loop2@loop1" in mid_links
        server = b.socket(socket.AF_INET, socket.SOCK_DGRAM)
        server.bind(("10.7.0.2", 0))
        server.settimeout(5)
        client = a.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.sendto(b"across the bridge", server.getsockname())
        assert server.recvfrom(100) == (b"across the bridge", (("10.7.0.1", client.getsockname()[1])))
        server.close()
        client.close()
        shells = [node.pid for node in net.net.hosts]
    finally:
        net.stop()
        sandbox.close()
    assert not any(_shell_alive(pid) for pid in shells)
    assert not any(Path(netns.NETNS_DIR / ns).exists() for ns in (a.name, b.name, mid.name))
