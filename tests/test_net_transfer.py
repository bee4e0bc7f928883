"""Bulk transfers on real packets between namespaces: every scheme, to a Linux and to our receiver.

Each transfer checks the bytes end to end and that no RST crossed the link
(our endpoints never abort here, so any RST would be the kernel answering
segments meant for our user-space TCP).
"""
from __future__ import annotations

import csv
import json
import os

import pytest

from p4handoff.hosts.cc import SCHEMES
from p4handoff import netns
from tests.net_support import (RECEIVER, LinuxSink, OurReceiver, RstWatch, make_path, needs_netns, parse, run_cli,
                              sha256)

pytestmark = needs_netns
SIZE = 3_000_000


@pytest.fixture(scope="module")
def payload(tmp_path_factory) -> tuple[bytes, str]:
    data = os.urandom(SIZE)
    path = tmp_path_factory.mktemp("net") / "payload.bin"
    path.write_bytes(data)
    return data, str(path)


def sender(path, *args: str) -> dict[str, str]:
    done = run_cli(path.a, "send", "--to", RECEIVER, "--time-wait", "0.2", "--notify-port", "0", *args)
    assert done.returncode == 0, done.stderr
    return parse(done.stdout)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_our_sender_to_unmodified_linux_receiver(scheme, payload):
    data, file = payload
    with netns.Sandbox("xl") as sandbox:
        path = make_path(sandbox)
        sink = LinuxSink(path)
        watch = RstWatch(path)
        report = sender(path, "--scheme", scheme, "--data", file)
        assert sink.result() == data
        assert report["bytes"] == str(SIZE) and report["sha256"] == sha256(data)
        assert report["malformed_dropped"] == "0"
        assert watch.resets() == []


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_our_sender_to_our_receiver(scheme, payload, tmp_path):
    data, file = payload
    out = tmp_path / "received.bin"
    with netns.Sandbox("xo") as sandbox:
        path = make_path(sandbox)
        receiver = OurReceiver(path, "--scheme", scheme, "--out", str(out), "--time-wait", "0.2",
                               "--notify-port", "0")
        watch = RstWatch(path)
        sent = sender(path, "--scheme", scheme, "--data", file)
        got = receiver.finish()
        assert out.read_bytes() == data
        assert got["bytes"] == sent["bytes"] == str(SIZE)
        assert got["sha256"] == sent["sha256"] == sha256(data)
        assert watch.resets() == []


@pytest.mark.parametrize("peer", ["linux", "ours"])
def test_transfer_completes_through_a_rate_limited_small_queue(peer, tmp_path):
    with netns.Sandbox("xr") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 20_000, burst_bytes=6_000, limit_bytes=15_000)
        if peer == "linux":
            sink = LinuxSink(path)
        else:
            receiver = OurReceiver(path, "--time-wait", "0.2", "--notify-port", "0")
        sent = sender(path, "--bytes", "2M", "--min-rto", "0.2")
        received = sink.result() if peer == "linux" else None
        got_sha = sha256(received) if received is not None else receiver.finish()["sha256"]
        assert sent["bytes"] == "2000000" and got_sha == sent["sha256"]
        stats = path.a.run(["tc", "-s", "qdisc", "show", "dev", path.link.dev_a]).stdout
        overlimits = int(stats.split("overlimits")[1].split()[0])
        assert overlimits > 0  # the limiter really held packets back


def test_linux_acks_left_to_checksum_offload_are_taken_on_the_kernels_word(payload):
    """With offloads on, the Linux receiver's ACKs arrive with unfilled TCP checksums (CSUMNOTREADY);
    the driver decodes them without verifying that checksum, or it would drop every ACK and stall."""
    data, file = payload
    with netns.Sandbox("xk") as sandbox:
        path = make_path(sandbox)
        path.link.set_offloads(True)
        sink = LinuxSink(path)
        report = sender(path, "--data", file)
        assert sink.result() == data
        assert report["bytes"] == str(SIZE) and report["malformed_dropped"] == "0"

def test_timed_transfer_and_both_trace_formats(tmp_path):
    with netns.Sandbox("xt") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 50_000)
        receiver = OurReceiver(path, "--time-wait", "0.2", "--notify-port", "0",
                               "--trace", str(tmp_path / "recv.jsonl"))
        sent = sender(path, "--seconds", "0.5", "--trace", str(tmp_path / "send.csv"))
        got = receiver.finish()
    assert int(sent["bytes"]) > 0 and got["bytes"] == sent["bytes"] and got["sha256"] == sent["sha256"]
    with open(tmp_path / "send.csv") as f:
        rows = list(csv.DictReader(f))
    assert set(rows[0]) >= {"time", "cwnd", "ssthresh", "flight", "srtt", "rto", "state", "event"}
    events = [r["event"] for r in rows]
    assert events[0] == "established" and "ack" in events and rows[-1]["state"] == "CLOSED"
    times = [float(r["time"]) for r in rows]
    assert times == sorted(times) and 0 <= times[0] < times[-1] < 30
    lines = [json.loads(line) for line in (tmp_path / "recv.jsonl").read_text().splitlines()]
    assert lines[0]["event"] == "syn_received" and lines[-1]["state"] == "CLOSED"
