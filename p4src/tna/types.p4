/* TNA glue, part 1: what the Tofino program adds to the shared headers:
 * the bridged header (ingress -> egress), the glue's metadata, the queue
 * ids of the traffic manager and the CPU port.
 */
#ifndef P4HANDOFF_TNA_TYPES_P4
#define P4HANDOFF_TNA_TYPES_P4

#include "../include/headers.p4"

/* The CPU port differs by chip and board (Tofino-1: 64 on 2-pipe parts,
 * 320 on 4-pipe parts for PCIe; Tofino-2: 0): the build passes it in
 * (make build-tofino TOFINO_CPU_PORT=..., TOFINO2_CPU_PORT=...). */
#ifndef TNA_CPU_PORT
#error "define TNA_CPU_PORT (the Makefile does: TOFINO_CPU_PORT / TOFINO2_CPU_PORT)"
#endif
const PortId_t CPU_PORT_TNA = TNA_CPU_PORT;

/* Traffic-manager queues of an egress port. The control plane configures
 * them as strict priorities: QID_DATA and QID_PRIO on one level above
 * QID_DUMMY. M-RED puts priority data in QID_PRIO so the non-priority
 * depth is QID_DATA's alone; RED and drop-tail keep all data in QID_DATA
 * (IPF's one FIFO). */
const QueueId_t QID_DATA = 0;
const QueueId_t QID_PRIO = 1;
const QueueId_t QID_DUMMY = 2;
/* bridged.queue of a telemetry probe: no queue, the egress only reads */
const bit<2> TELEMETRY_QUEUE = 3;

/* telemetry.aqm_mode of a port without AQM (as v1model's 8w255) */
const bit<8> TELEMETRY_NO_AQM = 255;

/* Ingress -> egress: the egress port's AQM configuration and the class
 * (the AQM decision is made in egress, where the queue depth is known),
 * or, for a telemetry probe, the port it asks about. Ingress also resolves
 * what the mode means for the class (queue, avg_update, red_on), so that
 * egress conditions test one bit each. */
header bridged_t {
    /* Tofino: an action writes a container from few sources, so each
     * container here is written whole by one action: byte 0 by the
     * constants of the action that decides the packet's fate, the others
     * from one metadata field each (@padding: bf-p4c's own filler) */
    bit<1>  telemetry;
    bit<2>  queue;          /* QID_* of the packet (2 bits of QueueId_t); TELEMETRY_QUEUE */
    bit<1>  avg_update;     /* the packet feeds the average */
    bit<1>  red_on;         /* RED / M-RED may drop the packet early */
    @padding bit<3> _pad0;
    @padding bit<7> _pad1;
    bit<1>  aqm_on;
    @padding bit<6> _pad2;
    bit<2>  cls;
    bit<8>  aqm_profile;
    @padding bit<7> _pad3;
    port_t  probe_port;
    bit<32> qlimit;
    bit<32> dummy_th;
    bit<32> min_th;
    bit<32> max_th;
}

struct tna_headers_t {
    bridged_t bridged;
    headers_t bs;
}

struct tna_ingress_meta_t {
    local_meta_t bs;
    bool ipv4_csum_err;
    bool inner_csum_err;
}

/* egress: the AQM decision's working state */
struct tna_egress_meta_t {
    bit<32> port;           /* egress port (a probe: the probed port), as a register index */
    bit<(PORT_CLASS_BITS)> idx; /* port * AQM_CLASS_STRIDE + class: port ++ class */
    bit<32> q;              /* own queue depth at enqueue, cells, saturated at DEPTH_MAX */
    bit<32> q_fp;           /* the same, Q16.16 cells: the Lpf's input */
    bit<32> depth_data;     /* depth per queue: the packet's own, the others' last seen */
    bit<32> depth_prio;
    bit<32> depth_dummy;
    bit<32> occ_data;       /* data depth: QID_DATA + QID_PRIO */
    bit<32> occ_total;      /* data + dummies (a dummy's view) */
    bit<32> avg_lpf;        /* the Lpf's output, Q16.16 cells */
    bit<32> avg_new;        /* the port's average after this packet, Q16.16 cells */
    bit<32> below_min;      /* min_th |-| avg: > 0 iff avg < min_th */
    bit<32> below_max;      /* max_th |-| avg: > 0 iff avg < max_th */
    bit<32> below_qlimit;   /* qlimit |-| occ_data: > 0 iff occ_data < qlimit */
    bit<32> below_dummy_th; /* dummy_th |-| occ_total: > 0 iff occ_total < dummy_th */
    bit<32> restart;        /* the count after a reset (0: below min_th) or a drop (1) */
    bit<8>  pb_level;
    bit<32> min_count;      /* drop when the count reaches this (red_pa_gap; 0: forced) */
    bit<16> rnd;            /* uniform; p_a is compared at TNA_PROB_BITS = 16 bits */
    bit<2>  verdict;
}

#endif
