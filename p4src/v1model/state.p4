/* v1model glue, part 1: the stateful externs (registers and counters) and
 * the actions that touch them. Everything target specific about state lives
 * here; the TNA port (p4src/tna/) has its own state and AQM decision in
 * egress instead (docs/tofino.md).
 *
 * Read-modify-write of a register shared by ingress and egress (occupancy,
 * empty_since) happens inside ONE action in an @atomic block: BMv2 holds
 * the lock of every register array an action touches for the whole action,
 * so an enqueue in the ingress thread and a dequeue in an egress thread
 * never lose an update. avg_occupancy and red_count are only written by
 * the (single) ingress thread.
 *
 * P4Runtime on BMv2 (PI) cannot read registers: the registers are read over
 * Thrift (simple_switch_CLI register_read) or through the telemetry probe
 * (a packet-out answered by a packet-in); the counters are P4Runtime
 * readable, and occupancy == aqm_enqueued - aqm_dequeued per port and class.
 */
#ifndef P4HANDOFF_V1MODEL_STATE_P4
#define P4HANDOFF_V1MODEL_STATE_P4

#include <core.p4>
#include <v1model.p4>
#include "../include/headers.p4"
#include "aqm.p4"

/* index port * AQM_CLASS_STRIDE + class */
register<bit<32>>(PORT_CLASS_SLOTS) occupancy;      /* packets queued now */
register<bit<48>>(PORT_CLASS_SLOTS) empty_since;    /* us, last time the class queue emptied */
/* index port */
register<bit<32>>(PORT_SLOTS) avg_occupancy;        /* Q16.16 packets */
register<bit<16>>(PORT_SLOTS) red_count;            /* Floyd-Jacobson count + 1 */

/* index port * AQM_CLASS_STRIDE + class (egress port) */
counter(PORT_CLASS_SLOTS, CounterType.packets_and_bytes) aqm_enqueued;
counter(PORT_CLASS_SLOTS, CounterType.packets_and_bytes) aqm_dequeued;
counter(PORT_CLASS_SLOTS, CounterType.packets_and_bytes) aqm_red_dropped;
counter(PORT_CLASS_SLOTS, CounterType.packets_and_bytes) aqm_overflow_dropped;
counter(PORT_CLASS_SLOTS, CounterType.packets_and_bytes) aqm_dummy_dropped;
/* index port */
counter(PORT_SLOTS, CounterType.packets_and_bytes) priority_admitted;   /* egress port */
counter(PORT_SLOTS, CounterType.packets_and_bytes) sanitised;           /* ingress port */
/* index port * REASON_STRIDE + reason (ingress port) */
counter(PORT_REASON_SLOTS, CounterType.packets_and_bytes) malformed;
counter(PORT_REASON_SLOTS, CounterType.packets_and_bytes) fwd_dropped;
counter(PORT_REASON_SLOTS, CounterType.packets_and_bytes) punted;
/* index ingress port: the punt budget, a packets meter the controller configures per port (rate and burst
 * from the network description); a port whose cell is not configured is unlimited (BMv2: green) */
meter(PORT_SLOTS, MeterType.packets) punt_budget;

/* Ingress side: snapshot the state, run AqmDecide, write the state back and
 * admit (counting the packet into its class) or drop. Also answers
 * telemetry probes. Applied only for packets to a port with AQM. */
control V1AqmIngress(inout headers_t hdr, inout local_meta_t meta, inout standard_metadata_t sm) {
    AqmDecide() aqm_decide;

    /* One action (one lock scope) reads the whole state the decision needs:
     * a consistent snapshot of the three class occupancies, avg, count, how
     * long the averaged queue has been empty (RED and drop-tail average
     * np + prio, M-RED np only), and the random number. */
    action read_state(bit<32> port, bit<32> base) {
        @atomic {
            occupancy.read(meta.occ_np, base + (bit<32>)AQM_CLASS_NP);
            occupancy.read(meta.occ_prio, base + (bit<32>)AQM_CLASS_PRIO);
            occupancy.read(meta.occ_dummy, base + (bit<32>)AQM_CLASS_DUMMY);
        }
        avg_occupancy.read(meta.avg_old, port);
        red_count.read(meta.cnt_old, port);
        bit<48> es_np;
        bit<48> es_prio;
        empty_since.read(es_np, base + (bit<32>)AQM_CLASS_NP);
        empty_since.read(es_prio, base + (bit<32>)AQM_CLASS_PRIO);
        bit<48> es = (meta.aqm_mode == AQM_MODE_MRED || es_np > es_prio) ? es_np : es_prio;
        /* now_us is when the packet reached the switch; on a busy switch it waits in the input buffer,
         * and the queue may empty (es, written by egress) after it arrived but before ingress takes it:
         * no idle time to decay for. Unguarded, now_us - es wrapped to ~2^48 us and the average was
         * reset to 0 (docs/aqm.md, "Idle time on a busy switch"). */
        bit<48> idle = meta.now_us > es ? meta.now_us - es : 48w0;
        meta.idle_us = idle > 48w0xFFFFFFFF ? 32w0xFFFFFFFF : idle[31:0];
        random(meta.rnd, 32w0, PROB_ONE - 1);
    }

    /* avg and count are written back unconditionally: AqmDecide leaves them
     * unchanged when it does not update them, and only this (single) ingress
     * thread writes them. The occupancy increment is an @atomic RMW. */
    action admit(bit<32> port, bit<32> idx) {
        avg_occupancy.write(port, meta.avg_new);
        red_count.write(port, meta.cnt_new);
        @atomic {
            bit<32> occ;
            occupancy.read(occ, idx);
            occupancy.write(idx, occ + 1);
        }
        aqm_enqueued.count(idx);
    }

    action drop_red(bit<32> port, bit<32> idx) {
        avg_occupancy.write(port, meta.avg_new);
        red_count.write(port, meta.cnt_new);
        aqm_red_dropped.count(idx);
        mark_to_drop(sm);
    }

    action drop_overflow(bit<32> port, bit<32> idx) {
        avg_occupancy.write(port, meta.avg_new);
        red_count.write(port, meta.cnt_new);
        aqm_overflow_dropped.count(idx);
        mark_to_drop(sm);
    }

    action drop_dummy(bit<32> idx) {
        aqm_dummy_dropped.count(idx);
        mark_to_drop(sm);
    }

    action fill_telemetry(bit<32> port, bit<32> base) {
        hdr.telemetry.setValid();
        hdr.telemetry.port = (bit<16>)port;
        hdr.telemetry.aqm_mode = meta.aqm_on ? (bit<8>)meta.aqm_mode : TELEMETRY_AQM_MODE_NONE;
        hdr.telemetry._pad = 0;
        @atomic {
            occupancy.read(hdr.telemetry.occ_np, base + (bit<32>)AQM_CLASS_NP);
            occupancy.read(hdr.telemetry.occ_prio, base + (bit<32>)AQM_CLASS_PRIO);
            occupancy.read(hdr.telemetry.occ_dummy, base + (bit<32>)AQM_CLASS_DUMMY);
        }
        avg_occupancy.read(hdr.telemetry.avg, port);
        bit<16> c;
        red_count.read(c, port);
        hdr.telemetry.red_count = (bit<32>)c;
    }

    apply {
        bit<32> port = (bit<32>)meta.egress_port;
        bit<32> base = port * AQM_CLASS_STRIDE;
        bit<32> idx = base + (bit<32>)meta.cls;
        if (meta.punt_reason == PUNT_REASON_TELEMETRY) {
            fill_telemetry(port, base);
        } else {
            read_state(port, base);
            aqm_decide.apply(meta);
            if (meta.verdict == VERDICT_ADMIT) {
                admit(port, idx);
                if (meta.cls == AQM_CLASS_PRIO) {
                    priority_admitted.count(port);
                }
            } else if (meta.verdict == VERDICT_RED_DROP) {
                drop_red(port, idx);
            } else if (meta.verdict == VERDICT_OVERFLOW_DROP) {
                drop_overflow(port, idx);
            } else {
                drop_dummy(idx);
            }
        }
    }
}

/* Egress side: dequeue accounting. A dummy dequeued while data is queued on
 * its port goes back to the tail of the dummy queue (recirculation, still
 * counted as queued) so that dummies leave only when no data waits, even
 * though simple_switch rate-limits each priority queue separately; after
 * DUMMY_MAX_RECIRC passes it is dropped (aqm_dummy_dropped). */
control V1AqmEgress(inout headers_t hdr, inout local_meta_t meta, inout standard_metadata_t sm) {
    action read_data_occupancy(bit<32> base) {
        @atomic {
            occupancy.read(meta.occ_np, base + (bit<32>)AQM_CLASS_NP);
            occupancy.read(meta.occ_prio, base + (bit<32>)AQM_CLASS_PRIO);
        }
    }

    action dequeue(bit<32> idx) {
        @atomic {
            bit<32> occ;
            occupancy.read(occ, idx);
            occ = occ == 0 ? 32w0 : occ - 1;
            occupancy.write(idx, occ);
            bit<48> es;
            empty_since.read(es, idx);
            empty_since.write(idx, occ == 0 ? sm.egress_global_timestamp : es);
        }
        aqm_dequeued.count(idx);
    }

    action hold_dummy() {
        meta.recirc_passes = meta.recirc_passes + 1;
        meta.recirc_port = sm.egress_port;
        recirculate_preserving_field_list(1);
    }

    action drop_held_dummy(bit<32> idx) {
        aqm_dummy_dropped.count(idx);
        mark_to_drop(sm);
    }

    apply {
        bit<32> base = (bit<32>)sm.egress_port * AQM_CLASS_STRIDE;
        bit<32> idx = base + (bit<32>)meta.cls;
        if (meta.cls == AQM_CLASS_DUMMY) {
            read_data_occupancy(base);
        }
        if (meta.cls == AQM_CLASS_DUMMY && meta.occ_np + meta.occ_prio != 0
                && meta.recirc_passes < DUMMY_MAX_RECIRC) {
            hold_dummy();
        } else {
            dequeue(idx);
            if (meta.cls == AQM_CLASS_DUMMY && meta.occ_np + meta.occ_prio != 0) {
                drop_held_dummy(idx);
            }
        }
    }
}

#endif
