"""The `lab` backend end to end: a short handoff between two BMv2 base stations on real packets.

Skipped, with the reason, where root, BMv2 or the compiled P4 program
(build/bs.json, from p4c) are missing.
"""
from __future__ import annotations

import copy
import json
import lzma
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.bmv2_support import LAB_MARKS
from p4handoff.lab.mininet import backend as mininet
from p4handoff.lab.runner import run_scenario
from p4handoff.scenario.loader import parse

pytestmark = LAB_MARKS

SMOKE = {
    "scenario": "lab-smoke", "title": "Lab smoke: one MH hands off between two base stations", "paper": "none",
    "duration": 14,
    "tcp": {"packet_size": 1000, "window": 32, "iw": 3, "min_rto": "1s", "delayed_ack": False},
    "topology": {
        "correspondents": [{"name": "ch", "address": "10.0.0.1"}],
        "routers": [{"name": "gw"}],
        "base_stations": [{"name": "bs1"}, {"name": "bs2"}],
        "links": [{"between": ["ch", "gw"], "rate": None, "delay": 0},
                  {"between": ["gw", "bs1"], "rate": None, "delay": 0},
                  {"between": ["gw", "bs2"], "rate": None, "delay": 0}],
        "cells": [{"name": "c1", "bs": "bs1", "rate": "4Mbps", "delay": "5ms", "queue": {"limit": 50}},
                  {"name": "c2", "bs": "bs2", "rate": "2Mbps", "delay": "5ms", "queue": {"limit": 50}}],
        "mobile_hosts": [{"name": "mh", "home": "10.0.9.1", "interfaces": {"r1": "10.0.1.9", "r2": "10.0.2.9"},
                          "start": {"iface": "r1", "cell": "c1"},
                          "moves": [{"switch": {"to": "r2", "cell": "c2"}, "at": 6, "outage": 0.3}]}],
    },
    "flows": [{"name": "main", "from": "ch", "to": "mh", "scheme": "compared", "start_jitter": "1s"}],
    "schemes": ["bwaware"],
    "measure": {"windows": [{"name": "before", "from": 2, "to": 6}, {"name": "after", "from": 8, "to": 13}],
                "table": [{"metric": "throughput", "flow": "main", "window": "before"},
                          {"metric": "throughput", "flow": "main", "window": "after"},
                          {"metric": "utilization", "link": "c2", "window": "after"}],
                "queues": {"links": ["c1", "c2"], "interval": "100ms"}},
}


def test_smoke_handoff_in_the_lab(tmp_path: Path) -> None:
    sf = parse(SMOKE, "lab-smoke")
    script = tmp_path / "cli.txt"       # Mininet's CLI on the built lab, before traffic
    script.write_text(f"mh ip -o addr show dev lo > {tmp_path}/mh-lo.txt\n"
                      f"bs2 ip -o link show type bridge > {tmp_path}/bs2-bridges.txt\n")
    res = run_scenario(sf, mininet.LabBackend(mininet_cli=script), results_root=tmp_path, run_id="lab",
                       progress_out=None)
    assert "10.0.9.1/32" in (tmp_path / "mh-lo.txt").read_text()          # the MH's home address
    assert "br" in (tmp_path / "bs2-bridges.txt").read_text()              # the cell's medium, in its BS
    q = json.loads((res.directory / "metrics.json").read_text())["runs"][0]["quantities"]
    before, after = q["throughput[main]@before"], q["throughput[main]@after"]
    assert 1.5e6 < before <= 4.1e6, before        # most of the 4 Mb/s cell
    assert 0.8e6 < after <= 2.1e6, after          # the flow continues on the 2 Mb/s cell after the handoff
    assert 0.4 < q["utilization[c2]@after"] <= 1.05
    report = (res.directory / "report.md").read_text()
    assert "backend **lab**" in report and "plots/cwnd-base.png" in report
    run_dir = res.directory / "runs" / "base" / "bwaware" / "r0"
    assert (run_dir / "queues.csv.xz").exists() and "handoff mh.r2" in (run_dir / "timeline.txt").read_text()
    # the sender connects at the start drawn for this seed (start_jitter), as the simulator's would
    first = lzma.decompress((run_dir / "trace-main.aligned.csv.xz").read_bytes()).decode().splitlines()[1].split(",")
    start = sf.resolve(sf.variants[0], sf.points()[0]).flow("main").start_at(res.seed)
    assert first[2] == "established" and start > 0.01
    assert start - 0.02 < float(first[0]) - float(first[7]) < start + 0.1, (first, start)   # less the SYN's RTT


def test_a_dilated_lab_run_reports_on_the_scenarios_clock(tmp_path: Path) -> None:
    """`lab.time_scale: 2`: the lab plays the smoke scenario half as fast (2 and 1 Mb/s cells, 10 ms delays,
    endpoints on a clock half as fast), and reports it as the scenario's: the same throughputs as the
    undilated run's bounds, the sender connecting and the MH moving at their scenario times."""
    doc = copy.deepcopy(SMOKE)
    doc["lab"] = {"time_scale": 2}
    sf = parse(doc, "lab-smoke-dilated")
    began = time.monotonic()
    res = run_scenario(sf, mininet.LabBackend(), results_root=tmp_path, run_id="dilated", progress_out=None)
    assert time.monotonic() - began > 2 * doc["duration"]
    q = json.loads((res.directory / "metrics.json").read_text())["runs"][0]["quantities"]
    assert 1.5e6 < q["throughput[main]@before"] <= 4.1e6, q     # most of the 4 Mb/s cell, on the scenario's clock
    assert 0.8e6 < q["throughput[main]@after"] <= 2.1e6, q
    run_dir = res.directory / "runs" / "base" / "bwaware" / "r0"
    handoff = next(float(line.split()[0]) for line in (run_dir / "timeline.txt").read_text().splitlines()
                   if "handoff mh.r2" in line)
    assert 6.3 <= handoff < 6.5, handoff                          # at 6 s + the 0.3 s outage, not at 12.6
    first = lzma.decompress((run_dir / "trace-main.aligned.csv.xz").read_bytes()).decode().splitlines()[1].split(",")
    start = sf.resolve(sf.variants[0], sf.points()[0]).flow("main").start_at(res.seed)
    assert first[2] == "established" and start - 0.02 < float(first[0]) - float(first[7]) < start + 0.1, first
    assert "2 times slower" in (res.directory / "report.md").read_text()


def test_a_handoff_through_the_buffer_service(tmp_path: Path) -> None:
    """`topology.buffer_service`: a buffer port on every switch, the service beside the controller; what the
    handoff buffers goes through the service (its counters cover the controller's releases), and the flow
    continues on the new cell."""
    doc = copy.deepcopy(SMOKE)
    doc["topology"]["buffer_service"] = True
    # packets queued at the gateway for bs1 when the MH moves (a 1.5 Mb/s wire in front of its 4 Mb/s cell), and a
    # short outage: the handoff has something to buffer
    doc["topology"]["links"][1] = {"between": ["gw", "bs1"], "rate": "1.5Mbps", "delay": 0,
                                   "queue": {"limit": 50}, "reverse_queue": {"limit": 50}}
    doc["topology"]["mobile_hosts"][0]["moves"][0]["outage"] = 0.05
    res = run_scenario(parse(doc, "lab-smoke-service"), mininet.LabBackend(), results_root=tmp_path, run_id="svc",
                       progress_out=None)
    q = json.loads((res.directory / "metrics.json").read_text())["runs"][0]["quantities"]
    assert 0.8e6 < q["throughput[main]@after"] <= 2.1e6, q
    run_dir = res.directory / "runs" / "base" / "bwaware" / "r0"
    desc = yaml.safe_load((run_dir / "network.yaml").read_text())
    assert all(sum(p["role"] == "buffer" for p in sw["ports"]) == 1 for sw in desc["switches"])
    events = [json.loads(line) for line in (run_dir / "controller.log").read_text().splitlines()]
    assert any(e["event"] == "bufsvc_up" for e in events)
    released = sum(e["released"] for e in events if e["event"] == "handoff_complete" and e["mh"] == "mh")
    service = [json.loads(line) for line in (run_dir / "bufsvc.log").read_text().splitlines()]
    stop = next(e for e in service if e["event"] == "bufsvc_stop")
    assert released > 0 and stop["arrivals"] >= released and stop["released"] >= released, (released, stop)


def test_a_lab_run_stopped_by_sigterm_tears_its_network_down(tmp_path: Path) -> None:
    scenario = tmp_path / "smoke.yaml"
    scenario.write_text(yaml.safe_dump(SMOKE))
    root = Path(__file__).resolve().parent.parent
    run = subprocess.Popen([sys.executable, "-m", "p4handoff", "run", str(scenario), "--backend", "lab", "--quiet",
                            "--no-plots", "--results", str(tmp_path / "results")], cwd=root,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env=dict(os.environ, PYTHONPATH=str(root)))
    try:
        deadline = time.monotonic() + 60
        while not list((tmp_path / "results").glob("**/trace-main.csv")):   # the lab is up, traffic flowing
            assert run.poll() is None and time.monotonic() < deadline, run.stderr.read().decode()[-2000:]
            time.sleep(0.2)
        time.sleep(1.0)
        assert run.poll() is None, run.stderr.read().decode()[-2000:]
        run.send_signal(signal.SIGTERM)
        time.sleep(0.5)                 # a second one while the lab is being taken down: it waits for the teardown
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 1
    finally:
        if run.poll() is None:      # a failed wait above: SIGTERM first, so the run still takes its lab down
            run.send_signal(signal.SIGTERM)
            try:
                run.wait(timeout=60)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
    prefix = f"p4h-{run.pid}-"
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert prefix not in names                                         # every node's name removed
    desc = yaml.safe_load(next((tmp_path / "results").glob("**/network.yaml")).read_text())
    socket_dirs = {sw["grpc"].removeprefix("unix:").rsplit("/", 1)[0] for sw in desc["switches"]}
    assert socket_dirs and not any(Path(d).exists() for d in socket_dirs)   # the switches' sockets removed
    leftovers = subprocess.run(["pgrep", "-f", "|".join(socket_dirs)], capture_output=True, text=True).stdout
    assert leftovers == ""                                                   # no BMv2 of this run still running
