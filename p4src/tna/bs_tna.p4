/* P4Handoff base-station pipeline, TNA (Tofino-1 `tna`, Tofino-2 `t2na`).
 *
 * The TNA glue: the same target-independent ingress (include/ingress.p4:
 * BsIngress) and deparser (BsDeparser) as the v1model program p4src/v1model/bs.p4,
 * with Tofino's parsers (parser.p4), the AQM in egress (aqm.p4), the
 * traffic manager's strict-priority queues instead of v1model's dummy gate
 * and recirculation, and the same P4Info names for every entity the
 * controller uses (docs/tofino.md lists the differences).
 *
 * Build: make build-tofino (bf-p4c / p4c-barefoot, TNA_CPU_PORT defined).
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

/* Tofino ingress does not know the frame length: Validate leaves the
 * "datagram longer than the frame" check to the parser's partial-header
 * error (docs/tofino.md, "Semantic differences") */
#define BS_NO_FRAME_LEN

#include "../include/constants.p4"
#include "../include/headers.p4"
#include "../include/ingress.p4"
#include "../include/deparser.p4"
#include "types.p4"
#include "parser.p4"
#include "aqm.p4"

control TnaIngress(inout tna_headers_t hdr, inout tna_ingress_meta_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    BsIngress() bs_ingress;

    @name(".aqm_enqueued")
    Counter<bit<64>, bit<(PORT_CLASS_BITS)>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_enqueued;
    @name(".sanitised")
    Counter<bit<64>, bit<(PORT_BITS)>>(PORT_SLOTS, CounterType_t.PACKETS_AND_BYTES) sanitised;
    @name(".malformed")
    Counter<bit<64>, bit<(PORT_REASON_BITS)>>(PORT_REASON_SLOTS, CounterType_t.PACKETS_AND_BYTES) malformed;
    @name(".fwd_dropped")
    Counter<bit<64>, bit<(PORT_REASON_BITS)>>(PORT_REASON_SLOTS, CounterType_t.PACKETS_AND_BYTES) fwd_dropped;
    @name(".punted")
    Counter<bit<64>, bit<(PORT_REASON_BITS)>>(PORT_REASON_SLOTS, CounterType_t.PACKETS_AND_BYTES) punted;
    /* the punt budget: unsolicited punts per ingress port (docs/pipeline.md, "Punt budget"); configured by
     * the controller per port as a single-rate meter (committed = peak), red beyond it */
    @name(".punt_budget")
    Meter<bit<(PORT_BITS)>>(PORT_SLOTS, MeterType_t.PACKETS) punt_budget;

    /* to the controller with a packet_in header; a probe (telemetry = 1)
     * also carries the telemetry header, which egress completes */
    action to_cpu(bit<1> telemetry) {
        hdr.bs.packet_in.setValid();
        hdr.bs.packet_in.ingress_port = ig_intr_md.ingress_port;
        hdr.bs.packet_in.reason = meta.bs.punt_reason;
        hdr.bs.packet_in._pad = 0;
        ig_tm_md.ucast_egress_port = CPU_PORT_TNA;
        ig_tm_md.qid = QID_DATA;
        hdr.bridged.telemetry = telemetry;
        hdr.bridged.queue = TELEMETRY_QUEUE;
        hdr.bridged.avg_update = 0;
        hdr.bridged.red_on = 0;
        hdr.bridged.aqm_on = 0;
    }

    /* aqm_mode: AQM_MODE_* of the probed port, TELEMETRY_NO_AQM without AQM */
    action probe(bit<8> aqm_mode) {
        hdr.bs.telemetry.setValid();
        hdr.bs.telemetry.port = (bit<16>)meta.bs.egress_port;
        hdr.bs.telemetry.aqm_mode = aqm_mode;
        hdr.bs.telemetry._pad = 0;
        hdr.bridged.probe_port = meta.bs.egress_port;
    }

    action forward(QueueId_t qid, bit<1> avg_update, bit<1> red_on) {
        ig_tm_md.ucast_egress_port = meta.bs.egress_port;
        ig_tm_md.qid = qid;
        hdr.bridged.telemetry = 0;
        hdr.bridged.queue = qid[1:0];
        hdr.bridged.avg_update = avg_update;
        hdr.bridged.red_on = red_on;
        hdr.bridged.aqm_on = (bit<1>)meta.bs.aqm_on;
        hdr.bridged.cls = meta.bs.cls;
        hdr.bridged.aqm_profile = meta.bs.aqm_profile;
        hdr.bridged.qlimit = meta.bs.qlimit;
        hdr.bridged.dummy_th = meta.bs.dummy_th;
        hdr.bridged.min_th = meta.bs.min_th;
        hdr.bridged.max_th = meta.bs.max_th;
    }

    /* The packet's fate (drop, punt, forward) is decided without waiting
     * for the length checks: a malformed packet is dropped at the end
     * whatever was decided, and only the counters wait for the verdict.
     * On BMv2 (bs.p4) nothing runs for a malformed packet; the outcome,
     * packets out and counters, is the same.
     *
     * Flat, for Tofino-1 (no long branches): a block of tables under one
     * condition is laid out whole before the tables after it, so the
     * verdict and the counters are single tables, each under its own
     * condition (docs/tofino.md, "Resources"). */
    apply {
        meta.bs.ingress_port = ig_intr_md.ingress_port;
        hdr.bridged.setValid();
        /* the parser's verdict first (its error states, then its errors and
         * checksums); Validate keeps a verdict it finds */
        if (meta.bs.malformed_kind != 0) {
            /* an error state of the parser */
        } else if ((ig_prsr_md.parser_err & PARSER_ERROR_PARTIAL_HDR) != 0) {
            meta.bs.malformed_kind = MALFORMED_TRUNCATED;
        } else if (ig_prsr_md.parser_err != 0) {
            meta.bs.malformed_kind = MALFORMED_OTHER;
        } else if (meta.ipv4_csum_err || meta.inner_csum_err) {
            meta.bs.malformed_kind = MALFORMED_CHECKSUM;
        }
        bs_ingress.apply(hdr.bs, meta.bs);

        /* an unsolicited punt over its port's budget is dropped and counted in fwd_dropped, never in
         * punted. The colour is read directly by the fate and the counters below (no `drop` written from
         * it: that would be one more stage), and the drop reason is written beside the meter: it is read
         * only when the packet is dropped. The condition does not wait for `drop`: on a packet not from
         * the CPU, BsIngress never sets both a drop and a punt, and the CPU's packets are never metered
         * (a lookup of theirs that ends in a punt is dropped). bf-p4c 1.2.5.16, Tofino-1: 12 of 12
         * stages this way, 14 with a `drop` written from the colour and read by the fate */
        bit<8> punt_color = (bit<8>)MeterColor_t.GREEN;
        if (meta.bs.malformed_kind == 0 && ig_intr_md.ingress_port != CPU_PORT_TNA && meta.bs.punt_reason != 0
                && meta.bs.punt_reason != PUNT_REASON_TELEMETRY && meta.bs.punt_reason != PUNT_REASON_BUFFER) {
            punt_color = punt_budget.execute(ig_intr_md.ingress_port);
            meta.bs.drop_reason = FWD_DROP_PUNT_BUDGET;
        }
        bool over_budget = punt_color == (bit<8>)MeterColor_t.RED;

        if (meta.bs.malformed_kind != 0 || meta.bs.drop || over_budget) {
            ig_dprsr_md.drop_ctl = 1;
        } else if (meta.bs.punt_reason != 0) {
            if (meta.bs.punt_reason != PUNT_REASON_TELEMETRY) {
                to_cpu(0);
            } else {
                to_cpu(1);
                if (meta.bs.aqm_on) {
                    probe((bit<8>)meta.bs.aqm_mode);
                } else {
                    probe(TELEMETRY_NO_AQM);
                }
            }
        } else {
            /* the class's queue: dummies lowest, never averaged; M-RED's
             * priority data apart, neither averaged nor dropped early;
             * all other data averaged, dropped early under RED / M-RED */
            if (meta.bs.cls == AQM_CLASS_DUMMY) {
                forward(QID_DUMMY, 0, 0);
            } else if (meta.bs.aqm_mode == AQM_MODE_MRED && meta.bs.cls == AQM_CLASS_PRIO) {
                forward(QID_PRIO, 0, 0);
            } else if (meta.bs.aqm_mode == AQM_MODE_RED || meta.bs.aqm_mode == AQM_MODE_MRED) {
                forward(QID_DATA, 1, 1);
            } else {
                forward(QID_DATA, 1, 0);
            }
        }

        /* the counter alone: writing drop_ctl here too would order it after
         * the fate above, putting five counters in one stage (four ALUs) */
        if (meta.bs.malformed_kind != 0) {
            malformed.count(ig_intr_md.ingress_port ++ meta.bs.malformed_kind[REASON_BITS - 1:0]);
        }
        if (meta.bs.malformed_kind == 0 && meta.bs.sanitised) {
            sanitised.count(ig_intr_md.ingress_port);
        }
        if (meta.bs.malformed_kind == 0 && (meta.bs.drop || over_budget)) {
            fwd_dropped.count(ig_intr_md.ingress_port ++ meta.bs.drop_reason[REASON_BITS - 1:0]);
        }
        if (meta.bs.malformed_kind == 0 && !meta.bs.drop && !over_budget && meta.bs.punt_reason != 0) {
            punted.count(ig_intr_md.ingress_port ++ meta.bs.punt_reason[REASON_BITS - 1:0]);
        }
        if (meta.bs.malformed_kind == 0 && !meta.bs.drop && meta.bs.punt_reason == 0 && meta.bs.aqm_on) {
            aqm_enqueued.count(meta.bs.egress_port ++ meta.bs.cls);
        }
    }
}

control TnaIngressDeparser(packet_out pkt, inout tna_headers_t hdr, in tna_ingress_meta_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() inner_csum;
    Checksum() encap_csum;
    BsDeparser() bs_deparser;

    apply {
        if (hdr.bs.encap.isValid()) {
            hdr.bs.encap.hdr_checksum = encap_csum.update({
                hdr.bs.encap.version, hdr.bs.encap.ihl, hdr.bs.encap.dscp, hdr.bs.encap.ecn,
                hdr.bs.encap.total_len, hdr.bs.encap.identification, hdr.bs.encap.flags,
                hdr.bs.encap.frag_offset, hdr.bs.encap.ttl, hdr.bs.encap.protocol,
                hdr.bs.encap.src, hdr.bs.encap.dst });
        }
        if (hdr.bs.ipv4.isValid()) {
            hdr.bs.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.bs.ipv4.version, hdr.bs.ipv4.ihl, hdr.bs.ipv4.dscp, hdr.bs.ipv4.ecn,
                hdr.bs.ipv4.total_len, hdr.bs.ipv4.identification, hdr.bs.ipv4.flags,
                hdr.bs.ipv4.frag_offset, hdr.bs.ipv4.ttl, hdr.bs.ipv4.protocol,
                hdr.bs.ipv4.src, hdr.bs.ipv4.dst, hdr.bs.ipv4_opts.data });
        }
        if (hdr.bs.inner.isValid()) {
            hdr.bs.inner.hdr_checksum = inner_csum.update({
                hdr.bs.inner.version, hdr.bs.inner.ihl, hdr.bs.inner.dscp, hdr.bs.inner.ecn,
                hdr.bs.inner.total_len, hdr.bs.inner.identification, hdr.bs.inner.flags,
                hdr.bs.inner.frag_offset, hdr.bs.inner.ttl, hdr.bs.inner.protocol,
                hdr.bs.inner.src, hdr.bs.inner.dst, hdr.bs.inner_opts.data });
        }
        pkt.emit(hdr.bridged);
        bs_deparser.apply(pkt, hdr.bs);
    }
}

control TnaEgress(inout tna_headers_t hdr, inout tna_egress_meta_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    TnaAqmEgress() aqm;

    apply {
        if (hdr.bridged.telemetry == 1 || hdr.bridged.aqm_on == 1) {
            aqm.apply(hdr, meta, eg_intr_md, eg_dprsr_md);
        }
    }
}

control TnaEgressDeparser(packet_out pkt, inout tna_headers_t hdr, in tna_egress_meta_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.bs.packet_in);
        pkt.emit(hdr.bs.telemetry);
    }
}

Pipeline(TnaIngressParser(), TnaIngress(), TnaIngressDeparser(),
         TnaEgressParser(), TnaEgress(), TnaEgressDeparser()) pipe;

/* Tofino's action ALU adds within one container: keep the tunnel's length
 * (include/forwarding.p4) in one */
@pa_atomic("ingress", "bs_ingress_ipv4_forwarding_total_len")
@pa_atomic("ingress", "hdr.bs.encap.total_len")
/* metadata arrives zeroed, as BsIngress expects (simple_switch does this) */
@pa_auto_init_metadata
Switch(pipe) main;
