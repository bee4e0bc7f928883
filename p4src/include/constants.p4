/* P4Handoff constants shared by the data plane and the control plane.
 *
 * This file is the single source of truth: Python reads the `const`
 * declarations below through p4handoff/wire.py, so a value changed here
 * changes everywhere. Keep the form `const bit<N> NAME = VALUE;` (one per
 * line, decimal or 0x hex) for every constant the hosts or the controller
 * need. docs/wire-contract.md explains each one.
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

#endif
