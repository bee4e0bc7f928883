"""Forged signalling against the controller's own code: registrations, replays across a restart, notifications.

The half of `make security` that needs no switch (issue 23). Every forged
registration goes through `punts.dispatch` (the one door registrations come
in by) into a real Mobility behind a RegistrationGuard with real keys, at a
real access port, while mh1 and mh2 are attached; it is *accepted* if it
changes the routes or any MH's state, or draws an accepted reply. Kinds (all
seeded, so `--seed` replays a run exactly):

- `random_mh`: a home address no MH has, signed under a random key;
- `other_mh`: an attached MH's home address, fresh identification, either
  without the extension or signed with the sender's own (the other MH's) key;
- `bit_flip`: an authentic fresh request with one random bit flipped;
- `wrong_spi`: the right key under another SPI;
- `stale`: authentic, identification outside the ±7 s window or not above the last accepted;
- `truncated_ext`: an authentic request cut inside its extension.

Authentic registrations are interleaved (`legit_accepted` must equal
`legit_sent`: the harness can see an acceptance). `replays_after_restart`:
authentic requests accepted by one guard and journal, replayed to a new
Mobility, guard and journal over the same file. Notifications: unsealed,
another host's key, one bit flipped, replayed, truncated, against an Opener
that accepts the authentic ones sent between them.
"""
from __future__ import annotations

import random
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from p4handoff.controller.intents import Effect, Reply
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import Network, parse_network
from p4handoff.controller.packets import ethernet, udp_packet
from p4handoff.controller.punts import REASON_REGISTRATION, dispatch
from p4handoff.controller.registration import REQUEST_SIZE, RegistrationRequest, ReplyCode
from p4handoff.controller.registration_auth import CLOCK_SKEW, RegistrationGuard, sign
from p4handoff.controller.replay_journal import ReplayJournal
from p4handoff.keyfile import HostKey, Keys
from p4handoff.notify import Event, Notification
from p4handoff.notify_auth import MAC_BYTES, NotificationAuthError, Opener, Sealer
from p4handoff import topo
from p4handoff.wire import UDP_PORT_MIP_REGISTRATION
from p4handoff.ntptime import ntp_time

KINDS = ("random_mh", "other_mh", "bit_flip", "wrong_spi", "stale", "truncated_ext")
NOTE_KINDS = ("unsealed", "wrong_key", "bit_flip", "replayed", "truncated")
T0 = 1_800_000_000.0


@dataclass
class Figures:
    seed: int
    forged_registrations_tried: int = 0
    forged_registrations_accepted: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)     # kind -> [tried, accepted]
    legit_sent: int = 0
    legit_accepted: int = 0
    replays_after_restart_tried: int = 0
    replays_after_restart_accepted: int = 0
    forged_notifications_tried: int = 0
    forged_notifications_accepted: int = 0
    legit_notifications_accepted: int = 0

    def lines(self) -> list[str]:
        out = [f"forgery_seed: {self.seed}",
               f"forged_registrations_tried: {self.forged_registrations_tried}",
               f"forged_registrations_accepted: {self.forged_registrations_accepted}"]
        out += [f"  {k}: tried {t}, accepted {a}" for k, (t, a) in self.by_kind.items()]
        out += [f"legit_registrations_accepted: {self.legit_accepted}/{self.legit_sent}",
                f"replays_after_restart_tried: {self.replays_after_restart_tried}",
                f"replays_after_restart_accepted: {self.replays_after_restart_accepted}",
                f"forged_notifications_tried: {self.forged_notifications_tried}",
                f"forged_notifications_accepted: {self.forged_notifications_accepted}",
                f"legit_notifications_accepted: {self.legit_notifications_accepted}"]
        return out


def example_network() -> Network:
    """topo/three-switch.yaml: a gateway, two BSs, mh1 and mh2, the correspondent ch."""
    return parse_network(yaml.safe_load((Path(topo.__file__).resolve().parent / "three-switch.yaml").read_text()))


class _Controller:
    """Mobility behind the guard, as the daemon wires them, with a wall clock the harness sets."""

    def __init__(self, net: Network, keys: Keys | None, journal: ReplayJournal) -> None:
        self.net, self.wall, self.now = net, T0, 1.0
        self.mob = Mobility(net, log=lambda e, f: None, seed=0)
        self.guard = RegistrationGuard(net, keys, self.mob.log, journal, clock=lambda: self.wall)

    def send(self, switch: str, port: int, src: str, payload: bytes) -> list[Effect]:
        self.now += 0.001
        frame = ethernet("ff:ff:ff:ff:ff:ff", "02:bb:00:00:00:01",
                         udp_packet(src, "255.255.255.255", UDP_PORT_MIP_REGISTRATION, UDP_PORT_MIP_REGISTRATION,
                                    payload))
        return dispatch(self.mob, self.guard, self.mob.log, switch, {"reason": REASON_REGISTRATION,
                                                                     "ingress_port": port}, frame, self.now).effects

    def snapshot(self) -> str:
        return repr(self.mob.routes()) + repr(self.mob.status())


def _accepted(effects: list[Effect]) -> bool:
    return any(not isinstance(e, Reply) or e.code is ReplyCode.ACCEPTED for e in effects)


def forge_registrations(per_kind: int, seed: int, workdir: Path, figures: Figures, enforce: bool = True) -> None:
    """`enforce=False` runs the same inputs against a controller without keys (the harness must see them win)."""
    rng = random.Random(seed)
    net = example_network()
    mhs = list(net.mobile_hosts)
    keys = Keys({m.name: HostKey(rng.randbytes(32)) for m in mhs})
    cells = [(s.name, p.number) for s in net.base_stations for p in s.ports if p.role == "access"]
    journal = ReplayJournal(workdir / "forgery.replay")
    journal.open()
    ctl = _Controller(net, keys if enforce else None, journal)
    ident = {m.name: ntp_time(T0 - 5) for m in mhs}
    home = {m.name: cells[k % len(cells)] for k, m in enumerate(mhs)}      # mh1 in bs1's cell, mh2 in bs2's

    def legit(m: Any) -> None:
        """An authentic registration (attach, then refreshes where it is): must be accepted."""
        ident[m.name] += 1 << 20
        bs, port = home[m.name]
        effects = ctl.send(bs, port, m.address, sign(RegistrationRequest(m.address, m.address, identification=ident[
            m.name]).encode(), keys.hosts[m.name]))
        figures.legit_sent += 1
        figures.legit_accepted += any(isinstance(e, Reply) and e.code is ReplyCode.ACCEPTED for e in effects)

    for m in mhs:
        legit(m)
    makers: dict[str, Callable[[Any], tuple[str, bytes]]] = {
        "random_mh": lambda m: _random_mh(rng, net),
        "other_mh": lambda m: (m.address, _other_mh(rng, m, mhs, keys, ident)),
        "bit_flip": lambda m: (m.address, _bit_flip(rng, m, keys, ident)),
        "wrong_spi": lambda m: (m.address, sign(_fresh(m, ident).encode(),
                                                HostKey(keys.hosts[m.name].key, rng.randrange(257, 2**32)))),
        "stale": lambda m: (m.address, _stale(rng, m, keys, ident)),
        "truncated_ext": lambda m: (m.address, _truncated(rng, m, keys, ident)),
    }
    legit_every = max(1, per_kind // 50)
    for kind in KINDS:
        tried = accepted = 0
        for i in range(per_kind):
            m = rng.choice(mhs)
            bs, port = rng.choice(cells)
            src, payload = makers[kind](m)
            before = ctl.snapshot()
            effects = ctl.send(bs, port, src, payload)
            tried += 1
            accepted += _accepted(effects) or ctl.snapshot() != before
            if i % legit_every == 0:
                legit(rng.choice(mhs))
        figures.by_kind[kind] = [tried, accepted]
        figures.forged_registrations_tried += tried
        figures.forged_registrations_accepted += accepted
    journal.close()


def _fresh(m: Any, ident: dict[str, int]) -> RegistrationRequest:
    return RegistrationRequest(m.address, m.address, identification=ident[m.name] + (1 << 30))


def _random_mh(rng: random.Random, net: Network) -> tuple[str, bytes]:
    taken = {m.address for m in net.mobile_hosts}
    while (addr := f"10.0.{rng.randrange(256)}.{rng.randrange(1, 254)}") in taken:
        pass
    req = RegistrationRequest(addr, addr, identification=ntp_time(T0))
    return addr, sign(req.encode(), HostKey(rng.randbytes(32)))


def _other_mh(rng: random.Random, m: Any, mhs: list, keys: Keys, ident: dict[str, int]) -> bytes:
    raw = _fresh(m, ident).encode()
    if rng.random() < 0.5:
        return raw
    other = next(o for o in mhs if o.name != m.name)
    return sign(raw, keys.hosts[other.name])


def _bit_flip(rng: random.Random, m: Any, keys: Keys, ident: dict[str, int]) -> bytes:
    raw = bytearray(sign(_fresh(m, ident).encode(), keys.hosts[m.name]))
    bit = rng.randrange(len(raw) * 8)
    raw[bit // 8] ^= 0x80 >> (bit % 8)
    return bytes(raw)


def _stale(rng: random.Random, m: Any, keys: Keys, ident: dict[str, int]) -> bytes:
    choice = rng.randrange(3)
    if choice == 0:
        value = ntp_time(T0 - CLOCK_SKEW - 1 - rng.random() * 1e6)
    elif choice == 1:
        value = ntp_time(T0 + CLOCK_SKEW + 1 + rng.random() * 1e6)
    else:
        value = ident[m.name] - rng.randrange(0, 1 << 28)          # not above the last accepted
    return sign(RegistrationRequest(m.address, m.address, identification=value).encode(), keys.hosts[m.name])


def _truncated(rng: random.Random, m: Any, keys: Keys, ident: dict[str, int]) -> bytes:
    raw = sign(_fresh(m, ident).encode(), keys.hosts[m.name])
    return raw[:rng.randrange(REQUEST_SIZE + 1, len(raw))]


def replays_after_restart(count: int, seed: int, workdir: Path, figures: Figures) -> None:
    rng = random.Random(seed + 1)
    net = example_network()
    mhs = list(net.mobile_hosts)
    keys = Keys({m.name: HostKey(rng.randbytes(32)) for m in mhs})
    cells = [(s.name, p.number) for s in net.base_stations for p in s.ports if p.role == "access"]
    path = workdir / "restart.replay"
    journal = ReplayJournal(path)
    journal.open()
    first = _Controller(net, keys, journal)
    captured: list[tuple[str, int, str, bytes]] = []
    for k in range(count):
        m = mhs[k % len(mhs)]
        bs, port = cells[k % len(mhs) % len(cells)]
        payload = sign(RegistrationRequest(m.address, m.address, identification=ntp_time(T0 - 3) + k).encode(),
                       keys.hosts[m.name])
        if any(isinstance(e, Reply) and e.code is ReplyCode.ACCEPTED for e in first.send(bs, port, m.address, payload)):
            captured.append((bs, port, m.address, payload))
    journal.close()
    again = ReplayJournal(path)
    again.open()
    second = _Controller(net, keys, again)             # the restarted controller: nothing in memory
    for bs, port, src, payload in rng.sample(captured, len(captured)):
        before = second.snapshot()
        effects = second.send(bs, port, src, payload)
        figures.replays_after_restart_tried += 1
        figures.replays_after_restart_accepted += _accepted(effects) or second.snapshot() != before
    again.close()


def forge_notifications(per_kind: int, seed: int, figures: Figures) -> None:
    rng = random.Random(seed + 2)
    key, other = rng.randbytes(32), rng.randbytes(32)
    clock = [T0]
    sealer, opener = Sealer(lambda: clock[0]), Opener(key, lambda: clock[0])
    seen: list[bytes] = []

    def note() -> bytes:
        return Notification(rng.choice(list(Event)), rng.randrange(1 << 32), "10.0.1.1", "10.0.1.1",
                            rng.randrange(3), rng.randrange(3)).encode()

    def forged(kind: str) -> bytes:
        if kind == "unsealed":
            return note() + rng.randbytes(rng.randrange(0, 40))
        if kind == "wrong_key":
            return Sealer(lambda: clock[0] + 1).seal(note(), other)
        if kind == "bit_flip":
            flipped = bytearray(sealer.seal(note(), key))
            bit = rng.randrange(len(flipped) * 8)
            flipped[bit // 8] ^= 0x80 >> (bit % 8)
            return bytes(flipped)
        if kind == "replayed":
            return rng.choice(seen)
        sealed = sealer.seal(note(), key)
        return sealed[:rng.randrange(len(sealed) - MAC_BYTES, len(sealed))]

    for kind in NOTE_KINDS:
        for _ in range(per_kind):
            clock[0] += 0.001
            authentic = sealer.seal(note(), key)
            try:
                opener.open(authentic)
                figures.legit_notifications_accepted += 1
                seen.append(authentic)
            except NotificationAuthError:
                pass
            figures.forged_notifications_tried += 1
            try:
                opener.open(forged(kind))
                figures.forged_notifications_accepted += 1
            except NotificationAuthError:
                pass


def run(per_kind: int, seed: int) -> Figures:
    figures = Figures(seed)
    with tempfile.TemporaryDirectory(prefix="p4h-forgery-") as tmp:
        forge_registrations(per_kind, seed, Path(tmp), figures)
        replays_after_restart(min(per_kind, 2000), seed, Path(tmp), figures)
    forge_notifications(per_kind, seed, figures)
    return figures
