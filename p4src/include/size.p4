/* P4Handoff table sizes (entries) of both programs, shared by the data
 * plane and the control plane. `SIZE_<TABLE>` is the `size` of table
 * <table> in both programs (v1model p4src/v1model/bs.p4, TNA
 * p4src/tna/bs_tna.p4); `SIZE_V1MODEL_<TABLE>` and `SIZE_TNA_<TABLE>` size a
 * table only that program has. Python reads them through p4handoff/wire.py
 * (TABLE_SIZES, by program) to refuse, with the table's name, a
 * configuration that would not fit the target's program, and
 * tests/test_wire_contract.py checks them against the compiled P4Info and
 * against every table the P4 sources declare. Same form as constants.p4.
 * Included by constants.p4.
 */
#ifndef P4HANDOFF_SIZE_P4
#define P4HANDOFF_SIZE_P4

/* forwarding.p4 */
const bit<32> SIZE_PORT_ROLE = 512;       /* one per port (PORT_SLOTS) */
const bit<32> SIZE_ARP_GATEWAY = 256;     /* the switch's own addresses */
const bit<32> SIZE_TUNNEL_TERM = 64;      /* tunnel end points of the switch */
const bit<32> SIZE_IPV4_FWD = 4096;       /* fixed routes + one /32 per mobile host */

/* sanitise.p4 */
const bit<32> SIZE_IPF_PEER = 256;        /* (peer port, peer address) pairs */

/* aqm.p4 (aqm_port), v1model/aqm.p4 and tna/aqm.p4 (red_pb) */
const bit<32> SIZE_AQM_PORT = 512;        /* one per port */
const bit<32> SIZE_RED_PB = 2048;         /* average ranges, all profiles */

/* v1model/aqm.p4 */
const bit<32> SIZE_V1MODEL_AQM_IDLE = 2048;   /* idle-time ranges, all profiles */
const bit<32> SIZE_V1MODEL_RED_PA = 65536;    /* (profile, p_b level, count), all profiles */

/* tna/aqm.p4: 22 TCAM blocks of Tofino-1; the paper's parameters need
 * 10 558 entries (docs/tofino.md, "Resources") */
const bit<32> SIZE_TNA_RED_PA_GAP = 11264;    /* (profile, p_b level, random-number prefix) */

#endif
