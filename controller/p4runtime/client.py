"""P4RuntimeClient: one session with one switch (device), addressed by P4Info names.

Election ids: P4Runtime makes the client with the highest election id the
primary (the only writer). `default_election_id()` is
(high = Unix time in ms when it was drawn, low = pid << 20 | per-process
counter): a client started later outranks every earlier one — a restarted
controller takes its switches back from its dead predecessor's stale session
— and two clients never draw the same id (the switch rejects a duplicate).
Pass an explicit `election_id` to get fixed roles instead, e.g. a standby
controller with a lower id.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, overload

import grpc

from ._protos import p4runtime_pb2, p4runtime_pb2_grpc
from .encoding import decode_int
from p4handoff.controller.p4runtime.entities import (CounterValue, PacketIn, TableEntry, UpdateType, counter_entry,
                       decode_packet_in, decode_table_entry, encode_packet_out, meter_entry, register_entry,
                       table_entry_bytes)
from . import protowire
from .errors import P4RuntimeError
from .p4info import P4Info, P4InfoError
from .stream import StreamChannel

Entity = TableEntry | p4runtime_pb2.Entity
_election_counter = itertools.count(1)
_election_lock = threading.Lock()
_MAX_MESSAGE = 256 * 1024 * 1024


def write_request(p4info: Callable[[], P4Info], device_id: int, election_id: tuple[int, int],
                  updates: Iterable[tuple[UpdateType, Entity]],
                  encode: Callable[[TableEntry], bytes] | None = None) -> p4runtime_pb2.WriteRequest:
    """One Write batch as sent: TableEntry objects encoded by P4Info names (`p4info` is asked only if needed),
    or by `encode` (the client's memo of entries it encoded before, as `table_entry_bytes`).

    The request is assembled from each entry's wire bytes and parsed once (p4runtime.protowire): copying
    each entry's proto into an Update of its own cost more than encoding it.

    CONTINUE_ON_ERROR (P4Runtime's default, stated): a failing update does not stop the others; the
    switch answers each update with its own status (P4RuntimeError.updates lists the failed ones)."""
    high, low = election_id
    election = (protowire.varint_field(1, high) if high else b"") + (protowire.varint_field(2, low) if low else b"")
    parts = [protowire.varint_field(_REQUEST_DEVICE_ID, device_id) if device_id else b"",
             protowire.bytes_field(_REQUEST_ELECTION_ID, election) if election else b""]
    delimited = protowire.delimited
    for kind, entity in updates:
        if isinstance(entity, TableEntry):
            entry = encode(entity) if encode is not None else table_entry_bytes(p4info(), entity)
            body = delimited(_K_ENTITY_TABLE_ENTRY, entry)
        else:
            body = entity.SerializeToString()
        parts.append(delimited(_K_REQUEST_UPDATES, _UPDATE_TYPES[UpdateType(kind)] + delimited(_K_UPDATE_ENTITY, body)))
    # atomicity CONTINUE_ON_ERROR is 0, proto3's default: not on the wire
    return p4runtime_pb2.WriteRequest.FromString(b"".join(parts))


# fields of p4runtime.proto: WriteRequest (device_id, election_id, updates), Update (type, entity), Entity's
# table_entry; an Update's type field whole (key and value) per type
_REQUEST_DEVICE_ID, _REQUEST_ELECTION_ID = 1, 3
_K_REQUEST_UPDATES, _K_UPDATE_ENTITY = protowire.key(4, protowire.LEN), protowire.key(2, protowire.LEN)
_K_ENTITY_TABLE_ENTRY = protowire.key(2, protowire.LEN)
_UPDATE_TYPES = {t: protowire.varint_field(1, t) for t in UpdateType}


ENCODED_MEMO = 65_536     # entries whose protos a client keeps (then it starts over)


class EncodedEntries:
    """Wire bytes of the TableEntry objects written before, by identity (each kept alive here, so its id is
    not reused). The controller writes the same few route entries of each MH again and again (Programmer
    memoizes them), and encoding by P4Info names is most of a Write's cost on the controller's side.
    TableEntry objects are never changed after they are made (nothing in the package assigns to one)."""

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[TableEntry, bytes]] = {}
        self._p4info: P4Info | None = None

    def encode(self, p4info: P4Info, entry: TableEntry) -> bytes:
        if p4info is not self._p4info or len(self._encoded) >= ENCODED_MEMO:
            self._encoded, self._p4info = {}, p4info        # another pipeline: other ids
        hit = self._encoded.get(id(entry))
        if hit is not None:
            return hit[1]
        data = table_entry_bytes(p4info, entry)
        self._encoded[id(entry)] = (entry, data)
        return data


def default_election_id() -> tuple[int, int]:
    """A fresh (high, low) election id that outranks every id drawn earlier on this host (see module doc)."""
    with _election_lock:
        seq = next(_election_counter)
        return time.time_ns() // 1_000_000, (os.getpid() << 20 | seq & 0xFFFFF) & (2**64 - 1)


def pipeline_cookie(p4info: bytes, device_config: bytes) -> int:
    """The 64-bit cookie stored with a pipeline: identifies the exact program a switch runs."""
    return int.from_bytes(hashlib.sha256(p4info + device_config).digest()[:8], "big")


@dataclass(frozen=True)
class ClientTls:
    """TLS with mutual authentication: the CA the switch's certificate must chain to, our certificate and
    key (PEM), and the name the switch's certificate must carry (checked whatever the address)."""

    ca: bytes
    cert: bytes
    key: bytes
    server_name: str


class P4RuntimeClient:
    """Connect, arbitrate, push a pipeline, read/write entities by name, exchange packets.

    Every RPC has a deadline (`timeout`, seconds); every failure the switch
    reports is a P4RuntimeError. Use as a context manager or call `close()`.
    """

    def __init__(self, address: str, device_id: int = 0, election_id: tuple[int, int] | None = None, *,
                 timeout: float = 10.0, p4info: P4Info | None = None, packet_in_capacity: int = 10_000,
                 tls: ClientTls | None = None) -> None:
        election_id = default_election_id() if election_id is None else election_id
        if len(election_id) != 2 or not all(isinstance(v, int) and 0 <= v < 2**64 for v in election_id):
            raise ValueError(f"election_id must be (high, low) unsigned 64-bit ints, got {election_id!r}")
        if election_id == (0, 0):
            raise ValueError("election_id (0, 0) is reserved (it means 'no election id')")
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.timeout = timeout
        self.p4info = p4info
        self._packet_out_headers: dict[tuple[tuple[str, Any], ...], bytes] = {}
        self._packet_out_info: P4Info | None = None     # the P4Info those headers were encoded with
        self._encoded = EncodedEntries()
        options = [("grpc.max_send_message_length", _MAX_MESSAGE), ("grpc.max_receive_message_length", _MAX_MESSAGE)]
        if tls is None:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            creds = grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key,
                                                 certificate_chain=tls.cert)
            self._channel = grpc.secure_channel(address, creds,
                                                options=options + [("grpc.ssl_target_name_override", tls.server_name)])
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise P4RuntimeError("connect", grpc.StatusCode.UNAVAILABLE,
                                 f"no gRPC server answered at {address} within {timeout} s") from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self.stream = StreamChannel(self._stub, device_id, election_id, packet_in_capacity)
        try:
            self.stream.arbitrate(timeout)
        except P4RuntimeError:
            self.close()
            raise

    def __enter__(self) -> "P4RuntimeClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_primary(self) -> bool:
        """Whether this client is the primary (may write); follows later arbitration updates."""
        return self.stream.is_primary

    @property
    def stream_alive(self) -> bool:
        """False once the stream ended without close(): the switch died, restarted or dropped us."""
        return self.stream.alive

    def close(self) -> None:
        """End the stream and the channel; safe to call twice."""
        if getattr(self, "stream", None) is not None:
            self.stream.close()
        self._channel.close()

    def _rpc(self, operation: str, method: Any, request: Any, timeout: float | None) -> Any:
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            raise P4RuntimeError.from_rpc(operation, exc) from None

    def need_p4info(self) -> P4Info:
        """The pipeline's P4Info; an error saying how to get one if the client has none yet."""
        if self.p4info is None:
            raise P4InfoError("no P4Info: call set_pipeline() or fetch_pipeline() first, or pass p4info=")
        return self.p4info

    # -- pipeline -----------------------------------------------------------------------------

    def set_pipeline(self, p4info_path: str | Path, device_config_path: str | Path, *,
                     timeout: float = 60.0) -> int:
        """Push P4Info + device config (BMv2 JSON) with VERIFY_AND_COMMIT; returns the pipeline cookie.

        On BMv2 this replaces the program and resets all its state (tables,
        registers, counters), even when the program is the same.
        """
        p4info = P4Info.load(p4info_path)
        try:
            config = Path(device_config_path).read_bytes()
        except OSError as exc:
            raise FileNotFoundError(f"cannot read device config {device_config_path}: {exc.strerror}") from exc
        if Path(device_config_path).suffix == ".json":
            # BMv2 rejects a malformed JSON but is then left unable to hold any table entry or
            # pipeline until restarted (PI keeps the half-done update), so check it before sending.
            try:
                json.loads(config)
            except ValueError as exc:
                raise ValueError(f"device config {device_config_path} is not valid JSON: {exc}") from None
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.election_id.high, request.election_id.low = self.election_id
        request.config.p4info.CopyFrom(p4info.proto)
        request.config.p4_device_config = config
        cookie = pipeline_cookie(p4info.proto.SerializeToString(deterministic=True), config)
        request.config.cookie.cookie = cookie
        self._rpc("SetForwardingPipelineConfig", self._stub.SetForwardingPipelineConfig, request, timeout)
        self.p4info = p4info
        return cookie

    def fetch_pipeline(self) -> int | None:
        """Load the P4Info the switch runs into this client; return its cookie (None: no pipeline yet)."""
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            reply = self._rpc("GetForwardingPipelineConfig", self._stub.GetForwardingPipelineConfig, request, None)
        except P4RuntimeError as exc:
            if exc.code == grpc.StatusCode.FAILED_PRECONDITION:  # BMv2: no pipeline pushed yet
                return None
            raise
        if not reply.config.HasField("p4info"):
            return None
        self.p4info = P4Info(reply.config.p4info)
        return reply.config.cookie.cookie if reply.config.HasField("cookie") else 0

    # -- writes -------------------------------------------------------------------------------

    def write(self, updates: Iterable[tuple[UpdateType, Entity]], *, timeout: float | None = None) -> None:
        """Send one Write batch and wait for the answer on this thread (gRPC's blocking call: the answer wakes
        this thread itself, where a future's wakes gRPC's channel thread first, which then wakes the waiter);
        P4RuntimeError.updates says which updates failed (the rest applied)."""
        request = self._write_request(updates)
        if request.updates:
            self._rpc("Write", self._stub.Write, request, timeout)

    def write_begin(self, updates: Iterable[tuple[UpdateType, Entity]], *,
                    timeout: float | None = None) -> "PendingWrite":
        """Send one Write batch without waiting: Writes to several switches then run at once."""
        request = self._write_request(updates)
        if not request.updates:
            return PendingWrite(None)
        return PendingWrite(self._stub.Write.future(request, timeout=self.timeout if timeout is None else timeout))

    def _write_request(self, updates: Iterable[tuple[UpdateType, Entity]]) -> p4runtime_pb2.WriteRequest:
        return write_request(self.need_p4info, self.device_id, self.election_id, updates,
                             lambda e: self._encoded.encode(self.need_p4info(), e))

    def insert(self, entries: TableEntry | Sequence[TableEntry]) -> None:
        self.write((UpdateType.INSERT, e) for e in _as_list(entries))

    def modify(self, entries: TableEntry | Sequence[TableEntry]) -> None:
        self.write((UpdateType.MODIFY, e) for e in _as_list(entries))

    def delete(self, entries: TableEntry | Sequence[TableEntry]) -> None:
        self.write((UpdateType.DELETE, e) for e in _as_list(entries))

    def set_default(self, table: str, action: str, **params: Any) -> None:
        """Set `table`'s default action (a MODIFY of its default entry)."""
        self.modify(TableEntry(table, action=action, params=params, is_default=True))

    def write_register(self, name: str, index: int, value: int) -> None:
        entity = p4runtime_pb2.Entity(register_entry=register_entry(self.need_p4info(), name, index, value))
        self.write([(UpdateType.MODIFY, entity)])

    def write_counter(self, name: str, index: int, value: CounterValue = CounterValue(0, 0)) -> None:
        """Set one counter cell (default: reset it to zero)."""
        entity = p4runtime_pb2.Entity(counter_entry=counter_entry(self.need_p4info(), name, index, value))
        self.write([(UpdateType.MODIFY, entity)])

    def write_meters(self, name: str, cells: Sequence[tuple[int, int, int]]) -> None:
        """Configure meter cells (index, rate per second, burst) in one Write."""
        info = self.need_p4info()
        self.write([(UpdateType.MODIFY, p4runtime_pb2.Entity(meter_entry=meter_entry(info, name, i, rate, burst)))
                    for i, rate, burst in cells])

    # -- reads --------------------------------------------------------------------------------

    def read(self, entities: Iterable[p4runtime_pb2.Entity], *,
             timeout: float | None = None) -> list[p4runtime_pb2.Entity]:
        """One Read RPC for raw entities; every entity of every response, in order."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=list(entities))
        try:
            return [e for reply in self._stub.Read(request, timeout=self.timeout if timeout is None else timeout)
                    for e in reply.entities]
        except grpc.RpcError as exc:
            raise P4RuntimeError.from_rpc("Read", exc) from None

    def read_table(self, table: str | None = None) -> list[TableEntry]:
        """Every (non-default) entry of `table`, or of all tables if None, decoded to names and ints."""
        p4info = self.need_p4info()
        table_id = p4info.table(table).preamble.id if table is not None else 0
        entity = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=table_id))
        return [decode_table_entry(p4info, e.table_entry) for e in self.read([entity])]

    def read_default(self, table: str) -> TableEntry:
        """The default entry of `table` (`action` None if the switch reports none)."""
        p4info = self.need_p4info()
        request = p4runtime_pb2.TableEntry(table_id=p4info.table(table).preamble.id, is_default_action=True)
        entries = [decode_table_entry(p4info, e.table_entry)
                   for e in self.read([p4runtime_pb2.Entity(table_entry=request)])]
        if len(entries) != 1:
            raise P4RuntimeError("Read", grpc.StatusCode.INTERNAL,
                                 f"expected one default entry of {table}, the switch sent {len(entries)}")
        return entries[0]

    def clear_table(self, table: str | None = None) -> int:
        """Delete every entry of `table` (or of all tables); returns how many were deleted."""
        entries = self.read_table(table)
        self.delete(entries)
        return len(entries)

    def read_register(self, name: str, index: int | None = None) -> int | dict[int, int]:
        """One cell's value, or {index: value} of every cell if `index` is None."""
        entity = p4runtime_pb2.Entity(register_entry=register_entry(self.need_p4info(), name, index))
        cells = {e.register_entry.index.index: decode_int(e.register_entry.data.bitstring)
                 for e in self.read([entity])}
        return cells[index] if index is not None else cells

    @overload
    def read_counter(self, name: str, index: int) -> CounterValue: ...

    @overload
    def read_counter(self, name: str, index: None = None) -> dict[int, CounterValue]: ...

    def read_counter(self, name: str, index: int | None = None) -> CounterValue | dict[int, CounterValue]:
        """One indirect counter cell, or {index: CounterValue} of every cell if `index` is None."""
        entity = p4runtime_pb2.Entity(counter_entry=counter_entry(self.need_p4info(), name, index))
        cells = {e.counter_entry.index.index: CounterValue(e.counter_entry.data.packet_count,
                                                           e.counter_entry.data.byte_count)
                 for e in self.read([entity])}
        return cells[index] if index is not None else cells

    # -- packet I/O ---------------------------------------------------------------------------

    def packet_out(self, payload: bytes, **metadata: Any) -> None:
        """Send `payload` to the switch's CPU port with `packet_out` header fields given by name."""
        info = self.need_p4info()
        if self._packet_out_info is not info:
            self._packet_out_headers, self._packet_out_info = {}, info
        self.stream.send(packet_out_message(info, payload, metadata, self._packet_out_headers))

    def packet_in(self, timeout: float = 1.0) -> PacketIn | None:
        """The oldest unread packet-in (waiting up to `timeout` s), decoded; None if none arrived."""
        proto = self.stream.packet_in(timeout)
        return None if proto is None else decode_packet_in(self.need_p4info(), proto)


def packet_out_message(p4info: P4Info, payload: bytes, metadata: dict[str, Any],
                       headers: dict[tuple[tuple[str, Any], ...], bytes]) -> p4runtime_pb2.StreamMessageRequest:
    """The StreamMessageRequest carrying one packet-out, equal to one built with `encode_packet_out`.

    A buffer flush sends thousands a second with a handful of distinct headers, so each header is encoded
    once (and checked) by `encode_packet_out` and kept in `headers` as bytes; the message is then the payload
    and those bytes in protobuf's wire format, parsed by upb: ~8 us instead of ~60 us a packet."""
    key = tuple(sorted(metadata.items()))
    header = headers.get(key)
    if header is None:
        header = headers[key] = encode_packet_out(p4info, b"", metadata).SerializeToString()
    body = protowire.bytes_field(_PACKET_OUT_PAYLOAD, bytes(payload)) + header
    return p4runtime_pb2.StreamMessageRequest.FromString(protowire.bytes_field(_STREAM_PACKET, body))


_STREAM_PACKET, _PACKET_OUT_PAYLOAD = 2, 1     # StreamMessageRequest.packet, PacketOut.payload


class PendingWrite:
    """A Write on its way; `result()` waits for the switch's answer (P4RuntimeError as `write` raises it)."""

    def __init__(self, future: Any) -> None:
        self._future = future

    def result(self) -> None:
        if self._future is None:
            return
        try:
            self._future.result()
        except grpc.RpcError as exc:
            raise P4RuntimeError.from_rpc("Write", exc) from None


class CompletedWrite:
    """A Write made at once with the blocking call (`P4RuntimeClient.write`), answering like a PendingWrite (one
    switch: a future's answer would wait for gRPC's channel thread, then for its waiter, to be scheduled)."""

    def __init__(self, client: Any, updates: list) -> None:
        self._error: P4RuntimeError | None = None
        try:
            client.write(updates)
        except P4RuntimeError as exc:
            self._error = exc

    def result(self) -> None:
        if self._error is not None:
            raise self._error


def _as_list(entries: TableEntry | Sequence[TableEntry]) -> list[TableEntry]:
    return [entries] if isinstance(entries, TableEntry) else list(entries)
