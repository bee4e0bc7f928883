"""The handoff controller daemon: one thread that owns the model and the switches' state.

Sessions (their own threads) post connection changes and packet-ins; the
control socket (its own thread) posts operator requests; everything is
handled here, in arrival order, on one thread. Packet-ins already queued
behind the one being handled (a group's registrations, a burst of punts or
returning markers) are handled with it and their effects flushed together
(`effect_batch.py`): one Write per switch per step carrying every MH's route
changes, Writes to different switches at once, each MH's effects in its own
order. A Write returns only once the switch applied it, so a packet sent after
it (a drain marker, a buffer release) already meets the new route.

Start-up / controller restart: connect to every switch (bounded wait); a
switch that already runs our pipeline keeps it and its entries, which are
read back and turned into the MHs' state (`Mobility.recover`); then each
switch is reconciled against the model — for MHs that did not move this
writes nothing. A switch that comes back later (restart, dropped stream) is
re-pushed if needed and reconciled the same way.
"""
from __future__ import annotations

import json
import queue
import sys
import threading
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any, Callable

from p4handoff.controller.bufsvc_link import ServiceArrivals, ServiceReleased, ServiceState
from p4handoff.controller.bufsvc_path import PROBE, ServicePath
from p4handoff.controller.control import ControlRequest, ControlServer
from p4handoff.controller.eventlog import JsonLog, flush, held
from p4handoff.controller.description_watch import DescriptionWatch
from p4handoff.controller.effect_batch import EffectBatch, owners_in
from p4handoff.controller.intents import Completed, Effect, PacketEffect, Release
from p4handoff.controller.mh_state import MobilityError
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import Network
from p4handoff.controller.packets import PacketError, marker_nonce, parse_ipv4, split_ethernet
from p4handoff.controller.p4runtime import ClientTls, P4RuntimeError, TableEntry
from p4handoff.controller.release_fence import FENCE_TIMEOUT
from p4handoff.controller.release_probes import ReleaseProbes
from p4handoff.controller.port_counters import CounterReader, CountersRead
from p4handoff.controller.programmer import Programmer
from p4handoff.controller.punts import REASON_TELEMETRY, dispatch
from p4handoff.controller.registration_auth import RegistrationGuard
from p4handoff.controller.route_writes import write_step
from p4handoff.controller.replay_journal import NotificationSequence, ReplayJournal
from p4handoff.controller.session import BadPacketIn, Connected, Lost, PacketInEvent, SwitchSession, expected_cookie
from p4handoff.controller.spool import Spool
from p4handoff.controller.status_rounds import StatusRounds
from p4handoff.controller.targets import program_for
from p4handoff.controller.switch_state import SwitchState, diff
from p4handoff.controller.transmit import Transmitter
from p4handoff.keyfile import load_keys
from p4handoff.wire import TELEMETRY

WRITE_CHUNK = 1000
MAX_BATCH = 512          # packet-ins handled together at most before their effects are flushed


class Daemon:
    def __init__(self, net: Network, log: Callable[[str, dict[str, Any]], None] | None = None,
                 socket_path: str | None = None, startup_timeout: float = 10.0,
                 network_path: str | Path | None = None) -> None:
        self.net = net
        self.log = log or JsonLog(sys.stderr)
        self.watch = DescriptionWatch(network_path, net, self.log) if network_path is not None else None
        self.socket_path = socket_path or net.controller.socket
        self.startup_timeout = startup_timeout
        self.events: queue.Queue[object] = queue.Queue()
        c = net.controller
        self.spool = Spool(c.spool, c.spool_fsync) if c.spool else None
        self.mobility = Mobility(net, self.log, spool=self.spool)
        self.replay = ReplayJournal(Path(c.spool or c.socket).with_suffix(".replay"), c.spool_fsync)
        keys = load_keys(c.keys) if c.keys else None
        self.guard = RegistrationGuard(net, keys, self.log, self.replay)
        self.programmer = Programmer(net, program_for(c.target))
        self.transmitter = Transmitter(net, keys)
        self.bufsvc = ServicePath(net, keys, self.events.put, self.log) if net.buffer_service else None
        eid = net.controller.election_id
        pem = tuple(Path(p).read_bytes() for p in (c.tls.ca, c.tls.cert, c.tls.key)) if c.tls is not None else None
        self.sessions = {s.name: SwitchSession(s, (eid >> 64, eid & (2**64 - 1)), self.events.put,
                                               tls=ClientTls(pem[0], pem[1], pem[2], s.name) if pem else None)
                         for s in net.switches}
        self.states: dict[str, SwitchState | None] = {s.name: None for s in net.switches}
        self.counters = {"packet_in": 0, "packet_out": 0, "writes": 0, "write_errors": 0, "dropped_effects": 0,
                         "registrations": 0, "other_punts": 0, "credit_waits": 0, "credit_wait_us": 0}
        self.status_rounds = StatusRounds(net, self.sessions, self.states)
        self.releases = ReleaseProbes(net, self.sessions, self.mobility.pool, c.packet_out_window, self.log)
        self._released_to: set[str] = set()    # switches given a release since the last fence
        self._owner = owners_in(net)
        self._held: deque[object] = deque()     # an event met while collecting a batch: handled next
        self._followers: dict[int, tuple[float, list[int]]] = {}   # kept marker -> (until, markers it stands for)
        self.counter_reader: CounterReader | None = None
        self._stop = threading.Event()
        self.server: ControlServer | None = None
        self.cookie = 0

    # ------------------------------------------------------------------ lifecycle

    def run(self) -> None:
        """Start everything, serve until `stop()`; raises OSError/ValueError on unusable inputs."""
        c = self.net.controller
        for path in (c.p4info, c.device_config):
            if not Path(path).is_file():
                raise FileNotFoundError(f"pipeline file {path} not found (run 'make build')")
        self.cookie = expected_cookie(c.p4info, c.device_config)
        self.server = ControlServer(self.socket_path, self.events.put, self.log)
        self.server.start()
        try:
            spooled = self.spool.open() if self.spool is not None else []
            self.replay.open()
        except OSError:
            self.server.stop()
            if self.spool is not None:
                self.spool.close()
            raise
        if self.spool is not None and self.spool.torn_bytes:
            self.log("spool_torn", {"path": str(self.spool.path), "bytes": self.spool.torn_bytes,
                                    "reason": "a record the previous controller did not finish writing"})
        self.mobility.notifier.sequence = NotificationSequence(self.replay)    # not reset by a restart
        self.mobility.restore_buffers(spooled)
        self.counter_reader = CounterReader(self.events.put)
        self.log("controller_start", {"switches": [s.name for s in self.net.switches], "socket": self.socket_path,
                                      "mobile_hosts": len(self.net.mobile_hosts)})
        self.guard.announce(self.log)
        if self.bufsvc is not None:
            self.bufsvc.link.start()
        try:
            self._startup()
            while not self._stop.is_set():
                self._step()
        finally:
            self.server.stop()
            self.counter_reader.stop()
            if self.bufsvc is not None:
                self.bufsvc.link.stop()
            for s in self.sessions.values():
                s.stop()
            if self.spool is not None:
                self.spool.close()
            self.replay.close()
            self.log("controller_stop", {})

    def stop(self) -> None:
        self._stop.set()
        self.events.put(None)

    def _startup(self) -> None:
        """Connect to all switches (bounded wait), rebuild MH state from what they hold, reconcile."""
        for s in self.sessions.values():
            s.start()
        deadline = time.monotonic() + self.startup_timeout
        read_back: dict[str, list[TableEntry]] = {}
        deferred: list[object] = []
        while len(read_back) < len(self.sessions) and not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                break
            if isinstance(ev, Connected):
                entries = self._attach_client(ev)
                if entries is not None:
                    read_back[ev.switch] = entries
            elif isinstance(ev, Lost):
                self._on_lost(ev)
            elif ev is not None:
                deferred.append(ev)       # packet-ins and requests wait for the model
        routes: dict[str, dict] = {}
        for name, entries in read_back.items():
            decoded = (self.programmer.decode_route(name, e) for e in entries)
            routes[name] = dict(d for d in decoded if d is not None)
        self._apply(self.mobility.recover(routes, time.monotonic()))
        for name in read_back:
            self._reconcile(name, read_back[name])
        self._apply(self.mobility.resume_flushes(time.monotonic()))      # packet-outs need reconciled switches
        missing = sorted(set(self.sessions) - set(read_back))
        self.log("startup_done", {"connected": sorted(read_back), "waiting_for": missing})
        for ev in deferred:
            self.events.put(ev)

    # ------------------------------------------------------------------ the loop

    def _step(self) -> None:
        now = time.monotonic()
        deadline = self.mobility.next_deadline()
        timeout = 0.5 if deadline is None else min(0.5, max(0.0, deadline - now))
        timeout = self.status_rounds.timeout(now, timeout)
        try:
            ev = self._held.popleft() if self._held else self.events.get(timeout=timeout)
        except queue.Empty:
            ev = None
        try:
            self._handle(ev)
            if self.watch is not None:
                self.watch.poll()
            now = time.monotonic()
            deadline = self.mobility.next_deadline()
            if deadline is not None and deadline <= now and not self._arrived_by(deadline):
                batch = self._batch()
                with held(self.log):
                    for fx in self.mobility.on_time(now):     # each MH's timers are an input of its own
                        batch.add(fx)
                    self._flush(batch)
        except Exception as exc:        # a bug must not take every MH's buffer and the switches down with it
            self.log("internal_error", {"error": repr(exc), "event": type(ev).__name__,
                                        "trace": traceback.format_exc(limit=8)})
            if isinstance(ev, ControlRequest):
                ev.respond({"ok": False, "error": f"internal error: {exc!r}", "kind": "internal"})
        if self.releases.fences:
            self.releases.settle()
        self.status_rounds.answer_due(time.monotonic())

    def _arrived_by(self, deadline: float) -> bool:
        """Is the next event a packet-in that reached the controller by `deadline`? Then it is handled before
        the timers due at `deadline`: a marker that came back in time is not lost because the daemon was
        busy (a batch's Writes) when its timeout fell due. Events arrive in order, so this defers the timers
        only for what arrived before them."""
        if not self._held:
            try:
                self._held.append(self.events.get_nowait())
            except queue.Empty:
                return False
        ev = self._held[0]
        return isinstance(ev, PacketInEvent) and ev.at <= deadline

    def _handle(self, ev: object) -> None:
        if isinstance(ev, (PacketInEvent, ServiceArrivals)):
            self._on_inputs(ev)
        elif isinstance(ev, Connected):
            entries = self._attach_client(ev)
            if entries is not None:
                self._reconcile(ev.switch, entries)
        elif isinstance(ev, Lost):
            self._on_lost(ev)
        elif isinstance(ev, ControlRequest):
            self._on_request(ev)
        elif isinstance(ev, CountersRead):
            self._on_counters(ev)
        elif isinstance(ev, ServiceReleased):
            if self.releases.fences.answer(PROBE, ev.batch):
                self.releases.settle()
        elif isinstance(ev, ServiceState):
            self.log("bufsvc_up" if ev.up else "bufsvc_down", {"reason": ev.reason} if ev.reason else {})
        elif isinstance(ev, BadPacketIn):
            self.counters["other_punts"] += 1
            self.log("packet_in_ignored", {"switch": ev.switch, "reason": f"undecodable packet-in: {ev.reason}"})

    # ------------------------------------------------------------------ switches

    def _attach_client(self, ev: Connected) -> list[TableEntry] | None:
        """Keep or push the pipeline; return what the switch holds now (None if it failed again)."""
        session = self.sessions[ev.switch]
        client = ev.client
        try:
            cookie = client.fetch_pipeline()
            kept = cookie == self.cookie
            if not kept:
                client.set_pipeline(self.net.controller.p4info, self.net.controller.device_config)
                session.pipeline_pushes += 1
            entries = client.read_table() if kept else []
        except (P4RuntimeError, OSError, ValueError) as exc:
            session.last_error = str(exc).splitlines()[0]
            self.log("switch_error", {"switch": ev.switch, "during": "attach", "error": session.last_error})
            client.close()
            session.reconnect()
            return None
        session.client = client
        session.state = "up"
        self.log("switch_up", {"switch": ev.switch, "pipeline": "kept" if kept else "pushed",
                               "entries_read": len(entries), "connects": session.connects})
        return entries

    def _on_lost(self, ev: Lost) -> None:
        session = self.sessions[ev.switch]
        self.states[ev.switch] = None
        session.last_error = ev.reason
        self.log("switch_down", {"switch": ev.switch, "reason": ev.reason})
        self.releases.credit.forget(ev.switch)
        session.reconnect()

    def _desired(self, name: str) -> list[TableEntry]:
        entries = self.programmer.static_entries(name)
        entries += [self.programmer.route_entry(name, addr, action)
                    for addr, action in sorted(self.mobility.routes()[name].items())]
        return entries

    def _reconcile(self, name: str, actual: list[TableEntry]) -> None:
        """Bring the switch to the model with the fewest writes; its view is the model afterwards."""
        client = self.sessions[name].client
        if client is None:
            return
        desired = self._desired(name)
        plan = diff(desired, actual)
        updates = plan.updates()
        try:
            for i in range(0, len(updates), WRITE_CHUNK):
                client.write(updates[i:i + WRITE_CHUNK])
            client.modify(self.programmer.ipf_config())     # a default entry: its MODIFY sets the default action
            budget = self.net.punt_budget                    # per ingress port (docs/pipeline.md, "Punt budget")
            sw = self.net.switch(name)
            assert sw is not None
            client.write_meters("punt_budget", [(p.number, budget.packets_per_s, budget.burst) for p in sw.ports])
        except P4RuntimeError as exc:
            self.counters["write_errors"] += 1
            self.log("switch_error", {"switch": name, "during": "reconcile", "error": str(exc).splitlines()[0]})
            self.states[name] = None
            return
        self.counters["writes"] += len(updates)
        self.states[name] = SwitchState(desired)
        self.log("reconciled", {"switch": name, "inserted": len(plan.inserts), "modified": len(plan.modifies),
                                "deleted": len(plan.deletes), "entries": len(desired)})

    # ------------------------------------------------------------------ effects

    def _apply(self, effects: list[Effect]) -> None:
        batch = self._batch()
        batch.add(effects)
        self._flush(batch)

    def _batch(self) -> EffectBatch:
        return EffectBatch(self._owner, self.net.controller.address)

    def _flush(self, batch: EffectBatch) -> None:
        """Every step of the batch: its Writes (one per switch, all at once), then its packet effects."""
        now = time.monotonic()
        self._followers = {k: v for k, v in self._followers.items() if v[0] > now}
        for step in batch.steps():
            write_step(step.writes, self.states, self.sessions, self.programmer, self.counters, self.log)
            flush(self.log)                 # what led to the step's packets is in the log before they leave
            for nonce, releases in step.behind.items():
                self.mobility.drain_behind(nonce, releases)     # a group's drain markers wait for all its releases
            for e in step.after:
                if isinstance(e, Completed):
                    self.log("handoff_active", {"mh": e.mh,
                                                "duration_ms": round((time.monotonic() - e.started) * 1000, 3)})
                else:
                    self._send(e)
            if self.bufsvc is not None:
                self.bufsvc.send()          # the step's releases, before the next step's Writes
            until = time.monotonic() + self.mobility.marker_s
            markers = self.mobility.shared.markers
            for kept, dropped in step.coalesced.items():
                self._followers[kept] = (until, dropped)
                # their `marker_sent` was logged as each was made; only the kept one leaves as a packet
                self.log("markers_coalesced", {"sent_for": markers.owner(kept),
                                               "stand_for": [markers.owner(n) for n in dropped]})
        self._fence_releases()
        self.releases.cover_credit()

    def _fence_releases(self) -> None:
        """Journal the releases above once every switch they went to has read them (release_probes.py)."""
        pool = self.mobility.pool
        records, switches, self._released_to = pool.take_releases(), self._released_to, set()
        if pool.spool is None or not records:
            return
        probes = self.bufsvc.take_batches() if self.bufsvc is not None else set()
        self.releases.fence(records, switches, probes)

    def _await_credit(self, name: str) -> None:
        """Wait until the switch has read enough packet-outs for one more (release_credit.py). Other events
        met meanwhile are held, in order, for the loop; a switch that does not answer in FENCE_TIMEOUT is
        given its credit back (it is gone or restarting: what went to it is lost with it either way)."""
        credit = self.releases.credit
        if credit.uncovered(name) and self.releases.probe(name, fence=False) is None:
            return
        started = time.monotonic()
        deadline = started + FENCE_TIMEOUT
        while credit.exhausted(name):
            left = deadline - time.monotonic()
            try:
                ev = self.events.get(timeout=left) if left > 0 else None
            except queue.Empty:
                ev = None
            if ev is None or (isinstance(ev, Lost) and ev.switch == name):
                if ev is not None:
                    self._held.append(ev)
                self.log("release_credit_timeout", {"switch": name, "in_flight": credit.in_flight(name)})
                credit.forget(name)
                return
            if (isinstance(ev, PacketInEvent) and ev.switch == name and ev.client is self.sessions[name].client
                    and ev.packet.metadata.get("reason") == REASON_TELEMETRY):
                self.counters["packet_in"] += 1
                self._on_telemetry(name, ev.packet.payload)
            else:
                self._held.append(ev)
        self.counters["credit_waits"] += 1
        self.counters["credit_wait_us"] += round((time.monotonic() - started) * 1e6)

    def _send(self, effect: PacketEffect) -> None:
        if self.bufsvc is not None and isinstance(effect, Release) and effect.tunnel:
            self.bufsvc.queue(effect)        # through the buffer service (bufsvc_path.py)
            return
        out = self.transmitter.packet_out(effect, self._serving)
        client = self.sessions[out.switch].client
        if client is None or not self._serving(out.switch):
            self.counters["dropped_effects"] += 1
            return
        if self.releases.credit.exhausted(out.switch):
            self._await_credit(out.switch)
        try:
            client.packet_out(out.frame, **out.metadata())
            self.releases.credit.sent(out.switch)
        except P4RuntimeError as exc:
            self.counters["dropped_effects"] += 1
            self.log("switch_error", {"switch": out.switch, "during": "packet-out", "error": str(exc).splitlines()[0]})
            return
        self.counters["packet_out"] += 1
        if isinstance(effect, Release):
            self._released_to.add(out.switch)

    def _serving(self, switch: str) -> bool:
        """Connected, and its entries are the model's (not waiting for a reconcile)."""
        return self.sessions[switch].client is not None and self.states[switch] is not None

    # ------------------------------------------------------------------ packet-ins

    def _on_inputs(self, first: PacketInEvent | ServiceArrivals) -> None:
        """`first` and the packet-ins and service arrivals already queued behind it (at most MAX_BATCH events),
        handled one by one in arrival order, their effects flushed together: registrations sent together share
        Writes, also when the gateway markers of earlier ones come back through the buffer service between them
        (as on the packet-in path, where those markers are packet-ins). A fence answer met meanwhile
        (`ServiceReleased`) is handled right after the batch: answering it later only journals later."""
        batch, after = self._batch(), deque[object]()
        last: ServiceArrivals | None = None
        with held(self.log):                # the batch's log lines: one write (each step's before its packets)
            # the batch's accepted registrations and arrivals: one write (and fsync) each, before anything leaves
            with self.replay.deferred(), self.mobility.pool.deferred_journal():
                ev: object = first
                for _ in range(MAX_BATCH):
                    if isinstance(ev, PacketInEvent):
                        self._take_packet_in(ev, batch)
                    elif isinstance(ev, ServiceArrivals):
                        try:
                            self._take_arrivals(ev, batch)
                        except Exception as exc:    # the others' effects still go out; this is not acknowledged
                            self.log("internal_error", {"error": repr(exc), "event": "ServiceArrivals",
                                                        "trace": traceback.format_exc(limit=8)})
                            break
                        last = ev
                    elif isinstance(ev, ServiceReleased):
                        after.append(ev)
                    else:
                        after.append(ev)
                        break
                    try:
                        ev = self._held.popleft() if self._held else self.events.get_nowait()  # held ones are older
                    except queue.Empty:
                        break
                else:
                    after.append(ev)
            self._flush(batch)              # replies and notifications only now: journaled before they leave
        if last is not None:
            assert self.bufsvc is not None
            self.bufsvc.ack(last)           # handled and journaled: the service may forget them
        self._held.extendleft(reversed(after))

    def _take_packet_in(self, ev: PacketInEvent, batch: EffectBatch) -> None:
        try:
            self._on_packet_in(ev, batch)
        except Exception as exc:            # as in _step, but the batch's other effects must still go out
            self.log("internal_error", {"error": repr(exc), "event": "PacketInEvent",
                                        "trace": traceback.format_exc(limit=8)})

    def _on_packet_in(self, ev: PacketInEvent, batch: EffectBatch) -> None:
        if ev.client is not self.sessions[ev.switch].client:
            return                                  # from a session already replaced
        self.counters["packet_in"] += 1
        # timers count from handling, not arrival: an event that queued behind others must not find its
        # marker deadlines already past (a stale `now` once timed the gateway's marker out at once)
        now = time.monotonic()
        out = dispatch(self.mobility, self.guard, self.log, ev.switch, ev.packet.metadata, ev.packet.payload,
                       now, ev.at)
        if out.kind == "registration":
            self.counters["registrations"] += 1
        elif out.kind == "telemetry":
            self._on_telemetry(ev.switch, ev.packet.payload)
        elif out.kind == "ignored":
            self.counters["other_punts"] += 1
        batch.add(out.effects)
        if out.kind == "buffer" and self._followers:
            for nonce in self._stood_for(split_ethernet(ev.packet.payload)[2]):
                batch.add(self.mobility.marker_back(ev.switch, nonce, now))

    def _take_arrivals(self, ev: ServiceArrivals, batch: EffectBatch) -> None:
        """Packets the buffer service read from the switches' buffer ports: handled as buffer packet-ins."""
        assert self.bufsvc is not None
        now = time.monotonic()
        for switch, packet in self.bufsvc.accepted(ev):
            batch.add(self.mobility.packet_in(switch, packet, now))
            for nonce in self._stood_for(packet) if self._followers else []:
                batch.add(self.mobility.marker_back(switch, nonce, now))

    def _stood_for(self, packet: bytes) -> list[int]:
        """The markers a returned marker stood in for (coalesced behind it, effect_batch.py)."""
        try:
            nonce = marker_nonce(parse_ipv4(packet))
        except PacketError:
            return []
        return [] if nonce is None else self._followers.pop(nonce, (0.0, []))[1]

    # ------------------------------------------------------------------ operator requests

    def _on_request(self, req: ControlRequest) -> None:
        now = time.monotonic()
        try:
            if req.cmd == "status":
                self._start_status(req)
                return
            if req.cmd == "entries":
                self._entries(req)
                return
            if req.cmd == "handoff":
                self._apply(self.mobility.move(req.args["mh"], req.args["to"], now, req.args.get("port")))
            elif req.cmd == "detach":
                self._apply(self.mobility.detach(req.args["mh"], now))
            else:
                self.log("control_rejected", {"reason": f"unknown command {req.cmd!r}"})
                req.respond({"ok": False, "error": f"unknown command {req.cmd!r}", "kind": "bad-request"})
                return
        except MobilityError as exc:
            self.log("request_refused", {"cmd": req.cmd, "reason": str(exc)})
            req.respond({"ok": False, "error": str(exc), "kind": "refused"})
            return
        st = self.mobility.state(req.args["mh"])
        req.respond({"ok": True, "mh": st.host.name, "phase": st.phase.value, "bs": st.bs})

    def _entries(self, req: ControlRequest) -> None:
        """What a switch holds, read back from it (not the model): for operators and restart checks."""
        name = req.args["switch"]
        if name not in self.sessions:
            raise MobilityError(f"unknown switch {name!r}")
        client = self.sessions[name].client
        if client is None:
            raise MobilityError(f"switch {name} is not connected")
        try:
            entries = client.read_table()
        except P4RuntimeError as exc:
            req.respond({"ok": False, "error": str(exc).splitlines()[0], "kind": "switch-error"})
            return
        rows = sorted(json.dumps([e.table, sorted(e.match.items()), e.priority, e.action, sorted(e.params.items())])
                      for e in entries)
        req.respond({"ok": True, "switch": name, "entries": [json.loads(r) for r in rows]})

    def _start_status(self, req: ControlRequest) -> None:
        """Answer from the model at once, the switches' part when it is back (status_rounds.py)."""
        body: dict[str, Any] = {"ok": True, "switches": [], "mobile_hosts": self.mobility.status(),
                                "buffer_total": self.mobility.pool.total,
                                "buffer_limit": self.net.buffer.total_packets,
                                "counters": dict(self.counters, unknown_punts=self.mobility.unknown_punts),
                                "registrations_unauthenticated": dict(self.guard.rejected),
                                "refusal_replies_suppressed": self.guard.replies_suppressed,
                                "buffer_service": self.bufsvc.status() if self.bufsvc is not None else None,
                                "ports": []}
        assert self.counter_reader is not None
        self.status_rounds.start(req, body, self.counter_reader, time.monotonic())

    def _on_counters(self, ev: CountersRead) -> None:
        error = self.status_rounds.counters_read(ev)
        if error is not None:
            self.log("switch_error", {"switch": ev.switch, "during": "counter read", "error": error})

    def _on_telemetry(self, switch: str, payload: bytes) -> None:
        """A probe's answer goes to the oldest round still waiting for that port (each round sent one)."""
        if len(payload) < TELEMETRY.size:
            self.log("packet_in_ignored", {"switch": switch, "reason": f"telemetry answer of {len(payload)} bytes, "
                                                                       f"need {TELEMETRY.size}"})
            return
        t = TELEMETRY.unpack(payload)
        if self.releases.answered(switch, t.port):
            return
        if not self.status_rounds.probe_answered(switch, t):
            self.log("packet_in_ignored", {"switch": switch, "port": t.port,
                                           "reason": "telemetry answer no status round is waiting for"})
