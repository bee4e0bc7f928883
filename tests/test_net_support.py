"""tests/net_support.py's instruments can fail: the RST watch does see a kernel RST, the sink does get
kernel TCP data."""
from __future__ import annotations

from p4handoff import netns
from tests.net_support import RECEIVER, SENDER, LinuxSink, RstWatch, make_path, needs_netns

pytestmark = needs_netns


def test_rst_watch_sees_the_kernel_refusing_a_connection_and_the_sink_gets_kernel_data():
    with netns.Sandbox("sup") as sandbox:
        path = make_path(sandbox)
        watch = RstWatch(path)
        client = path.a.socket()
        client.settimeout(5)
        try:
            assert client.connect_ex((RECEIVER, 5999)) != 0  # nobody listens: the kernel answers RST
        finally:
            client.close()
        assert len(watch.resets()) == 1
        client = path.b.socket()  # and the other way: a RST leaving this namespace
        client.settimeout(5)
        try:
            assert client.connect_ex((SENDER, 5999)) != 0
        finally:
            client.close()
        assert len(watch.resets()) == 1
        sink = LinuxSink(path)
        client = path.a.socket()
        client.settimeout(5)
        client.connect((RECEIVER, sink.port))
        client.sendall(b"k" * 300_000)
        client.close()
        assert sink.result() == b"k" * 300_000
        assert watch.resets() == []
        watch.close()
