/* TNA glue, part 3: the AQM in egress.
 *
 * Tofino-1 has no ingress view of queue occupancy, so the decision moves
 * to egress, where the traffic manager reports the depth of the packet's
 * queue at enqueue (eg_intr_md.enq_qdepth, 80-byte cells). A Tofino
 * register is one stateful ALU touched once per packet, so:
 *  - the average is TNA's Lpf (a time-decayed low-pass filter; it also
 *    subsumes v1model's idle-time decay: no aqm_idle table here);
 *  - the count is one RegisterAction per verdict kind; the early drop test
 *    `rnd < p_a(count)` becomes `count >= c*(rnd)` inside the stateful ALU,
 *    with c* from the range table red_pa_gap (same law, see
 *    controller/tofino.py);
 *  - each queue's last seen depth is one register per queue id, so a packet
 *    writes its own queue's and reads the others'.
 * Everything is indexed by egress port (PORT_SLOTS), counters by
 * port * AQM_CLASS_STRIDE + class as on v1model.
 */
#ifndef P4HANDOFF_TNA_AQM_P4
#define P4HANDOFF_TNA_AQM_P4

#include "types.p4"

const bit<32> DEPTH_MAX = 0xFFFF;   /* cells; keeps depth << 16 within 32 bits */

control TnaAqmEgress(inout tna_headers_t hdr, inout tna_egress_meta_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    @name(".aqm_dequeued")
    Counter<bit<64>, bit<11>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_dequeued;
    @name(".aqm_red_dropped")
    Counter<bit<64>, bit<11>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_red_dropped;
    @name(".aqm_overflow_dropped")
    Counter<bit<64>, bit<11>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_overflow_dropped;
    @name(".aqm_dummy_dropped")
    Counter<bit<64>, bit<11>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_dummy_dropped;
    @name(".priority_admitted")
    Counter<bit<64>, bit<9>>(PORT_SLOTS, CounterType_t.PACKETS_AND_BYTES) priority_admitted;

    Random<bit<24>>() random;
    Lpf<bit<32>, bit<32>>(PORT_SLOTS) avg_lpf;

    /* last seen depth per queue id, cells */
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_data;
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_prio;
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_dummy;
    /* the filtered average (Q16.16 cells), kept for the non-updating
     * arrivals and for telemetry */
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) avg_occupancy;
    /* Floyd-Jacobson count + 1 (0 means count = -1), as on v1model */
    Register<bit<16>, bit<32>>(PORT_SLOTS, 0) red_count;

    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_data) data_write = {
        void apply(inout bit<32> v) { v = meta.q; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_data) data_read = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_prio) prio_write = {
        void apply(inout bit<32> v) { v = meta.q; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_prio) prio_read = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_dummy) dummy_write = {
        void apply(inout bit<32> v) { v = meta.q; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_dummy) dummy_read = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(avg_occupancy) avg_write = {
        void apply(inout bit<32> v) { v = meta.avg_new; } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(avg_occupancy) avg_read = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };

    /* below min_th: count = -1 */
    RegisterAction<bit<16>, bit<32>, bit<1>>(red_count) count_reset = {
        void apply(inout bit<16> v, out bit<1> drop) { v = 0; drop = 0; } };
    /* at or above max_th: forced drop, count = 0 */
    RegisterAction<bit<16>, bit<32>, bit<1>>(red_count) count_force = {
        void apply(inout bit<16> v, out bit<1> drop) { v = 1; drop = 1; } };
    /* in between: drop iff rnd < p_a(count), i.e. count >= c*(rnd) */
    RegisterAction<bit<16>, bit<32>, bit<1>>(red_count) count_early = {
        void apply(inout bit<16> v, out bit<1> drop) {
            if (v >= meta.min_count) {
                v = 1;
                drop = 1;
            } else {
                v = v + 1;
                drop = 0;
            }
        } };
    RegisterAction<bit<16>, bit<32>, bit<16>>(red_count) count_read = {
        void apply(inout bit<16> v, out bit<16> rv) { rv = v; } };

    @name(".set_pb_level")
    action set_pb_level(bit<8> level) {
        meta.pb_level = level;
    }

    /* average in [min_th, max_th) -> p_b level (as on v1model) */
    @name(".red_pb")
    table red_pb {
        key = {
            hdr.bridged.aqm_profile : exact @name("profile");
            meta.avg_new            : range @name("avg");
        }
        actions = { set_pb_level; @defaultonly NoAction; }
        default_action = NoAction();
        size = 2048;
    }

    @name(".set_min_count")
    action set_min_count(bit<16> count) {
        meta.min_count = count;
    }

    /* a miss means p_a >= 1 at any count: drop for sure */
    @name(".gap_certain")
    action gap_certain() {
        meta.min_count = 0;
    }

    /* (p_b level, random number) -> the least count whose p_a threshold
     * exceeds it: red_pa's thresholds turned into ranges */
    @name(".red_pa_gap")
    table red_pa_gap {
        key = {
            hdr.bridged.aqm_profile : exact @name("profile");
            meta.pb_level           : exact @name("level");
            meta.rnd                : range @name("rnd");
        }
        actions = { set_min_count; @defaultonly gap_certain; }
        default_action = gap_certain();
        size = 4096;
    }

    apply {
        if (hdr.bridged.telemetry == 1) {
            meta.port = (bit<32>)hdr.bridged.probe_port;
            hdr.bs.telemetry.occ_np = data_read.execute(meta.port);
            hdr.bs.telemetry.occ_prio = prio_read.execute(meta.port);
            hdr.bs.telemetry.occ_dummy = dummy_read.execute(meta.port);
            hdr.bs.telemetry.avg = avg_read.execute(meta.port);
            hdr.bs.telemetry.red_count = (bit<32>)count_read.execute(meta.port);
        } else {
            meta.port = (bit<32>)eg_intr_md.egress_port;
            meta.idx = eg_intr_md.egress_port ++ hdr.bridged.cls;
            meta.q = (bit<32>)eg_intr_md.enq_qdepth;
            if (meta.q > DEPTH_MAX) {
                meta.q = DEPTH_MAX;
            }
            meta.rnd = random.get();
            meta.verdict = VERDICT_ADMIT;
            aqm_dequeued.count(meta.idx);

            /* occupancies: own queue written, the others read */
            if (hdr.bridged.cls == AQM_CLASS_DUMMY) {
                dummy_write.execute(meta.port);
                meta.occ_data = data_read.execute(meta.port) + prio_read.execute(meta.port);
                meta.occ_dummy = meta.q;
            } else if (hdr.bridged.aqm_mode == AQM_MODE_MRED && hdr.bridged.cls == AQM_CLASS_PRIO) {
                prio_write.execute(meta.port);
                meta.occ_data = data_read.execute(meta.port) + meta.q;
            } else {
                data_write.execute(meta.port);
                meta.occ_data = prio_read.execute(meta.port) + meta.q;
            }

            if (hdr.bridged.cls == AQM_CLASS_DUMMY) {
                /* DSBP: dropped once the port's total depth reaches dummy_th */
                if (meta.occ_data + meta.occ_dummy >= hdr.bridged.dummy_th) {
                    meta.verdict = VERDICT_DUMMY_DROP;
                }
            } else {
                /* the average: every data arrival (RED, drop-tail), non-priority
                 * only (M-RED), i.e. always the packet's own queue */
                if (hdr.bridged.aqm_mode != AQM_MODE_MRED || hdr.bridged.cls == AQM_CLASS_NP) {
                    /* bf-p4c wants a plain PHV field in: filter cells, scale after */
                    meta.avg_new = avg_lpf.execute(meta.q, meta.port) << AVG_FRAC_BITS;
                    avg_write.execute(meta.port);
                } else {
                    meta.avg_new = avg_read.execute(meta.port);
                }
                if (hdr.bridged.aqm_mode == AQM_MODE_RED
                        || (hdr.bridged.aqm_mode == AQM_MODE_MRED && hdr.bridged.cls == AQM_CLASS_NP)) {
                    bit<1> drop;
                    if (meta.avg_new < hdr.bridged.min_th) {
                        drop = count_reset.execute(meta.port);
                    } else if (meta.avg_new >= hdr.bridged.max_th) {
                        drop = count_force.execute(meta.port);
                    } else {
                        red_pb.apply();
                        red_pa_gap.apply();
                        drop = count_early.execute(meta.port);
                    }
                    if (drop == 1) {
                        meta.verdict = VERDICT_RED_DROP;
                    }
                }
                if (meta.verdict == VERDICT_ADMIT && meta.occ_data >= hdr.bridged.qlimit) {
                    meta.verdict = VERDICT_OVERFLOW_DROP;
                }
            }

            if (meta.verdict == VERDICT_ADMIT) {
                if (hdr.bridged.cls == AQM_CLASS_PRIO) {
                    priority_admitted.count(eg_intr_md.egress_port);
                }
            } else {
                eg_dprsr_md.drop_ctl = 1;
                if (meta.verdict == VERDICT_RED_DROP) {
                    aqm_red_dropped.count(meta.idx);
                } else if (meta.verdict == VERDICT_OVERFLOW_DROP) {
                    aqm_overflow_dropped.count(meta.idx);
                } else {
                    aqm_dummy_dropped.count(meta.idx);
                }
            }
        }
    }
}

#endif
