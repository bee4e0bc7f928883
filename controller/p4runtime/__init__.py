"""The project's one P4Runtime client: pipeline push, arbitration, entries by P4Info name, packet I/O.

    from p4handoff.controller.p4runtime import P4RuntimeClient, TableEntry

    with P4RuntimeClient("127.0.0.1:9559", device_id=0) as sw:
        sw.set_pipeline("build/bs.p4info.txtpb", "build/bs.json")
        sw.insert(TableEntry("ipv4_fwd", {"dst_addr": "10.0.1.0/24"}, "deliver", {"port": 1}))
        print(sw.read_counter("rx_pkts", 1))
"""
from .client import ClientTls, P4RuntimeClient, default_election_id
from .encoding import EncodingError, decode_int, encode_value
from .entities import CounterValue, PacketIn, TableEntry, UpdateType, normalize
from .errors import P4RuntimeError, UpdateError
from .p4info import P4Info, P4InfoError

__all__ = [
    "ClientTls", "CounterValue", "EncodingError", "P4Info", "P4InfoError", "P4RuntimeClient", "P4RuntimeError",
    "PacketIn", "TableEntry", "UpdateError", "UpdateType", "decode_int", "default_election_id",
    "encode_value", "normalize",
]
