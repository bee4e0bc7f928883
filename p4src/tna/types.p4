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

/* Tofino ingress does not know the frame length: the truncation check of
 * Validate (datagram longer than the frame) is left to the parser's own
 * partial-header error (docs/tofino.md, "Semantic differences"). */
const bit<32> FRAME_LEN_UNKNOWN = 0xFFFFFFFF;

/* telemetry.aqm_mode of a port without AQM (as v1model's 8w255) */
const bit<8> TELEMETRY_NO_AQM = 255;

#define PORT_CLASS_SLOTS (PORT_SLOTS * AQM_CLASS_STRIDE)
#define PORT_REASON_SLOTS (PORT_SLOTS * REASON_STRIDE)

/* Ingress -> egress: the egress port's AQM configuration and the class
 * (the AQM decision is made in egress, where the queue depth is known),
 * or, for a telemetry probe, the port it asks about. */
header bridged_t {
    bit<1>  aqm_on;
    bit<1>  telemetry;
    bit<2>  aqm_mode;
    bit<2>  cls;
    bit<2>  _pad0;
    bit<8>  aqm_profile;
    bit<7>  _pad1;
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
    bit<32> port;           /* egress port, as a register/counter index */
    bit<11> idx;            /* port * AQM_CLASS_STRIDE + class: port ++ class */
    bit<32> q;              /* own queue depth at enqueue, cells, saturated at 0xFFFF */
    bit<32> occ_data;       /* data depth: QID_DATA + QID_PRIO (last seen) */
    bit<32> occ_dummy;
    bit<32> avg_new;        /* Q16.16 cells */
    bit<8>  pb_level;
    bit<16> min_count;      /* drop when the count reaches this (red_pa_gap) */
    bit<24> rnd;
    bit<2>  verdict;
}

#endif
