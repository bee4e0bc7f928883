/* P4Handoff base-station pipeline, v1model (BMv2 simple_switch_grpc).
 *
 * This file is the v1model glue: it maps standard_metadata to the
 * target-independent controls in include/ (parser, BsIngress, deparser)
 * and owns what is v1model specific: parser/checksum errors, drops,
 * punts to the CPU port, egress priority queues, recirculation, checksum
 * units and the stateful externs (v1model/state.p4).
 *
 * Run simple_switch_grpc with --cpu-port 255 (CPU_PORT) and
 * --priority-queues 2 (or more). docs/pipeline.md draws the pipeline.
 */
#include <core.p4>
#include <v1model.p4>
#ifdef BS_TESTGEN_DATA_PORTS
#include <testgen.p4>
#endif

#include "../include/constants.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/ingress.p4"
#include "../include/deparser.p4"
#include "state.p4"

/* simple_switch's instance_type of a recirculated packet */
const bit<32> BMV2_INSTANCE_TYPE_RECIRC = 4;

parser V1Parser(packet_in pkt, out headers_t hdr, inout local_meta_t meta,
                inout standard_metadata_t sm) {
    BsParser() bs_parser;

    state start {
#ifdef BS_TESTGEN_DATA_PORTS
        /* a precondition for one of make testgen's runs, never in a build:
         * inputs from data ports only, so P4Testgen's greedy search explores
         * their paths instead of the CPU port's (docs/testgen.md, "Several
         * runs"); it changes no path of such an input. P4Testgen's own
         * extern: v1model's assume() is BMv2's assert, a path of its own */
        testgen_assume(sm.ingress_port != CPU_PORT);
#endif
        bs_parser.apply(pkt, hdr, sm.ingress_port);
        transition select(hdr.ipv4.isValid(), hdr.ipv4_opts.isValid()) {
            (true, false): ipv4_plain;
            default: inner;
        }
    }

    state ipv4_plain {
        meta.ipv4_plain = true;
        transition inner;
    }

    state inner {
        transition select(hdr.inner.isValid(), hdr.inner_opts.isValid()) {
            (true, false): inner_plain;
            default: accept;
        }
    }

    state inner_plain {
        meta.inner_plain = true;
        transition accept;
    }
}

control V1VerifyChecksum(inout headers_t hdr, inout local_meta_t meta) {
    apply {
        verify_checksum(meta.ipv4_plain,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.ipv4_opts.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4_opts.data },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(meta.inner_plain,
            { hdr.inner.version, hdr.inner.ihl, hdr.inner.dscp, hdr.inner.ecn,
              hdr.inner.total_len, hdr.inner.identification, hdr.inner.flags,
              hdr.inner.frag_offset, hdr.inner.ttl, hdr.inner.protocol,
              hdr.inner.src, hdr.inner.dst },
            hdr.inner.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.inner_opts.isValid(),
            { hdr.inner.version, hdr.inner.ihl, hdr.inner.dscp, hdr.inner.ecn,
              hdr.inner.total_len, hdr.inner.identification, hdr.inner.flags,
              hdr.inner.frag_offset, hdr.inner.ttl, hdr.inner.protocol,
              hdr.inner.src, hdr.inner.dst, hdr.inner_opts.data },
            hdr.inner.hdr_checksum, HashAlgorithm.csum16);
    }
}

/* v1model's meter colours (BMv2) */
const bit<2> METER_GREEN = 0;
const bit<2> METER_RED = 2;

control V1Ingress(inout headers_t hdr, inout local_meta_t meta,
                  inout standard_metadata_t sm) {
    BsIngress() bs_ingress;
    V1AqmIngress() aqm_ingress;

    /* to the controller with a packet_in header; no AQM on the CPU port */
    action to_cpu(bit<32> reason_base) {
        punted.count(reason_base + (bit<32>)meta.punt_reason);
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = sm.ingress_port;
        hdr.packet_in.reason = meta.punt_reason;
        hdr.packet_in._pad = 0;
        sm.egress_spec = CPU_PORT;
        meta.aqm_on = false;
    }

    /* an unsolicited punt (not a diverted MH packet, not a telemetry answer) spends its port's budget */
    action spend_punt_budget(out bit<2> color) {
        punt_budget.execute_meter((bit<32>)sm.ingress_port, color);
    }

    /* dummies to the lowest queue (data is already QUEUE_PRIORITY_DATA) */
    action forward() {
        sm.egress_spec = meta.egress_port;
        sm.priority = meta.cls == AQM_CLASS_DUMMY ? QUEUE_PRIORITY_DUMMY : QUEUE_PRIORITY_DATA;
    }

    /* the per-packet preamble in one action (one BMv2 pipeline node) */
    action arrive(out bit<32> reason_base) {
        reason_base = (bit<32>)sm.ingress_port * REASON_STRIDE;
        meta.ingress_port = sm.ingress_port;
        meta.now_us = sm.ingress_global_timestamp;
        meta.frame_len = hdr.packet_out.isValid() ? sm.packet_length - PACKET_OUT_BYTES
                                                  : sm.packet_length;
        sm.priority = QUEUE_PRIORITY_DATA;
    }

    apply {
        bit<8> kind = 0;
        bit<32> reason_base;
        arrive(reason_base);

        if (sm.instance_type == BMV2_INSTANCE_TYPE_RECIRC) {
            /* a dummy held behind data: back to the tail of its queue; it
             * never left the occupancy count */
            sm.egress_spec = meta.recirc_port;
            sm.priority = QUEUE_PRIORITY_DUMMY;
            meta.aqm_on = true;
            meta.cls = AQM_CLASS_DUMMY;
        } else {
            if (sm.parser_error != error.NoError || sm.checksum_error == 1) {
                kind = MALFORMED_OTHER;
                if (sm.parser_error == error.PacketTooShort) {
                    kind = MALFORMED_TRUNCATED;
                } else if (sm.parser_error == error.Ipv4BadVersion) {
                    kind = MALFORMED_IPV4_VERSION;
                } else if (sm.parser_error == error.Ipv4BadIhl) {
                    kind = MALFORMED_IPV4_IHL;
                } else if (sm.parser_error == error.TcpBadDataOffset) {
                    kind = MALFORMED_TCP_OFFSET;
                } else if (sm.parser_error == error.NoError) {
                    kind = MALFORMED_CHECKSUM;
                }
            } else {
                bs_ingress.apply(hdr, meta);
                kind = meta.malformed_kind;
            }
            if (kind != 0) {
                malformed.count(reason_base + (bit<32>)kind);
                mark_to_drop(sm);
            } else {
                if (meta.sanitised) {
                    sanitised.count((bit<32>)sm.ingress_port);
                }
                if (meta.drop) {
                    fwd_dropped.count(reason_base + (bit<32>)meta.drop_reason);
                    mark_to_drop(sm);
                } else if (meta.punt_reason != 0 && meta.punt_reason != PUNT_REASON_TELEMETRY) {
                    bit<2> color = METER_GREEN;
                    if (meta.punt_reason != PUNT_REASON_BUFFER) {
                        spend_punt_budget(color);
                    }
                    if (color == METER_RED) {
                        fwd_dropped.count(reason_base + (bit<32>)FWD_DROP_PUNT_BUDGET);
                        mark_to_drop(sm);
                    } else {
                        to_cpu(reason_base);
                    }
                } else {
                    if (meta.punt_reason == 0) {
                        forward();
                    }
                    if (meta.punt_reason == PUNT_REASON_TELEMETRY || meta.aqm_on) {
                        /* admission (may drop), or the probe's register reads */
                        aqm_ingress.apply(hdr, meta, sm);
                    }
                    if (meta.punt_reason == PUNT_REASON_TELEMETRY) {
                        to_cpu(reason_base);
                    }
                }
            }
        }
    }
}

control V1Egress(inout headers_t hdr, inout local_meta_t meta,
                 inout standard_metadata_t sm) {
    V1AqmEgress() aqm_egress;

    apply {
        if (meta.aqm_on) {
            aqm_egress.apply(hdr, meta, sm);
        }
    }
}

control V1ComputeChecksum(inout headers_t hdr, inout local_meta_t meta) {
    apply {
        update_checksum(hdr.encap.isValid(),
            { hdr.encap.version, hdr.encap.ihl, hdr.encap.dscp, hdr.encap.ecn,
              hdr.encap.total_len, hdr.encap.identification, hdr.encap.flags,
              hdr.encap.frag_offset, hdr.encap.ttl, hdr.encap.protocol,
              hdr.encap.src, hdr.encap.dst },
            hdr.encap.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4_opts.data },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        update_checksum(hdr.inner.isValid(),
            { hdr.inner.version, hdr.inner.ihl, hdr.inner.dscp, hdr.inner.ecn,
              hdr.inner.total_len, hdr.inner.identification, hdr.inner.flags,
              hdr.inner.frag_offset, hdr.inner.ttl, hdr.inner.protocol,
              hdr.inner.src, hdr.inner.dst, hdr.inner_opts.data },
            hdr.inner.hdr_checksum, HashAlgorithm.csum16);
    }
}

V1Switch(V1Parser(), V1VerifyChecksum(), V1Ingress(), V1Egress(),
         V1ComputeChecksum(), BsDeparser()) main;
