"""The project's one P4Runtime client: pipeline push, arbitration, entries by P4Info name, packet I/O.

    from controller.p4runtime import P4RuntimeClient, TableEntry

    with P4RuntimeClient("127.0.0.1:9559", device_id=0) as sw:
        sw.set_pipeline("build/bs.p4info.txtpb", "build/bs.json")
        sw.insert(TableEntry("ipv4_fwd", {"hdr.ipv4.dst_addr": "10.0.1.0/24"}, "deliver", {"port": 1}))
        print(sw.read_counter("rx_pkts", 1))
"""
import os

# The `p4runtime` wheel ships _pb2 modules generated for protobuf 3.x. The
# C++/upb backends of current protobuf refuse to load them ("Descriptors
# cannot be created directly"); the pure-Python backend accepts them. The
# backend is chosen once, when google.protobuf is first imported, so this must
# happen before any protobuf import below. setdefault keeps a caller's explicit
# choice; if protobuf was already imported with another backend, `_protos`
# raises an ImportError that says so.
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

from .client import P4RuntimeClient, default_election_id  # noqa: E402
from .encoding import EncodingError, decode_int, encode_value  # noqa: E402
from .entities import CounterValue, PacketIn, TableEntry, UpdateType, normalize  # noqa: E402
from .errors import P4RuntimeError, UpdateError  # noqa: E402
from .p4info import P4Info, P4InfoError  # noqa: E402

__all__ = [
    "CounterValue", "EncodingError", "P4Info", "P4InfoError", "P4RuntimeClient", "P4RuntimeError",
    "PacketIn", "TableEntry", "UpdateError", "UpdateType", "decode_int", "default_election_id",
    "encode_value", "normalize",
]
