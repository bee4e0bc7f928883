"""A P4Info built by hand (no compiler, no switch): every match kind, a default-only action, a register,
a counter and packet-in/out metadata with padding; shared by the client's and the codec's tests."""
from __future__ import annotations

from p4handoff.controller.p4runtime import P4Info
from p4handoff.controller.p4runtime._protos import p4info_pb2

MT = p4info_pb2.MatchField


def build_p4info() -> P4Info:
    p = p4info_pb2.P4Info()

    def preamble(obj, obj_id, name):
        obj.preamble.id, obj.preamble.name, obj.preamble.alias = obj_id, name, name.rsplit(".", 1)[-1]

    fwd = p.actions.add()
    preamble(fwd, 0x01000001, "Ingress.set_nexthop")
    fwd.params.add(id=1, name="port", bitwidth=9)
    fwd.params.add(id=2, name="dmac", bitwidth=48)
    drop = p.actions.add()
    preamble(drop, 0x01000002, "Ingress.drop")
    only_default = p.actions.add()
    preamble(only_default, 0x01000003, "Ingress.miss")

    lpm = p.tables.add()
    preamble(lpm, 0x02000001, "Ingress.fwd.ipv4_lpm")
    lpm.match_fields.add(id=1, name="hdr.ipv4.dst_addr", bitwidth=32, match_type=MT.LPM)
    lpm.action_refs.add(id=fwd.preamble.id)
    lpm.action_refs.add(id=drop.preamble.id)
    lpm.action_refs.add(id=only_default.preamble.id, scope=p4info_pb2.ActionRef.DEFAULT_ONLY)

    acl = p.tables.add()
    preamble(acl, 0x02000002, "Ingress.acl")
    acl.match_fields.add(id=1, name="hdr.ethernet.dst_addr", bitwidth=48, match_type=MT.TERNARY)
    acl.match_fields.add(id=2, name="hdr.ipv4.dscp", bitwidth=6, match_type=MT.EXACT)
    acl.match_fields.add(id=3, name="hdr.tcp.dst_port", bitwidth=16, match_type=MT.RANGE)
    acl.match_fields.add(id=4, name="meta.role", bitwidth=2, match_type=MT.OPTIONAL)
    acl.action_refs.add(id=drop.preamble.id, scope=p4info_pb2.ActionRef.TABLE_ONLY)

    reg = p.registers.add()
    preamble(reg, 0x03000001, "Ingress.occupancy")
    reg.type_spec.bitstring.bit.bitwidth = 20
    reg.size = 8
    ctr = p.counters.add()
    preamble(ctr, 0x04000001, "Ingress.rx")
    ctr.spec.unit = p4info_pb2.CounterSpec.BOTH
    ctr.size = 4

    pin = p.controller_packet_metadata.add()
    preamble(pin, 0x05000001, "packet_in")
    pin.metadata.add(id=1, name="ingress_port", bitwidth=9)
    pin.metadata.add(id=2, name="reason", bitwidth=7)
    pout = p.controller_packet_metadata.add()
    preamble(pout, 0x05000002, "packet_out")
    pout.metadata.add(id=1, name="egress_port", bitwidth=9)
    pout.metadata.add(id=2, name="priority", bitwidth=1)
    pout.metadata.add(id=3, name="_pad", bitwidth=6)
    pin.metadata.add(id=3, name="align", bitwidth=7, annotations=["@padding"])
    return P4Info(p)
