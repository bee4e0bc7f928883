"""Registration authentication (controller/registration_auth.py): the RFC 5944 extension, each refusal, the key file.

Every refusal is driven through `punts.dispatch`, the one door registrations
come in by, with a real Mobility behind it: a refused request must leave the
routes and every MH's state exactly as they were.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest
import yaml

from p4handoff.controller.intents import Reply
from p4handoff.controller.mobility import Mobility
from p4handoff.controller.network import parse_network
from p4handoff.controller.punts import REASON_REGISTRATION, dispatch
from p4handoff.controller.registration import REPLY_SIZE, REQUEST_SIZE, RegistrationReply, RegistrationRequest, ReplyCode
from p4handoff.controller.registration_auth import (CLOCK_SKEW, LOG_BURST, MHAE_LENGTH, MHAE_TYPE, REPLY_BURST, REPLY_RATE,
                                                    RegistrationGuard,
                                                    sign, signed_request, verify, verify_reply)
from p4handoff.ntptime import ntp_seconds, ntp_time
from p4handoff.controller.replay_journal import SEQ_BLOCK, NotificationSequence, ReplayJournal
from p4handoff.keyfile import SPI_HMAC_SHA256, HostKey, KeyFileError, Keys, load_keys, parse_keys, write_keys
from tests.hostile_inputs import registration_frame

EXAMPLE = Path(__file__).resolve().parent.parent / "topo" / "three-switch.yaml"
NET = parse_network(yaml.safe_load(EXAMPLE.read_text()))
MH1, MH2 = NET.mobile_hosts[0], NET.mobile_hosts[1]
KEYS = Keys({MH1.name: HostKey(bytes(range(32))), MH2.name: HostKey(bytes(range(32, 64)))})
T0 = 1_800_000_000.0      # the controller's wall clock in these tests


class World:
    """Mobility behind the guard, with a settable wall clock and the log lines kept."""

    def __init__(self, journal: ReplayJournal | None = None, keys: Keys | None = KEYS) -> None:
        self.logs: list[tuple[str, dict[str, Any]]] = []
        self.wall = T0
        self.mob = Mobility(NET, log=lambda e, f: self.logs.append((e, f)), seed=3)
        self.guard = RegistrationGuard(NET, keys, self.mob.log, journal, clock=lambda: self.wall)
        self.now = 1.0

    def send(self, payload: bytes, switch: str = "bs1", port: int = 1, src: str | None = None) -> list:
        self.now += 0.01
        meta = {"reason": REASON_REGISTRATION, "ingress_port": port}
        frame = registration_frame(src or MH1.address, payload)
        return dispatch(self.mob, self.guard, self.mob.log, switch, meta, frame, self.now).effects

    def snapshot(self) -> tuple:
        return (repr(self.mob.routes()), repr(self.mob.status()))


def request(mh: Any = MH1, ident: int | None = None, **kw: Any) -> RegistrationRequest:
    return RegistrationRequest(mh.address, kw.pop("care_of", mh.address), NET.gateway.address, kw.pop("lifetime", 0xFFFF),
                               ntp_time(T0) if ident is None else ident, kw.pop("flags", 0))


def replies(effects: list) -> list[Reply]:
    return [e for e in effects if isinstance(e, Reply)]


# ---------------------------------------------------------------- the extension's codec

def test_extension_layout_is_rfc5944_with_spi_256():
    raw = signed_request(request(), KEYS.hosts[MH1.name])
    ext = raw[REQUEST_SIZE:]
    assert ext[0] == MHAE_TYPE == 32 and ext[1] == MHAE_LENGTH == 36 and len(ext) == 2 + 36
    assert struct.unpack("!I", ext[2:6])[0] == SPI_HMAC_SHA256 == 256
    assert RegistrationRequest.decode(raw) == request()        # the codec skips it as a well-formed extension
    assert verify(raw, REQUEST_SIZE, KEYS.hosts[MH1.name]) == ""


def test_every_bit_of_the_signed_part_is_covered():
    raw = signed_request(request(), KEYS.hosts[MH1.name])
    for byte in range(REQUEST_SIZE + 6):                    # request, extension type, length and SPI
        flipped = bytearray(raw)
        flipped[byte] ^= 0x01
        assert verify(bytes(flipped), REQUEST_SIZE, KEYS.hosts[MH1.name]) != "", byte


def test_ntp_timestamps_round_trip():
    assert abs(ntp_seconds(ntp_time(T0 + 0.25)) - (T0 + 0.25)) < 1e-6
    assert ntp_time(T0 + 1) > ntp_time(T0 + 0.999)


# ---------------------------------------------------------------- admitted, and each refusal

def test_an_authenticated_fresh_request_attaches_and_its_reply_is_signed():
    w = World()
    fx = w.send(signed_request(request(), KEYS.hosts[MH1.name]))
    (r,) = replies(fx)
    assert r.code is ReplyCode.ACCEPTED
    assert verify_reply(r.payload, KEYS.hosts[MH1.name]) == ""
    assert w.mob.state(MH1.name).bs == "bs1"
    assert w.guard.journal.bound(MH1.name) == ntp_time(T0)


def _refusals() -> list[tuple[str, bytes, ReplyCode | None]]:
    k1, k2 = KEYS.hosts[MH1.name], KEYS.hosts[MH2.name]
    good = signed_request(request(), k1)
    flipped = bytearray(good)
    flipped[12] ^= 0x40                                     # care-of address, after signing
    return [
        ("missing", request().encode(), ReplyCode.FAILED_AUTHENTICATION),
        ("bad_mac", signed_request(request(), k2), ReplyCode.FAILED_AUTHENTICATION),     # another MH's key
        ("bad_mac", bytes(flipped), ReplyCode.FAILED_AUTHENTICATION),
        ("wrong_spi", signed_request(request(), HostKey(k1.key, 257)), ReplyCode.FAILED_AUTHENTICATION),
        ("bad_length", good[:REQUEST_SIZE] + bytes([MHAE_TYPE, 20]) + good[REQUEST_SIZE + 2:REQUEST_SIZE + 22],
         ReplyCode.FAILED_AUTHENTICATION),
        ("not_last", good + bytes([130, 2, 0, 0]), ReplyCode.FAILED_AUTHENTICATION),
        ("stale", signed_request(request(ident=ntp_time(T0 - CLOCK_SKEW - 1)), k1), ReplyCode.IDENTIFICATION_MISMATCH),
        ("stale", signed_request(request(ident=ntp_time(T0 + CLOCK_SKEW + 1)), k1), ReplyCode.IDENTIFICATION_MISMATCH),
        ("unknown_mh", signed_request(RegistrationRequest("10.0.1.77", "10.0.1.77", identification=ntp_time(T0)), k1),
         ReplyCode.FAILED_AUTHENTICATION),
    ]


@pytest.mark.parametrize("kind,payload,code", _refusals(), ids=[k for k, _, _ in _refusals()])
def test_each_refusal_changes_nothing_is_answered_and_counted(kind, payload, code):
    w = World()
    w.send(signed_request(request(ident=ntp_time(T0 - 1)), KEYS.hosts[MH1.name]), "bs2")     # mh1 at bs2
    before = w.snapshot()
    fx = w.send(payload, "bs1")
    assert w.snapshot() == before
    assert [r.code for r in replies(fx)] == [code] and len(fx) == 1
    assert w.guard.rejected[kind] == 1 and sum(w.guard.rejected.values()) == 1
    reply = RegistrationReply.decode(fx[0].payload)
    if code is ReplyCode.IDENTIFICATION_MISMATCH:     # §5.7.1: our time in the high half, theirs in the low
        assert abs(ntp_seconds(reply.identification & ~0xFFFFFFFF) - T0) <= 1
        assert reply.identification & 0xFFFFFFFF == RegistrationRequest.decode(payload).identification & 0xFFFFFFFF
    assert ("registration_unauthenticated", kind) in [(e, f.get("kind")) for e, f in w.logs]


def test_a_replayed_request_is_refused_with_133_and_changes_nothing():
    w = World()
    first = signed_request(request(), KEYS.hosts[MH1.name])
    w.send(first, "bs1")
    w.send(signed_request(request(ident=ntp_time(T0 + 1)), KEYS.hosts[MH1.name]), "bs2")
    before = w.snapshot()
    fx = w.send(first, "bs1")                               # captured at bs1, replayed there
    assert w.snapshot() == before and w.mob.state(MH1.name).bs == "bs2"
    assert [r.code for r in replies(fx)] == [ReplyCode.IDENTIFICATION_MISMATCH]
    assert w.guard.rejected["replayed"] == 1


def test_a_refused_request_does_not_move_the_bound():
    w = World()
    w.send(signed_request(request(care_of="10.9.9.9"), KEYS.hosts[MH1.name]))    # authentic, refused by Mobility (129)
    assert w.guard.journal.bound(MH1.name) == 0
    fx = w.send(signed_request(request(), KEYS.hosts[MH1.name]))
    assert [r.code for r in replies(fx)] == [ReplyCode.ACCEPTED]


def test_a_request_from_a_non_access_port_is_refused_without_a_reply():
    w = World()
    fx = w.send(request().encode(), "gw", 1)
    assert fx == [] and w.guard.rejected["missing"] == 1


def test_refusals_are_logged_at_a_bounded_rate():
    w = World()
    for _ in range(200):
        w.send(request().encode())
    lines = [f for e, f in w.logs if e == "registration_unauthenticated"]
    assert len(lines) == LOG_BURST and w.guard.rejected["missing"] == 200


def test_refusals_are_answered_at_a_bounded_rate_per_port():
    """A flood of forgeries gets REPLY_BURST answers, then REPLY_RATE a second; another cell is answered as before."""
    w = World()
    t = [100.0]
    w.guard = RegistrationGuard(NET, KEYS, w.mob.log, clock=lambda: w.wall, tick=lambda: t[0])
    forged = request().encode()
    answered = [len(replies(w.send(forged))) for _ in range(REPLY_BURST + 30)]
    assert answered == [1] * REPLY_BURST + [0] * 30
    assert w.guard.replies_suppressed == 30 and w.guard.rejected["missing"] == REPLY_BURST + 30
    assert len(replies(w.send(forged, switch="bs2"))) == 1                  # bs2's cell has its own budget
    t[0] += 1.0
    assert sum(len(replies(w.send(forged))) for _ in range(30)) == int(REPLY_RATE)


def test_without_keys_the_guard_lets_everything_through():
    w = World(keys=None)
    fx = w.send(request(ident=5).encode())
    assert [r.code for r in replies(fx)] == [ReplyCode.ACCEPTED] and not w.guard.enforcing


# ---------------------------------------------------------------- the replay bound outlives the process

def test_the_replay_bound_survives_a_reopen_and_a_torn_tail(tmp_path):
    path = tmp_path / "ctl.replay"
    j = ReplayJournal(path)
    j.open()
    w = World(j)
    captured = signed_request(request(), KEYS.hosts[MH1.name])
    w.send(captured)
    j.close()
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")                             # a record cut short by a crash
    j2 = ReplayJournal(path)
    assert j2.open() == {MH1.name: ntp_time(T0)}
    w2 = World(j2)
    before = w2.snapshot()
    fx = w2.send(captured)
    assert w2.snapshot() == before and [r.code for r in replies(fx)] == [ReplyCode.IDENTIFICATION_MISMATCH]
    with pytest.raises(OSError, match="in use"):
        ReplayJournal(path).open()
    j2.close()


def test_notification_numbers_continue_above_every_reservation_after_a_reopen(tmp_path):
    """Receivers drop a seq they have seen (docs/wire-contract.md): a restart must never send one again,
    even one the previous controller reserved and did not use; the MHs' bounds stay beside it."""
    path = tmp_path / "ctl.replay"
    j = ReplayJournal(path)
    j.open()
    j.advance(MH1.name, 77)
    seq = NotificationSequence(j)
    assert [seq() for _ in range(SEQ_BLOCK + 5)] == list(range(1, SEQ_BLOCK + 6))   # into a second block
    j.close()
    j2 = ReplayJournal(path)
    j2.open()
    assert j2.mh_bounds() == {MH1.name: 77}
    assert NotificationSequence(j2)() == 2 * SEQ_BLOCK + 1                # above the second block, used or not
    j2.close()
    j3 = ReplayJournal(path)
    j3.open()
    assert NotificationSequence(j3)() == 3 * SEQ_BLOCK + 1                # j2 sent one; the rest of its block is lost
    j3.close()


# ---------------------------------------------------------------- the key file

def test_key_file_written_0600_and_read_back(tmp_path):
    path = tmp_path / "keys.yaml"
    keys = write_keys(path, ["mh1", "ch"])
    assert os.stat(path).st_mode & 0o777 == 0o600
    again = load_keys(path)
    assert again.hosts == keys.hosts and len(keys.hosts["mh1"].key) == 32
    assert keys.hosts["mh1"].key != keys.hosts["ch"].key
    assert write_keys(path, ["mh1", "mh2"], keep=again).hosts["mh1"] == keys.hosts["mh1"]


def test_a_key_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "keys.yaml"
    write_keys(path, ["mh1"])
    os.chmod(path, 0o640)
    with pytest.raises(KeyFileError, match="chmod 600"):
        load_keys(path)


@pytest.mark.parametrize("raw,where", [
    ({"hosts": {"mh1": {"key": "zz"}}}, "hosts.mh1.key"),
    ({"hosts": {"mh1": {"key": "00" * 8}}}, "hosts.mh1.key"),
    ({"hosts": {"mh1": {"key": "00" * 32, "spi": 255}}}, "hosts.mh1.spi"),
    ({"hosts": {"mh1": "00" * 32}}, "hosts.mh1"),
    ({"keys": {}}, "hosts"),
])
def test_malformed_key_files_name_the_field(raw, where):
    with pytest.raises(KeyFileError) as err:
        parse_keys(raw)
    assert where in [p for p, _ in err.value.errors]


def test_the_daemon_refuses_a_readable_key_file_at_start(tmp_path):
    from p4handoff.controller.daemon import Daemon
    write_keys(tmp_path / "keys.yaml", [MH1.name])
    os.chmod(tmp_path / "keys.yaml", 0o644)
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["controller"].update(keys="keys.yaml", socket=str(tmp_path / "ctl.sock"))
    net = parse_network(raw, base_dir=tmp_path)
    with pytest.raises(KeyFileError, match="0644"):
        Daemon(net, log=lambda e, f: None)


def test_reply_verification_is_the_mh_side_of_the_same_check():
    reply = RegistrationReply(ReplyCode.ACCEPTED, MH1.address, NET.gateway.address, 0xFFFF, 7).encode()
    signed = sign(reply, KEYS.hosts[MH1.name])
    assert verify_reply(signed, KEYS.hosts[MH1.name]) == "" and len(signed) == REPLY_SIZE + 38
    assert verify_reply(signed, KEYS.hosts[MH2.name]) == "bad_mac"
    assert verify_reply(reply, KEYS.hosts[MH1.name]) == "missing"


def test_ctl_keys_writes_a_key_per_host_and_keeps_existing_ones(tmp_path, capsys):
    from p4handoff.cli.main import main
    out = tmp_path / "keys.yaml"
    assert main(["ctl", "keys", "--network", str(EXAMPLE), "--out", str(out)]) == 0
    first = load_keys(out)
    assert set(first.hosts) == {"mh1", "mh2", "ch"} and os.stat(out).st_mode & 0o777 == 0o600
    assert main(["ctl", "keys", "--network", str(EXAMPLE), "--out", str(out)]) == 0
    assert load_keys(out).hosts == first.hosts
    os.chmod(out, 0o604)
    assert main(["ctl", "keys", "--network", str(EXAMPLE), "--out", str(out)]) == 3
    assert "chmod 600" in capsys.readouterr().err


def test_a_deferred_batch_is_journaled_in_one_write_at_its_end(tmp_path):
    """ReplayJournal.deferred (the daemon's batch of registrations): nothing reaches the file inside the block,
    every bound does at its end, in one write; a reopen sees them all, as it does without the block."""
    path = tmp_path / "ctl.replay"
    j = ReplayJournal(path, fsync=True)
    j.open()
    size = path.stat().st_size
    with j.deferred():
        j.advance(MH1.name, 5)
        j.advance("mh2", 9)
        j.advance(MH1.name, 4)                          # below the bound: ignored, as always
        assert j.bound(MH1.name) == 5 and path.stat().st_size == size     # in memory, not yet on disk
    assert path.stat().st_size > size
    j.advance("mh3", 1)                                 # outside a block: written at once
    j.close()
    j2 = ReplayJournal(path)
    assert j2.open() == {MH1.name: 5, "mh2": 9, "mh3": 1}
    j2.close()
