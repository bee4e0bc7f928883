/* v1model glue, part 2: the AQM decision, drop-tail, RED (Floyd & Jacobson
 * 1993) or M-RED (IPF), on the egress port's aqm_port configuration
 * (include/aqm.p4) and a state snapshot (docs/aqm.md).
 *
 * Target-independent arithmetic (additions, comparisons and shifts by
 * constants only), but not a Tofino program as it stands: the glue reads
 * the count, looks red_pa up with it and writes the new count, two
 * accesses of one register that a Tofino stateful ALU cannot make, and
 * Tofino-1 ingress cannot see queue occupancy. The TNA port applies
 * AqmConfig only and decides in egress (p4src/tna/aqm.p4, docs/tofino.md,
 * "The AQM in egress"). w_q = 2^-wq_shift is applied
 * as a chain of constant shifts selected by the bits of wq_shift; the
 * idle-time decay (1 - w_q)^m is a Q0.12 factor from a range table,
 * applied by shift-and-add; p_b comes from a range table on the average
 * and p_a from an exact table on (p_b level, count), both filled by
 * controller/aqm_tables.py, and is compared with a uniform random number.
 *
 * The glue (state.p4) reads the state snapshot (occupancies, avg, count,
 * idle time, random number) into meta, applies AqmDecide, then writes the
 * state back and admits or drops according to meta.verdict.
 */
#ifndef P4HANDOFF_V1MODEL_AQM_P4
#define P4HANDOFF_V1MODEL_AQM_P4

#include "../include/headers.p4"

control AqmDecide(inout local_meta_t meta) {
    @name(".set_decay")
    action set_decay(bit<13> factor) {
        meta.decay = factor;
    }

    /* idle time (us) -> (1 - w_q)^m, m = idle / mean packet time */
    @name(".aqm_idle")
    table aqm_idle {
        key = {
            meta.aqm_profile : exact @name("profile");
            meta.idle_us     : range @name("idle_us");
        }
        actions = { set_decay; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_V1MODEL_AQM_IDLE;
    }

    @name(".set_pb_level")
    action set_pb_level(bit<8> level) {
        meta.pb_level = level;
    }

    /* average in [min_th, max_th) -> p_b level */
    @name(".red_pb")
    table red_pb {
        key = {
            meta.aqm_profile : exact @name("profile");
            meta.avg_new     : range @name("avg");
        }
        actions = { set_pb_level; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_RED_PB;
    }

    @name(".set_pa")
    action set_pa(bit<32> threshold) {
        meta.pa_thr = threshold;
    }

    /* a miss means count * p_b >= 1: drop for sure */
    @name(".pa_certain")
    action pa_certain() {
        meta.pa_thr = PROB_ONE;
    }

    /* (p_b level, count) -> p_a = p_b / (1 - count * p_b), as a threshold */
    @name(".red_pa")
    table red_pa {
        key = {
            meta.aqm_profile : exact @name("profile");
            meta.pb_level    : exact @name("level");
            meta.cnt_old     : exact @name("count");
        }
        actions = { set_pa; @defaultonly pa_certain; }
        default_action = pa_certain();
        size = SIZE_V1MODEL_RED_PA;
    }

    /* avg <- avg + (q - avg) * 2^-wq_shift, q in Q16.16; the variable shift
     * is five constant shifts selected by the bits of wq_shift. */
    action ewma(bit<32> q) {
        bit<32> q_fp = q > QUEUE_MAX ? QUEUE_MAX << 16 : q << 16;
        bool up = q_fp >= meta.avg_old;
        bit<32> d = up ? q_fp - meta.avg_old : meta.avg_old - q_fp;
        d = meta.wq_shift[4:4] == 1 ? d >> 16 : d;
        d = meta.wq_shift[3:3] == 1 ? d >> 8 : d;
        d = meta.wq_shift[2:2] == 1 ? d >> 4 : d;
        d = meta.wq_shift[1:1] == 1 ? d >> 2 : d;
        d = meta.wq_shift[0:0] == 1 ? d >> 1 : d;
        meta.avg_new = up ? meta.avg_old + d : meta.avg_old - d;
    }

    /* avg <- avg * decay / 4096 by shift-and-add over the bits of decay */
    action decay_avg() {
        bit<32> a = meta.avg_old;
        meta.avg_new = (meta.decay[12:12] == 1 ? a : 0)
                     + (meta.decay[11:11] == 1 ? a >> 1 : 0)
                     + (meta.decay[10:10] == 1 ? a >> 2 : 0)
                     + (meta.decay[9:9] == 1 ? a >> 3 : 0)
                     + (meta.decay[8:8] == 1 ? a >> 4 : 0)
                     + (meta.decay[7:7] == 1 ? a >> 5 : 0)
                     + (meta.decay[6:6] == 1 ? a >> 6 : 0)
                     + (meta.decay[5:5] == 1 ? a >> 7 : 0)
                     + (meta.decay[4:4] == 1 ? a >> 8 : 0)
                     + (meta.decay[3:3] == 1 ? a >> 9 : 0)
                     + (meta.decay[2:2] == 1 ? a >> 10 : 0)
                     + (meta.decay[1:1] == 1 ? a >> 11 : 0)
                     + (meta.decay[0:0] == 1 ? a >> 12 : 0);
    }

    /* The per-packet bookkeeping is folded into a few actions: on BMv2
     * every if/else and every assignment outside an action is a pipeline
     * node of its own. */
    action start(out bit<32> occ_data, out bit<32> q) {
        occ_data = meta.occ_np + meta.occ_prio;
        /* RED and drop-tail average all data, M-RED non-priority data only */
        q = meta.aqm_mode == AQM_MODE_MRED ? meta.occ_np : meta.occ_np + meta.occ_prio;
        meta.verdict = VERDICT_ADMIT;
        meta.avg_new = meta.avg_old;
        meta.cnt_new = meta.cnt_old;
        meta.pb_level = PB_LEVEL_NONE;
        meta.decay = DECAY_ONE;
    }

    /* DSBP: dummies never touch the average; above the threshold they are
     * dropped, and the threshold is at most the data limit, so a dummy is
     * always dropped before any data packet is. */
    action dummy_verdict(bit<32> occ_data) {
        meta.verdict = occ_data + meta.occ_dummy >= meta.dummy_th ? VERDICT_DUMMY_DROP : VERDICT_ADMIT;
    }

    /* outside [min_th, max_th): below, count is reset; at or above, forced drop */
    action band_verdict() {
        meta.verdict = meta.avg_new < meta.min_th ? VERDICT_ADMIT : VERDICT_RED_DROP;
        meta.cnt_new = meta.avg_new < meta.min_th ? 16w0 : 16w1;
    }

    /* inside [min_th, max_th): drop with probability p_a. A certain drop
     * (pa_certain, p_a = 1) is decided before the random number is looked
     * at: rnd < PROB_ONE always, so the result is the same, but a test
     * generator that cannot know rnd (P4Testgen) can then decide it
     * (docs/testgen.md). */
    action early_verdict() {
        meta.verdict = meta.pa_thr == PROB_ONE ? VERDICT_RED_DROP
                     : (meta.rnd < meta.pa_thr ? VERDICT_RED_DROP : VERDICT_ADMIT);
        meta.cnt_new = meta.pa_thr == PROB_ONE ? 16w1
                     : (meta.rnd < meta.pa_thr ? 16w1
                        : (meta.cnt_old == COUNT_MAX ? COUNT_MAX : meta.cnt_old + 1));
    }

    /* the physical limit, kept below the target's own queue depth */
    action limit_verdict(bit<32> occ_data) {
        meta.verdict = meta.verdict == VERDICT_ADMIT && occ_data >= meta.qlimit ? VERDICT_OVERFLOW_DROP
                     : meta.verdict;
    }

    apply {
        bit<32> occ_data;
        bit<32> q;
        start(occ_data, q);
        if (meta.cls == AQM_CLASS_DUMMY) {
            dummy_verdict(occ_data);
        } else {
            /* The average: RED and drop-tail update it on every data arrival,
             * M-RED on non-priority arrivals only. An arrival to an empty
             * queue decays it instead: avg <- (1 - w_q)^m * avg. */
            if (meta.aqm_mode != AQM_MODE_MRED || meta.cls == AQM_CLASS_NP) {
                if (q == 0) {
                    /* a miss leaves decay = DECAY_ONE, i.e. avg unchanged: the
                     * shift-and-add (dozens of operations on BMv2) is skipped */
                    if (aqm_idle.apply().hit) {
                        decay_avg();
                    }
                } else {
                    ewma(q);
                }
            }
            /* Early and forced drops: all data under RED, non-priority data
             * only under M-RED (priority packets are lost only on overflow).
             * The count register holds count + 1, so its old value is the
             * count after this arrival's increment. */
            if (meta.aqm_mode == AQM_MODE_RED || (meta.aqm_mode == AQM_MODE_MRED && meta.cls == AQM_CLASS_NP)) {
                if (meta.avg_new < meta.min_th || meta.avg_new >= meta.max_th) {
                    band_verdict();
                } else {
                    red_pb.apply();
                    red_pa.apply();
                    early_verdict();
                }
            }
            limit_verdict(occ_data);
        }
    }
}

#endif
