"""`p4handoff host`: bad command lines and failing transfers end with clear errors and exit codes."""
from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from p4handoff import netns
from p4handoff.cli.main import EXIT_ERROR, EXIT_USAGE, main
from p4handoff.wire import UDP_PORT_HANDOFF_NOTIFY
from tests.net_support import (RECEIVER, ROOT, LinuxSink, OurReceiver, RstWatch, cli, make_path, parse, needs_netns,
                              run_cli)


@pytest.mark.parametrize("argv, message", [
    (["send", "--to", "10.0.0", "--bytes", "5"], "not an IPv4 address"),
    (["send", "--to", "10.0.0.2:99999", "--bytes", "5"], "port must be 0..65535"),
    (["send", "--to", "10.0.0.2:0", "--bytes", "5"], "destination port must be 1..65535"),
    (["send", "--to", "10.0.0.2", "--bytes", "0"], "byte count must be > 0"),
    (["send", "--to", "10.0.0.2", "--bytes", "lots"], "not a byte count"),
    (["send", "--to", "10.0.0.2", "--seconds", "-1"], "must be > 0"),
    (["send", "--to", "10.0.0.2", "--bytes", "5", "--seconds", "1"], "not allowed with argument"),
    (["send", "--to", "10.0.0.2"], "one of the arguments --bytes --seconds --data is required"),
    (["send", "--to", "10.0.0.2", "--bytes", "5", "--scheme", "cubic"], "unknown scheme 'cubic'; known: "),
    (["recv", "--port", "http"], "not a port number"),
])
def test_bad_arguments_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["host", *argv])
    assert exc.value.code == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_semantic_errors_before_any_network_use(capsys, tmp_path):
    assert main(["host", "send", "--to", "10.0.0.2", "--data", str(tmp_path / "missing")]) == EXIT_ERROR
    assert "no such file" in capsys.readouterr().err
    assert main(["host", "recv", "--port", "0"]) == EXIT_ERROR
    assert "--port must be 1..65535" in capsys.readouterr().err


@needs_netns[0]
@needs_netns[1]
def test_runtime_failures_exit_1_with_the_reason(tmp_path):
    with netns.Sandbox("cli") as sandbox:
        path = make_path(sandbox)
        refused = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "1k", "--notify-port", "0")
        assert refused.returncode == EXIT_ERROR and "connection refused" in refused.stderr

        too_big = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "1k", "--mss", "1461", "--notify-port", "0")
        assert too_big.returncode == EXIT_ERROR and "mss 1461 must be in 1..mtu-40 (1460)" in too_big.stderr

        no_route = run_cli(path.a, "send", "--to", "192.0.2.1", "--bytes", "1k", "--notify-port", "0")
        assert no_route.returncode == EXIT_ERROR and "no route to 192.0.2.1" in no_route.stderr

        silent = run_cli(path.a, "send", "--to", "10.0.9.77", "--bytes", "1k", "--notify-port", "0",
                         "--timeout", "1.5")
        assert silent.returncode == EXIT_ERROR and "not finished within 1.5 s (state SYN_SENT" in silent.stderr

        sink = LinuxSink(path)  # a kernel server holds port 5001 in the receiver's namespace
        busy = run_cli(path.b, "recv", "--notify-port", "0", "--timeout", "1")
        assert busy.returncode == EXIT_ERROR and "cannot reserve TCP port 5001" in busy.stderr
        sink.server.close()

        idle = run_cli(path.b, "recv", "--port", "5002", "--notify-port", "0", "--timeout", "1")
        assert idle.returncode == EXIT_ERROR and "no connection arrived on port 5002 within 1.0 s" in idle.stderr

        udp = path.b.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("0.0.0.0", UDP_PORT_HANDOFF_NOTIFY))  # someone else takes the notification port
        taken = run_cli(path.b, "recv", "--port", "5003", "--timeout", "1")
        udp.close()
        assert taken.returncode == EXIT_ERROR
        assert f"cannot listen for handoff notifications on UDP port {UDP_PORT_HANDOFF_NOTIFY}" in taken.stderr
        for ns in (path.a, path.b):  # every failure above removed its kernel guard
            assert "p4h_guard" not in ns.run(["nft", "list", "tables"]).stdout


def _wait_sending(path, data_bytes: int = 10_000, timeout: float = 30.0) -> None:
    """Until the sender's guard is installed and its data has gone out through the rate limiter."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        guarded = "p4h_guard" in path.a.run(["nft", "list", "tables"]).stdout
        stats = path.a.run(["tc", "-s", "qdisc", "show", "dev", path.link.dev_a]).stdout
        sent = int(stats.split("Sent ", 1)[1].split()[0]) if "Sent " in stats else 0
        if guarded and sent >= data_bytes:
            return
        time.sleep(0.1)
    raise AssertionError(f"the sender did not start sending within {timeout} s")


@needs_netns[0]
@needs_netns[1]
def test_a_terminated_sender_resets_its_peer_and_removes_its_guard():
    with netns.Sandbox("trm") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 10_000)
        receiver = OurReceiver(path, "--notify-port", "0")
        watch = RstWatch(path)
        proc = sandbox.start(path.a, cli("send", "--to", RECEIVER, "--seconds", "30", "--notify-port", "0"),
                         stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
        _wait_sending(path)                                   # not a fixed sleep: the CLI's start-up varies with load
        assert "p4h_guard" in path.a.run(["nft", "list", "tables"]).stdout
        assert watch.resets() == []
        assert sandbox.stop(proc) == EXIT_ERROR  # SIGTERM: unwound, not killed
        out, err = receiver.proc.communicate(timeout=30)
        sandbox.processes.remove(receiver.proc)
        assert receiver.proc.returncode == EXIT_ERROR and b"connection reset by peer" in err
        # Our RST, then (data still queued in the rate limiter reaching the receiver, its ACKs reaching
        # a sender that is gone) the kernel's RSTs for a closed port, as for any aborted connection:
        # all from the sender's side.
        resets = watch.resets()
        assert resets and all(packet[12:16] == bytes([10, 0, 9, 1]) for packet in resets)
        for ns in (path.a, path.b):
            assert "p4h_guard" not in ns.run(["nft", "list", "tables"]).stdout


@needs_netns[0]
@needs_netns[1]
def test_iw_sack_and_timestamps_flags_reach_the_connection(tmp_path):
    """The lab passes a scenario's IW, SACK and timestamp settings this way; the trace shows what was used."""
    import csv
    with netns.Sandbox("opt") as sandbox:
        path = make_path(sandbox)
        for name, flags, want in (("default", (), ("3", "sack=1 ts=1")),
                                  ("set", ("--iw", "1", "--no-sack", "--no-timestamps"), ("1", "sack=0 ts=0"))):
            receiver = OurReceiver(path, "--notify-port", "0")
            trace = tmp_path / f"{name}.csv"
            launched = time.monotonic()
            sent = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "20k", "--notify-port", "0",
                           "--time-wait", "0.2", "--trace", str(trace), *flags)
            ended = time.monotonic()
            assert sent.returncode == 0, sent.stderr
            receiver.finish()
            row = next(r for r in csv.DictReader(trace.open()) if r["event"] == "established")
            assert (str(int(row["cwnd"]) // int(row["mss"])), row["detail"]) == want
            # the trace counts from the printed origin, on the machine's monotonic clock (the lab aligns by it)
            origin = float(parse(sent.stdout)["trace_origin"])
            assert launched < origin <= origin + float(row["time"]) < ended


@needs_netns[0]
@needs_netns[1]
def test_a_sender_started_early_connects_at_its_start_instant(tmp_path):
    """The lab starts every sender ahead of its flow with `--start-at`: the process sets up at once (imports,
    sockets, its guard) and its first segment leaves at the instant, not after its start-up."""
    import csv
    with netns.Sandbox("at") as sandbox:
        path = make_path(sandbox)
        receiver = OurReceiver(path, "--notify-port", "0")
        trace = tmp_path / "at.csv"
        start_at = time.monotonic() + 2.0
        sent = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "20k", "--notify-port", "0", "--time-wait",
                       "0.2", "--trace", str(trace), "--start-at", repr(start_at))
        assert sent.returncode == 0, sent.stderr
        receiver.finish()
        origin = float(parse(sent.stdout)["trace_origin"])
        assert start_at <= origin < start_at + 0.5
        first = min(float(r["time"]) for r in csv.DictReader(trace.open()))
        assert origin + first >= start_at                       # nothing of the connection before the instant

        ahead = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "1k", "--notify-port", "0",
                        "--start-at", repr(time.monotonic() + 3600))
        assert ahead.returncode == EXIT_ERROR and "at most 600 s ahead is accepted" in ahead.stderr
        assert "p4h_guard" not in path.a.run(["nft", "list", "tables"]).stdout


@needs_netns[0]
@needs_netns[1]
def test_endpoints_on_a_stretched_clock_see_the_link_as_that_much_faster(tmp_path):
    """`--time-scale 2` (a lab run twice as slow as its scenario): TCP, the trace and --seconds are on a clock that
    passes at half the machine's speed, so one second of sending takes two, and a 3 Mb/s link carries more than
    3 Mb/s on that clock, which it cannot do on the machine's."""
    import csv
    with netns.Sandbox("ts") as sandbox:
        path = make_path(sandbox)
        path.a.rate_limit(path.link.dev_a, 3000)
        receiver = OurReceiver(path, "--notify-port", "0", "--time-scale", "2")
        trace = tmp_path / "ts.csv"
        launched = time.monotonic()
        sent = run_cli(path.a, "send", "--to", RECEIVER, "--seconds", "1", "--notify-port", "0", "--time-wait",
                       "0.2", "--trace", str(trace), "--time-scale", "2")
        ended = time.monotonic()
        assert sent.returncode == 0, sent.stderr
        got = receiver.finish()
        report = parse(sent.stdout)
        assert report["time_scale"] == "2" and got["time_scale"] == "2"
        assert 0.95 < float(report["seconds"]) < 1.5, report
        assert ended - launched > 2.0                                   # the machine's time: twice the clock's
        assert 4.5 < float(report["goodput_mbps"]) < 6.2, report         # ~2 x 3 Mb/s, on the stretched clock
        assert int(got["bytes"]) == int(report["bytes"])
        times = [float(r["time"]) for r in csv.DictReader(trace.open())]
        assert 0.95 < max(times) < 1.5 + 0.2, max(times)                # the trace is on the stretched clock too

        refused = run_cli(path.a, "send", "--to", RECEIVER, "--bytes", "1k", "--time-scale", "0.5")
        assert refused.returncode == EXIT_USAGE and "must be >= 1" in refused.stderr
