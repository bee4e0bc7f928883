/* The benchmark's baseline: the least a v1model program can do to forward a
 * packet on simple_switch — parse Ethernet, one exact-match table on the
 * ingress port, deparse. bench/pipeline_pps.py measures bs.p4 against it
 * on the same BMv2 build. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct meta_t { }

parser MinParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MinVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MinIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action forward(bit<9> port) {
        sm.egress_spec = port;
    }

    action drop() {
        mark_to_drop(sm);
    }

    table port_fwd {
        key = { sm.ingress_port : exact @name("ingress_port"); }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }

    apply { port_fwd.apply(); }
}

control MinEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control MinCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MinDeparser(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); }
}

V1Switch(MinParser(), MinVerify(), MinIngress(), MinEgress(), MinCompute(), MinDeparser()) main;
