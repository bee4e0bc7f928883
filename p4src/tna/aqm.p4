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
    Counter<bit<64>, bit<(PORT_CLASS_BITS)>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_dequeued;
    @name(".aqm_red_dropped")
    Counter<bit<64>, bit<(PORT_CLASS_BITS)>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_red_dropped;
    @name(".aqm_overflow_dropped")
    Counter<bit<64>, bit<(PORT_CLASS_BITS)>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_overflow_dropped;
    @name(".aqm_dummy_dropped")
    Counter<bit<64>, bit<(PORT_CLASS_BITS)>>(PORT_CLASS_SLOTS, CounterType_t.PACKETS_AND_BYTES) aqm_dummy_dropped;
    @name(".priority_admitted")
    Counter<bit<64>, bit<(PORT_BITS)>>(PORT_SLOTS, CounterType_t.PACKETS_AND_BYTES) priority_admitted;

    Random<bit<16>>() random;      /* TNA_PROB_BITS (include/constants.p4) */
    Lpf<bit<32>, bit<32>>(PORT_SLOTS) avg_lpf;

    /* last seen depth per queue id, cells */
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_data;
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_prio;
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) depth_dummy;
    /* the filtered average (Q16.16 cells), kept for the non-updating
     * arrivals and for telemetry */
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) avg_occupancy;
    /* Floyd-Jacobson count + 1 (0 means count = -1), as on v1model */
    Register<bit<32>, bit<32>>(PORT_SLOTS, 0) red_count;

    /* One RegisterAction per register and packet kind: Tofino places every
     * action of a register in the register's stage, and mutually exclusive
     * branches with one action each do not all fit there. A depth register
     * takes the packet's depth if it is its queue and returns its value
     * (a probe, queue TELEMETRY_QUEUE, only reads). */
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_data) data_depth = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (hdr.bridged.queue == QID_DATA[1:0]) { v = meta.q; }
            rv = v;
        } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_prio) prio_depth = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (hdr.bridged.queue == QID_PRIO[1:0]) { v = meta.q; }
            rv = v;
        } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(depth_dummy) dummy_depth = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (hdr.bridged.queue == QID_DUMMY[1:0]) { v = meta.q; }
            rv = v;
        } };
    /* the Lpf's new average when the packet feeds it, else the last one */
    RegisterAction<bit<32>, bit<32>, bit<32>>(avg_occupancy) avg_state = {
        void apply(inout bit<32> v, out bit<32> rv) {
            if (hdr.bridged.avg_update == 1) { v = meta.avg_lpf; }
            rv = v;
        } };

    /* below min_th (restart = 0): count = -1; otherwise drop iff
     * rnd < p_a(count), i.e. count >= c*(rnd), with c* = 0 at or above
     * max_th (forced drop), and count = 0 after a drop (restart = 1).
     * Two ways of writing the count, not three: the stateful ALU has two
     * units per word. */
    RegisterAction<bit<32>, bit<32>, bit<1>>(red_count) count_update = {
        void apply(inout bit<32> v, out bit<1> drop) {
            if (meta.restart != 0 && v >= meta.min_count) {
                drop = 1;
            } else {
                drop = 0;
            }
            if (meta.restart == 0 || v >= meta.min_count) {
                v = meta.restart;
            } else {
                v = v + 1;
            }
        } };
    RegisterAction<bit<32>, bit<32>, bit<32>>(red_count) count_read = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };

    @name(".set_pb_level")
    action set_pb_level(bit<8> level) {
        meta.pb_level = level;
    }

    /* average in [min_th, max_th) -> p_b level (as on v1model) */
    @name(".red_pb")
    table red_pb {
        key = {
            hdr.bridged.aqm_profile : exact @name("profile");
            meta.avg_new[31:16]     : range @name("avg");
        }
        actions = { set_pb_level; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_RED_PB;
    }

    @name(".set_min_count")
    action set_min_count(bit<16> count) {
        meta.min_count = (bit<32>)count;
    }

    /* a miss means p_a >= 1 at any count: drop for sure (c* = 0) */
    @name(".gap_certain")
    action gap_certain() {
        meta.min_count = 0;
    }

    /* (p_b level, random number) -> the least count whose p_a threshold
     * exceeds it: red_pa's thresholds turned into random-number ranges, and
     * the ranges into prefixes (controller/tofino.py, gap_prefixes): one
     * 32-bit TCAM row per entry, where a 16-bit range costs up to seven rows
     * of twice the width (docs/tofino.md, "Resources") */
    @name(".red_pa_gap")
    table red_pa_gap {
        key = {
            hdr.bridged.aqm_profile : exact @name("profile");
            meta.pb_level           : exact @name("level");
            meta.rnd                : lpm @name("rnd");
        }
        actions = { set_min_count; @defaultonly gap_certain; }
        default_action = gap_certain();
        size = SIZE_TNA_RED_PA_GAP;  /* include/size.p4 */
    }

    /* Each step below is one action: Tofino runs an action's operations in
     * parallel (none may read what another writes), conditions compare a
     * field with a constant, so "x >= y" is the saturating difference
     * y |-| x == 0, computed one step earlier. Steps whose inputs bf-p4c
     * would otherwise copy into the next condition are keyless @hidden
     * tables (as in include/validate.p4). */
    action own_depth(bit<32> q, bit<32> q_fp) {
        meta.q = q;
        meta.q_fp = q_fp;
        meta.restart = 1;
    }

    action occupancy_data() {
        meta.occ_data = meta.depth_data + meta.depth_prio;
    }
    @hidden table step_occupancy_data {
        actions = { occupancy_data; }
        const default_action = occupancy_data();
    }

    /* a dummy's view: data + its own queue */
    action occupancy_total() {
        meta.occ_total = meta.occ_data + meta.depth_dummy;
    }
    @hidden table step_occupancy_total {
        actions = { occupancy_total; }
        const default_action = occupancy_total();
    }

    action thresholds() {
        meta.below_min = hdr.bridged.min_th |-| meta.avg_new;
        meta.below_max = hdr.bridged.max_th |-| meta.avg_new;
    }
    @hidden table step_thresholds {
        actions = { thresholds; }
        const default_action = thresholds();
    }

    action limits() {
        meta.below_qlimit = hdr.bridged.qlimit |-| meta.occ_data;
        meta.below_dummy_th = hdr.bridged.dummy_th |-| meta.occ_total;
    }
    @hidden table step_limits {
        actions = { limits; }
        const default_action = limits();
    }

    apply {
        if (hdr.bridged.telemetry == 1) {
            meta.port = (bit<32>)hdr.bridged.probe_port;
        } else {
            meta.port = (bit<32>)eg_intr_md.egress_port;
        }
        /* the depth registers and the average: a probe reads them (queue
         * and avg_update are 0 / TELEMETRY_QUEUE for it) */
        meta.idx = eg_intr_md.egress_port ++ hdr.bridged.cls;
        if (eg_intr_md.enq_qdepth > (bit<19>)DEPTH_MAX) {
            own_depth(DEPTH_MAX, DEPTH_MAX << AVG_FRAC_BITS);
        } else {
            own_depth((bit<32>)eg_intr_md.enq_qdepth, eg_intr_md.enq_qdepth[15:0] ++ 16w0);
        }
        meta.depth_data = data_depth.execute(meta.port);
        meta.depth_prio = prio_depth.execute(meta.port);
        meta.depth_dummy = dummy_depth.execute(meta.port);
        if (hdr.bridged.avg_update == 1) {
            meta.avg_lpf = avg_lpf.execute(meta.q_fp, meta.port);
        }
        meta.avg_new = avg_state.execute(meta.port);

        if (hdr.bridged.telemetry == 1) {
            hdr.bs.telemetry.occ_np = meta.depth_data;
            hdr.bs.telemetry.occ_prio = meta.depth_prio;
            hdr.bs.telemetry.occ_dummy = meta.depth_dummy;
            hdr.bs.telemetry.avg = meta.avg_new;
            hdr.bs.telemetry.red_count = count_read.execute(meta.port);
        } else {
            meta.rnd = random.get();
            meta.verdict = VERDICT_ADMIT;
            aqm_dequeued.count(meta.idx);
            step_occupancy_data.apply();
            step_thresholds.apply();
            if (hdr.bridged.queue == QID_DUMMY[1:0]) {
                step_occupancy_total.apply();
            }
            step_limits.apply();

            if (hdr.bridged.queue == QID_DUMMY[1:0]) {
                /* DSBP: dropped once the port's total depth reaches dummy_th */
                if (meta.below_dummy_th == 0) {
                    meta.verdict = VERDICT_DUMMY_DROP;
                }
            } else {
                if (hdr.bridged.red_on == 1) {
                    red_pb.apply();
                    if (meta.below_min != 0) {
                        meta.restart = 0;
                    } else if (meta.below_max == 0) {
                        meta.min_count = 0;
                    } else {
                        red_pa_gap.apply();
                    }
                    if (count_update.execute(meta.port) == 1) {
                        meta.verdict = VERDICT_RED_DROP;
                    }
                }
                if (meta.verdict == VERDICT_ADMIT && meta.below_qlimit == 0) {
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
