"""The namespace helper on real namespaces: creation, veth, sockets inside, processes, teardown."""
from __future__ import annotations

import subprocess
import sys

import pytest

from p4handoff import netns

REASON = netns.unavailable_reason()
pytestmark = [pytest.mark.netns, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_veth_carries_tcp_between_namespaces_and_sets_mtu_and_offloads():
    with netns.Sandbox("t") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        assert a.name != b.name and a.name.startswith(netns.PREFIX + "-")
        link = sandbox.veth(a, b, "10.0.9.1/24", "10.0.9.2/24", mtu=9000)
        assert "mtu 9000" in a.run(["ip", "link", "show", "dev", link.dev_a]).stdout
        features = b.run(["ethtool", "-k", link.dev_b]).stdout
        assert "tcp-segmentation-offload: off" in features and "tx-checksumming: off" in features

        server = b.socket()
        server.bind((link.addr_b, 0))
        server.listen(1)
        client = a.socket()
        client.settimeout(5)
        client.connect((link.addr_b, server.getsockname()[1]))
        conn, peer = server.accept()
        assert peer[0] == link.addr_a
        client.sendall(b"x" * 100_000)
        client.close()
        conn.settimeout(5)
        got = b""
        while chunk := conn.recv(65536):
            got += chunk
        assert got == b"x" * 100_000
        conn.close()
        server.close()
        names = [a.name, b.name]
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    assert not any(name in listed for name in names)


def test_root_namespace_cannot_see_lab_addresses():
    with netns.Sandbox("t") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        sandbox.veth(a, b, "10.0.9.1/24", "10.0.9.2/24")
        root_addrs = subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True, timeout=10).stdout
        assert "10.0.9.1" not in root_addrs
        assert "10.0.9.1" in a.run(["ip", "-4", "addr"]).stdout


def test_started_process_runs_inside_and_is_stopped_by_pid():
    with netns.Sandbox("t") as sandbox:
        a = sandbox.namespace("a")
        proc = sandbox.start(a, [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"up\n"
        own = subprocess.run(["ip", "netns", "identify", str(proc.pid)], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        assert own == a.name
        assert sandbox.stop(proc) == -15
        assert proc not in sandbox.processes


def test_close_stops_a_process_that_ignores_sigterm():
    sandbox = netns.Sandbox("t")
    try:
        a = sandbox.namespace("a")
        proc = sandbox.start(a, [sys.executable, "-c",
                             "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                             "print('up', flush=True); time.sleep(60)"], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"up\n"
    finally:
        sandbox.close()
    assert proc.returncode == -9
    assert not (netns.NETNS_DIR / a.name).exists()


def test_rate_limit_installs_tbf():
    with netns.Sandbox("t") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        link = sandbox.veth(a, b, "10.0.9.1/24", "10.0.9.2/24")
        a.rate_limit(link.dev_a, 5000)
        qdiscs = a.run(["tc", "qdisc", "show", "dev", link.dev_a]).stdout
        assert "tbf" in qdiscs and "5Mbit" in qdiscs


def test_bad_arguments_are_rejected_clearly():
    with pytest.raises(ValueError, match="tag"):
        netns.Sandbox("no spaces")
    with netns.Sandbox("t") as sandbox:
        a, b = sandbox.namespace("a"), sandbox.namespace("b")
        with pytest.raises(ValueError):
            sandbox.veth(a, b, "10.0.9.300/24", "10.0.9.2/24")
        with pytest.raises(netns.NetnsError, match="exit"):
            a.run(["ip", "link", "set", "dev", "nosuchdev", "up"])
        with pytest.raises(netns.NetnsError, match="no answer"):
            a.run(["sleep", "5"], timeout=0.5)
        with pytest.raises(OSError):
            netns.Namespace("p4h-does-not-exist").socket()
