"""The handoff notification codec: round trip and rejection of bad datagrams."""
import pytest

from p4handoff import notify
from p4handoff.notify import Event, Notification, NotificationError


def sample() -> Notification:
    return Notification(Event.HANDOFF, seq=7, mh_addr="10.0.2.10", path_addr="10.0.3.10",
                        old_cell=1, new_cell=2, new_link_kbps=384, new_link_delay_us=70_000)


def test_round_trip_is_exact_and_32_bytes():
    data = sample().encode()
    assert len(data) == notify.SIZE == 32
    assert data[:4] == b"P4HO"
    assert Notification.decode(data) == sample()


def test_trailing_bytes_are_ignored_for_later_versions():
    assert Notification.decode(sample().encode() + b"future") == sample()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[:31], "too short"),
    (lambda d: b"XXXX" + d[4:], "bad magic"),
    (lambda d: d[:4] + b"\x02" + d[5:], "version"),
    (lambda d: d[:5] + b"\x09" + d[6:], "unknown event"),
])
def test_bad_datagrams_are_rejected_with_a_reason(mutate, message):
    with pytest.raises(NotificationError, match=message):
        Notification.decode(mutate(sample().encode()))


def test_bad_address_cannot_be_encoded():
    with pytest.raises(ValueError):
        Notification(Event.DETACH, 1, "not-an-address", "10.0.0.1").encode()


# --- revision 2: the forwarding signal (issue 20) ---------------------------------------------

def forwarded() -> Notification:
    return Notification(Event.HANDOFF, seq=8, mh_addr="10.0.2.10", path_addr="10.0.2.10", old_cell=1,
                        new_cell=2, forwarding=notify.Forwarding(buffered=57, flush_end_us=12_500))


def revision_1_decode(data: bytes) -> tuple:
    """The decoder as shipped before revision 2 (commit 6d3f0af, p4handoff/notify.py), kept verbatim
    in its checks: what an old receiver does with a datagram."""
    import ipaddress
    import struct
    fmt = struct.Struct("!4sBBHI4s4sHHII")
    if len(data) < fmt.size:
        raise NotificationError("too short")
    magic, version, event, _flags, seq, mh, path, old, new, kbps, delay = fmt.unpack_from(data)
    if magic != b"P4HO" or version != 1:
        raise NotificationError("bad magic or version")
    return (Event(event), seq, str(ipaddress.IPv4Address(mh)), str(ipaddress.IPv4Address(path)),
            old, new, kbps, delay)


def test_forwarding_round_trip_is_exact_and_40_bytes():
    data = forwarded().encode()
    assert len(data) == notify.SIZE + notify.EXT_SIZE == 40
    assert data[4] == notify.VERSION == 1             # the version byte did not move or change
    assert Notification.decode(data) == forwarded()
    assert notify.body_length(data) == 40


def test_an_old_receiver_reads_a_revision_2_handoff_as_before():
    note = forwarded()
    assert revision_1_decode(note.encode()) == (Event.HANDOFF, 8, "10.0.2.10", "10.0.2.10", 1, 2, 0, 0)


def test_a_new_receiver_reads_a_revision_1_handoff_as_not_forwarded():
    assert Notification.decode(sample().encode()).forwarding is None


def test_body_delimits_itself_so_a_trailer_can_follow():
    trailer = b"\xaa" * 24  # e.g. an authentication tag
    for note in (sample(), forwarded()):
        data = note.encode()
        assert notify.body_length(data + trailer) == len(data)
        assert Notification.decode(data + trailer) == note


def test_a_later_revisions_longer_block_is_skipped_by_its_length():
    data = bytearray(forwarded().encode())
    data[32], data[33] = 3, 12                        # revision 3, four more bytes
    data += b"\x00\x01\x02\x03"
    assert notify.body_length(bytes(data)) == 44
    assert Notification.decode(bytes(data) + b"tail").forwarding == forwarded().forwarding


def test_unknown_flag_bits_are_ignored_like_revision_1_ignored_flags():
    data = bytearray(sample().encode())
    data[6] |= 0x80                                  # a bit no revision defines yet
    assert Notification.decode(bytes(data)) == sample()


def _with(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value):]


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[:39], "only 7 present"),                                      # block cut short
    (lambda d: d[:33], "no extension block"),
    (lambda d: _with(d, 33, b"\x04"), "extension length 4"),                  # too short for the fields
    (lambda d: _with(d, 32, b"\x01"), "extension revision 1"),
    (lambda d: _with(d, 6, b"\x00\x01")[:32], "without its extension"),       # flag but no block
    (lambda d: _with(d, 5, b"\x01"), "forwarding flag on a DETACH"),
])
def test_malformed_forwarding_is_rejected_with_a_reason(mutate, message):
    with pytest.raises(NotificationError, match=message):
        Notification.decode(mutate(forwarded().encode()))


@pytest.mark.parametrize("kwargs, message", [
    ({"buffered": 65536}, "buffered"),
    ({"buffered": -1}, "buffered"),
    ({"flush_end_us": 1 << 32}, "flush_end_us"),
])
def test_out_of_range_forwarding_cannot_be_built(kwargs, message):
    with pytest.raises(NotificationError, match=message):
        notify.Forwarding(**kwargs)


def test_forwarding_belongs_to_a_handoff_only():
    with pytest.raises(NotificationError, match="PROBE_UP"):
        Notification(Event.PROBE_UP, 1, "10.0.2.10", "10.0.3.10", forwarding=notify.Forwarding(3, 0))
