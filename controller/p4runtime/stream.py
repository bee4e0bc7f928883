"""The P4Runtime StreamChannel: arbitration, packet-in queue, stream errors, liveness.

gRPC's bidirectional stream is a blocking iterator on both sides, so one
receiver thread drains it: arbitration updates set the primary flag (another
client may take over or hand back mastership at any time), packet-ins go to
a bounded queue (oldest dropped and counted when nobody reads) or, once a
listener is set (`listen`), straight to it on the receiver thread; StreamError
messages (e.g. a rejected packet-out) are kept for the caller. When the
stream ends without `close()` — the switch died or restarted — `alive`
turns False and `failure` says why, which is how a controller notices.
"""
from __future__ import annotations

import collections
import logging
import queue
import threading
from typing import Callable, Iterator

import grpc

from ._protos import code_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from .errors import P4RuntimeError

log = logging.getLogger(__name__)
_END = object()


class StreamChannel:
    """One open StreamChannel to one device."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub, device_id: int,
                 election_id: tuple[int, int], packet_in_capacity: int = 10_000) -> None:
        self.device_id = device_id
        self.election_id = election_id
        self.is_primary = False
        self.arbitration_status = ""
        self.failure: P4RuntimeError | None = None
        self.errors: collections.deque[p4runtime_pb2.StreamError] = collections.deque(maxlen=100)
        self.packet_ins_dropped = 0
        self._packets: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue(maxsize=packet_in_capacity)
        self._listener: Callable[[p4runtime_pb2.PacketIn], None] | None = None
        self._listening = threading.Lock()      # held while packet-ins are queued, drained or handed on
        self._outgoing: queue.Queue[object] = queue.Queue()
        self._arbitrated = threading.Event()
        self._ended = threading.Event()
        self._closing = False
        self._call = stub.StreamChannel(self._requests())
        self._thread = threading.Thread(target=self._receive, name=f"p4rt-stream-{device_id}", daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        return not self._ended.is_set()

    def wait_ended(self, timeout: float) -> bool:
        """Wait up to `timeout` s for the stream to end; True once it has."""
        return self._ended.wait(timeout)

    def _requests(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._outgoing.get()
            if not isinstance(item, p4runtime_pb2.StreamMessageRequest):   # _END
                return
            yield item

    def _receive(self) -> None:
        try:
            for msg in self._call:
                self._dispatch(msg)
        except grpc.RpcError as exc:
            if not self._closing:
                self.failure = P4RuntimeError.from_rpc("StreamChannel", exc)
                log.warning("device %d: stream ended: %s", self.device_id, self.failure)
        else:
            if not self._closing:
                self.failure = P4RuntimeError("StreamChannel", grpc.StatusCode.UNAVAILABLE,
                                              "the switch closed the stream")
        finally:
            self.is_primary = False
            self._ended.set()
            self._arbitrated.set()  # wake an arbitrate() waiting for an answer that will not come

    def _dispatch(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        kind = msg.WhichOneof("update")
        if kind == "arbitration":
            status = msg.arbitration.status
            self.is_primary = status.code == code_pb2.OK
            self.arbitration_status = f"{code_pb2.Code.Name(status.code)}: {status.message}"
            self._arbitrated.set()
        elif kind == "packet":
            with self._listening:
                if self._listener is not None:
                    self._listener(msg.packet)
                    return
                if self._packets.full():
                    self._packets.get_nowait()
                    self.packet_ins_dropped += 1
                self._packets.put_nowait(msg.packet)
        elif kind == "error":
            self.errors.append(msg.error)
            log.warning("device %d: stream error %s: %s", self.device_id,
                        code_pb2.Code.Name(msg.error.canonical_code), msg.error.message)
        else:
            log.debug("device %d: ignoring stream message %s", self.device_id, kind)

    def arbitrate(self, timeout: float) -> bool:
        """Send our election id and wait for the answer; True if this client is now primary."""
        self._arbitrated.clear()
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.high, request.arbitration.election_id.low = self.election_id
        self.send(request)
        if not self._arbitrated.wait(timeout):
            raise P4RuntimeError("arbitration", grpc.StatusCode.DEADLINE_EXCEEDED,
                                 f"no arbitration answer from device {self.device_id} within {timeout} s")
        if self.failure is not None:
            raise self.failure
        return self.is_primary

    def send(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        if not self.alive:
            raise self.failure or P4RuntimeError("StreamChannel", grpc.StatusCode.CANCELLED, "stream is closed")
        self._outgoing.put(request)

    def listen(self, listener: Callable[[p4runtime_pb2.PacketIn], None]) -> None:
        """From now on hand every packet-in to `listener` on the receiver thread, in arrival order: those
        already queued first (here, on the caller's thread), then each as it arrives, without the queue and
        without a reader thread between the stream and the listener (one thread hand-off less per packet)."""
        with self._listening:
            while True:
                try:
                    listener(self._packets.get_nowait())
                except queue.Empty:
                    break
            self._listener = listener

    def packet_in(self, timeout: float) -> p4runtime_pb2.PacketIn | None:
        """The oldest unread packet-in, waiting up to `timeout` seconds; None if none came."""
        try:
            return self._packets.get(timeout=timeout)
        except queue.Empty:
            return None

    def close(self, timeout: float = 5.0) -> None:
        """End the stream (half-close, then cancel) and wait for the receiver thread."""
        self._closing = True
        self._outgoing.put(_END)
        self._call.cancel()
        self._thread.join(timeout)
