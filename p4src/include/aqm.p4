/* Per-access-port AQM configuration, shared by both programs: the
 * aqm_port table sets the egress port's mode (drop-tail, RED (Floyd &
 * Jacobson 1993) or M-RED (IPF)), profile, limits and thresholds, all
 * runtime state (docs/aqm.md). The decision is each target's own:
 * AqmDecide in p4src/v1model/aqm.p4 (ingress, on a register snapshot),
 * TnaAqmEgress in p4src/tna/aqm.p4 (egress, where Tofino-1 sees the queue
 * depth; docs/tofino.md, "The AQM in egress").
 */
#ifndef P4HANDOFF_AQM_P4
#define P4HANDOFF_AQM_P4

#include "headers.p4"

/* AQM configuration of the egress port; ports without an entry have no
 * AQM and no occupancy accounting (the controller configures access ports). */
control AqmConfig(inout local_meta_t meta) {
    @name(".aqm_set")
    action aqm_set(bit<2> mode, bit<8> profile, bit<32> qlimit, bit<32> dummy_th,
                   bit<32> min_th, bit<32> max_th, bit<5> wq_shift) {
        meta.aqm_on = true;
        meta.aqm_mode = mode;
        meta.aqm_profile = profile;
        meta.qlimit = qlimit;
        meta.dummy_th = dummy_th;
        meta.min_th = min_th;
        meta.max_th = max_th;
        meta.wq_shift = wq_shift;
    }

    @name(".aqm_port")
    table aqm_port {
        key = { meta.egress_port : exact @name("port"); }
        actions = { aqm_set; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_AQM_PORT;
    }

    apply { aqm_port.apply(); }
}

#endif
