/* P4Handoff table sizes (entries), shared by the data plane and the
 * control plane: `SIZE_<TABLE>` is the `size` of table <table>; Python
 * reads them through p4handoff/wire.py (TABLE_SIZES) to refuse, with the
 * table's name, a configuration that would not fit, and
 * tests/test_wire_contract.py checks them against the compiled P4Info.
 * Same form as constants.p4. Included by constants.p4.
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

/* aqm.p4 */
const bit<32> SIZE_AQM_PORT = 512;        /* one per port */
const bit<32> SIZE_AQM_IDLE = 2048;       /* idle-time ranges, all profiles */
const bit<32> SIZE_RED_PB = 2048;         /* average ranges, all profiles */
const bit<32> SIZE_RED_PA = 65536;        /* (profile, p_b level, count), all profiles */

#endif
