// Tiny v1model program for the P4Runtime client's tests: every entity kind
// the client handles (exact/ternary/range/lpm tables, default action, an
// indirect counter, a register, packet-in/out headers), nothing else.
#include <core.p4>
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> flags;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> reason;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
}

struct meta_t {
    bit<7> punt_reason;
}

parser MiniParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t std) {
    state start {
        transition select(std.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MiniVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MiniIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(16, CounterType.packets_and_bytes) rx_pkts;
    register<bit<32>>(16) rx_seen;

    action drop() { mark_to_drop(std); }
    action forward(bit<9> port) { std.egress_spec = port; }
    action punt(bit<7> reason) {
        std.egress_spec = CPU_PORT;
        meta.punt_reason = reason;
    }

    table port_fwd {
        key = { std.ingress_port: exact @name("ingress_port"); }
        actions = { forward; punt; drop; }
        default_action = drop();
        size = 64;
    }

    table dmac_acl {
        key = {
            hdr.ethernet.dst_addr: ternary @name("dst_addr");
            hdr.ethernet.ether_type: range @name("ether_type");
        }
        actions = { drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    table smac_lpm {
        key = { hdr.ethernet.src_addr: lpm @name("src_addr"); }
        actions = { forward; NoAction; }
        default_action = NoAction();
        size = 64;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            return;
        }
        bit<32> seen;
        @atomic {
            rx_seen.read(seen, (bit<32>)std.ingress_port);
            rx_seen.write((bit<32>)std.ingress_port, seen + 1);
        }
        rx_pkts.count((bit<32>)std.ingress_port);
        port_fwd.apply();
        smac_lpm.apply();
        dmac_acl.apply();
    }
}

control MiniEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply {
        if (std.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std.ingress_port;
            hdr.packet_in.reason = meta.punt_reason;
        }
    }
}

control MiniCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control MiniDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MiniParser(), MiniVerify(), MiniIngress(), MiniEgress(), MiniCompute(), MiniDeparser()) main;
