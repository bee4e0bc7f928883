/* P4Handoff constants shared by the data plane and the control plane.
 *
 * This file (with size.p4, the table sizes) is the single source of truth:
 * Python reads the `const` declarations below through p4handoff/wire.py, so
 * a value changed here changes everywhere. Keep the form
 * `const bit<N> NAME = EXPR;` on one line, EXPR made of decimal or 0x
 * literals (optionally width-prefixed, 32w1), names declared above, + - *
 * << >> and parentheses. docs/wire-contract.md explains each one;
 * tests/test_wire_contract.py checks Python against the compiled program.
 */
#ifndef P4HANDOFF_CONSTANTS_P4
#define P4HANDOFF_CONSTANTS_P4

/* EtherTypes and IP protocols */
const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP = 0x0806;
const bit<8> IP_PROTO_IPIP = 4;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;

/* DSCP codepoints (6 bits, the upper bits of the IPv4 TOS byte) */
const bit<6> DSCP_BEST_EFFORT = 0;
/* RFC 8622 Lower-Effort PHB: DSBP dummy segments and dummy ACKs */
const bit<6> DSCP_LE = 1;
/* IPF priority mark, default value (pool 2, xxxx11: local use). The
 * switches take the codepoint in force from a runtime table/register. */
const bit<6> DSCP_IPF_PRIORITY_DEFAULT = 43;

/* DSBP dummy flag: the first reserved bit of the TCP header (bit 100 of the
 * header, i.e. mask 0x08 of byte 12). Byte 12 is
 * data offset (0xF0) | reserved (0x0E) | AE (0x01, AccECN). */
const bit<8> TCP_BYTE12_DUMMY_MASK = 0x08;

/* UDP ports */
const bit<16> UDP_PORT_MIP_REGISTRATION = 434;
const bit<16> UDP_PORT_HANDOFF_NOTIFY = 5434;

/* ---- P4 pipeline (issue 2): docs/wire-contract.md, docs/pipeline.md ---- */

/* CPU port: simple_switch_grpc must run with --cpu-port CPU_PORT */
const bit<9> CPU_PORT = 255;

/* Egress priority queues: simple_switch(_grpc) must run with
 * --priority-queues 2 (or more). Higher value = served first. */
const bit<3> QUEUE_PRIORITY_DUMMY = 0;
const bit<3> QUEUE_PRIORITY_DATA = 1;

/* Port roles (table port_role, keyed by ingress port; default core) */
const bit<2> PORT_ROLE_CORE = 0;
const bit<2> PORT_ROLE_ACCESS = 1;
const bit<2> PORT_ROLE_PEER = 2;

/* Packet-in reasons (packet_in.reason) */
const bit<8> PUNT_REASON_BUFFER = 1;
const bit<8> PUNT_REASON_ARP = 2;
const bit<8> PUNT_REASON_REGISTRATION = 3;
const bit<8> PUNT_REASON_TELEMETRY = 4;
const bit<8> PUNT_REASON_NO_ROUTE = 5;

/* AQM modes (table aqm_port) */
const bit<2> AQM_MODE_DROPTAIL = 0;
const bit<2> AQM_MODE_RED = 1;
const bit<2> AQM_MODE_MRED = 2;

/* AQM classes; per-port-per-class counters and registers are indexed
 * port * AQM_CLASS_STRIDE + class */
const bit<2> AQM_CLASS_NP = 0;
const bit<2> AQM_CLASS_PRIO = 1;
const bit<2> AQM_CLASS_DUMMY = 2;
/* Index widths: a port (port_t, PortId_t), a class, a reason. Every slot
 * count below is a power of two of them, and the TNA's counter and meter
 * index types are bit<(...)> of them (a TNA index is port ++ class) */
const bit<32> PORT_BITS = 9;
const bit<32> AQM_CLASS_BITS = 2;
const bit<32> REASON_BITS = 4;
const bit<32> AQM_CLASS_STRIDE = 32w1 << AQM_CLASS_BITS;
const bit<32> PORT_SLOTS = 32w1 << PORT_BITS;
/* The highest port number a network description may name: ports are
 * 9 bits (PORT_SLOTS of them) and BMv2 drops what is sent to the last one
 * (511); a punted packet's ingress_port is checked against it too */
const bit<32> PORT_MAX = PORT_SLOTS - 2;

/* Fixed point: average occupancy is Q16.16 packets; probabilities are
 * thresholds against a uniform random number of PROB_BITS bits; the idle
 * decay factor is Q0.DECAY_FRAC_BITS (4096 = 1.0) */
const bit<8> AVG_FRAC_BITS = 16;
const bit<8> PROB_BITS = 24;
const bit<8> DECAY_FRAC_BITS = 12;
/* 1.0 against a PROB_BITS random number, drawn from [0, PROB_ONE) */
const bit<32> PROB_ONE = 32w1 << PROB_BITS;
/* 1.0 in Q0.DECAY_FRAC_BITS */
const bit<13> DECAY_ONE = 13w1 << DECAY_FRAC_BITS;
/* The largest queue occupancy the Q16.16 average represents, packets: the
 * bound of every queue limit and threshold (qlimit, dummy_th, min_th,
 * max_th); a larger occupancy enters the average as QUEUE_MAX */
const bit<32> QUEUE_MAX = 0xFFFF;
/* the p_b level of an average that no red_pb entry covers (below min_th) */
const bit<8> PB_LEVEL_NONE = 255;
/* the red_count register saturates here */
const bit<16> COUNT_MAX = 0xFFFF;
/* telemetry.aqm_mode of a port without an aqm_port entry */
const bit<8> TELEMETRY_AQM_MODE_NONE = 255;
/* TNA (p4src/tna): the random number p_a is compared with has TNA_PROB_BITS
 * bits (red_pa_gap's prefix entries grow with its width; 16 bits keep them
 * within Tofino-1's TCAM, docs/tofino.md), and red_pb matches the integer
 * part of the Q16.16 average (whole cells: bf-p4c range keys are at most 16
 * bits wide) */
const bit<8> TNA_PROB_BITS = 16;

/* A dummy dequeued while data is queued on its port is recirculated to the
 * back of the dummy queue at most this many times, then dropped */
const bit<8> DUMMY_MAX_RECIRC = 250;

/* Reason-indexed counters (malformed, fwd_dropped, punted) are indexed
 * port * REASON_STRIDE + reason */
const bit<32> REASON_STRIDE = 32w1 << REASON_BITS;

/* Slots of the per-port-per-class and per-port-per-reason counters and
 * registers of both programs, and the widths of their TNA indices */
const bit<32> PORT_CLASS_BITS = PORT_BITS + AQM_CLASS_BITS;
const bit<32> PORT_REASON_BITS = PORT_BITS + REASON_BITS;
const bit<32> PORT_CLASS_SLOTS = PORT_SLOTS * AQM_CLASS_STRIDE;
const bit<32> PORT_REASON_SLOTS = PORT_SLOTS * REASON_STRIDE;

/* Bytes of the packet_out header in front of the Ethernet header of a
 * PacketOut's payload (headers.p4, packet_out_t) */
const bit<32> PACKET_OUT_BYTES = 2;

/* Malformed kinds (counter malformed) */
const bit<8> MALFORMED_TRUNCATED = 1;
const bit<8> MALFORMED_IPV4_VERSION = 2;
const bit<8> MALFORMED_IPV4_IHL = 3;
const bit<8> MALFORMED_IPV4_LENGTH = 4;
const bit<8> MALFORMED_TCP_OFFSET = 5;
const bit<8> MALFORMED_UDP_LENGTH = 6;
const bit<8> MALFORMED_CHECKSUM = 7;
const bit<8> MALFORMED_OTHER = 15;

/* Forwarding drop reasons (counter fwd_dropped) */
const bit<8> FWD_DROP_TABLE = 1;
const bit<8> FWD_DROP_TTL = 2;
const bit<8> FWD_DROP_UNSUPPORTED = 3;
const bit<8> FWD_DROP_PACKET_OUT = 4;
/* an unsolicited punt (registration, ARP, no route) over its ingress port's
 * punt budget: a meter per port (docs/pipeline.md, "Punt budget") */
const bit<8> FWD_DROP_PUNT_BUDGET = 5;

#include "size.p4"

#endif
