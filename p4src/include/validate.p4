/* Length checks the parser cannot make: every header must fit in the
 * bytes the enclosing header says it carries, and the frame must hold the
 * whole IPv4 datagram it announces. Failures set meta.malformed_kind; the
 * glue drops and counts them (counter `malformed`). Ethernet padding (frame
 * longer than the datagram) is fine.
 *
 * Written for Tofino as well as BMv2: on Tofino an action is one set of
 * parallel ALU operations (no operation may read what another one of the
 * same action writes), a condition may only compare a field with a
 * constant (or test two fields for equality; a range test against a
 * constant slices the field, which splits every length it is computed
 * with across containers), and bf-p4c propagates a value
 * computed in an apply block into the condition that reads it, making the
 * condition too complex again. So each step is the const default action of
 * a keyless @hidden table (no P4Info entry, not propagated), one step per
 * dependency level, and every "x > y" is the saturating difference
 * `x |-| y`, which is non-zero exactly when x > y.
 *
 * Flat: no step sits inside an `if` with other tables. Tofino-1 has no
 * long branches, so a block of tables under one condition must be laid
 * out whole before any table after it in the enclosing sequence; a block
 * as deep as these checks would hold the rest of the ingress back by its
 * depth (docs/tofino.md, "Resources"). Every step runs; only the verdict,
 * one chain of single-assignment conditions, tests which headers are there.
 *
 * The glue that cannot know the frame length (TNA: ingress does not see it)
 * defines BS_NO_FRAME_LEN before including this file; the truncation check
 * against the frame is then the parser's own (docs/tofino.md). */
#ifndef P4HANDOFF_VALIDATE_P4
#define P4HANDOFF_VALIDATE_P4

#include "headers.p4"

const bit<16> ETHERNET_HEADER_BYTES = 14;
const bit<16> UDP_HEADER_BYTES = 8;

control Validate(in headers_t hdr, inout local_meta_t meta, in bool had_ipv4) {
    /* Every step writes all it computes, so nothing needs a zero first.
     * Few fields: on Tofino-1 every length below is operand of an operation
     * with every other (through the header lengths), and all such fields
     * must fit one group of 16 PHV containers. */
    bit<16> ihl_bytes;
    bit<16> inner_ihl_bytes;
    bit<16> tcp_bytes;
    bit<16> l4_outer;       /* bytes after the outer IPv4 header */
    bit<16> l4_len;         /* bytes after the innermost IPv4 header */
    bit<16> ipv4_short;     /* > 0: outer total_len below its header */
    bit<16> inner_short;    /* > 0: inner total_len below its header */
    bit<16> inner_over;     /* > 0: inner datagram beyond the outer payload */
    bit<16> udp_short;      /* > 0: UDP length below the UDP header */
    bit<16> tcp_over;       /* > 0: TCP header beyond the innermost payload */
    bit<16> udp_over;       /* > 0: UDP length beyond the innermost payload */

    /* 32-bit words -> bytes (IHL, TCP data offset; values below 5 never
     * get here: the parser rejects them; an absent header gives 0). A
     * lookup, not a shift: on Tofino a shift of the 4-bit header field ties
     * its PHV alignment to the lengths it is compared with, and a hash unit
     * cannot serve a keyless table. */
#define BS_WORDS_TO_BYTES(set) \
        5 : set(20); 6 : set(24); 7 : set(28); 8 : set(32); 9 : set(36); 10 : set(40); \
        11 : set(44); 12 : set(48); 13 : set(52); 14 : set(56); 15 : set(60);
    @hidden action set_ihl_bytes(bit<16> bytes) { ihl_bytes = bytes; }
    @hidden action set_inner_ihl_bytes(bit<16> bytes) { inner_ihl_bytes = bytes; }
    @hidden action set_tcp_bytes(bit<16> bytes) { tcp_bytes = bytes; }
    @hidden table step_ihl_bytes {
        key = { BS_READ(hdr.ipv4, ihl) : exact @name("hdr.ipv4.ihl"); }
        actions = { set_ihl_bytes; }
        const entries = { BS_WORDS_TO_BYTES(set_ihl_bytes) }
        const default_action = set_ihl_bytes(0);
    }
    @hidden table step_inner_ihl_bytes {
        key = { BS_READ(hdr.inner, ihl) : exact @name("hdr.inner.ihl"); }
        actions = { set_inner_ihl_bytes; }
        const entries = { BS_WORDS_TO_BYTES(set_inner_ihl_bytes) }
        const default_action = set_inner_ihl_bytes(0);
    }
    @hidden table step_tcp_bytes {
        key = { BS_READ(hdr.tcp, data_offset) : exact @name("hdr.tcp.data_offset"); }
        actions = { set_tcp_bytes; }
        const entries = { BS_WORDS_TO_BYTES(set_tcp_bytes) }
        const default_action = set_tcp_bytes(0);
    }

    @hidden action payload_bytes() {
        ipv4_short = ihl_bytes |-| BS_READ(hdr.ipv4, total_len);
        l4_outer = BS_READ(hdr.ipv4, total_len) - ihl_bytes;
        inner_short = inner_ihl_bytes |-| BS_READ(hdr.inner, total_len);
        udp_short = UDP_HEADER_BYTES |-| BS_READ(hdr.udp, length);
    }
    @hidden table step_payload_bytes {
        actions = { payload_bytes; }
        const default_action = payload_bytes();
    }

    /* the innermost payload: after the inner header if there is one; a
     * table keyed on the inner header's validity rather than an if/else,
     * so that the choice is one table, not a block */
    @hidden action inner_payload() { l4_len = BS_READ(hdr.inner, total_len) - inner_ihl_bytes; }
    @hidden action outer_payload() { l4_len = BS_READ(hdr.ipv4, total_len) - ihl_bytes; }
    @hidden table step_l4_len {
        key = { hdr.inner.isValid() : exact; }
        actions = { inner_payload; outer_payload; }
        const entries = { true : inner_payload(); false : outer_payload(); }
        const default_action = outer_payload();
    }

    @hidden action overruns() {
        inner_over = BS_READ(hdr.inner, total_len) |-| l4_outer;
        tcp_over = tcp_bytes |-| l4_len;
        udp_over = BS_READ(hdr.udp, length) |-| l4_len;
    }
    @hidden table step_overruns {
        actions = { overruns; }
        const default_action = overruns();
    }

    /* had_ipv4: the outer IPv4 header was parsed (forwarding may have
     * invalidated it since; its fields are still those parsed). The verdict
     * is the first failing check in this order, for a packet nobody has
     * found malformed yet (on BMv2 none has: the glue runs BsIngress only
     * for packets the parser accepted). */
    apply {
        step_ihl_bytes.apply();
        step_inner_ihl_bytes.apply();
        step_tcp_bytes.apply();
        step_payload_bytes.apply();
        step_l4_len.apply();
        step_overruns.apply();
        if (!had_ipv4 || meta.malformed_kind != 0) {
            /* nothing to check, or already malformed (the TNA parser) */
        } else if (ipv4_short != 0) {
            meta.malformed_kind = MALFORMED_IPV4_LENGTH;
#ifndef BS_NO_FRAME_LEN
        } else if ((bit<32>)hdr.ipv4.total_len + (bit<32>)ETHERNET_HEADER_BYTES > meta.frame_len) {
            meta.malformed_kind = MALFORMED_TRUNCATED;
#endif
        } else if (hdr.inner.isValid() && inner_short != 0) {
            meta.malformed_kind = MALFORMED_IPV4_LENGTH;
        } else if (hdr.inner.isValid() && inner_over != 0) {
            meta.malformed_kind = MALFORMED_TRUNCATED;
        } else if (hdr.tcp.isValid() && tcp_over != 0) {
            meta.malformed_kind = MALFORMED_TCP_OFFSET;
        } else if (hdr.udp.isValid() && (udp_short != 0 || udp_over != 0)) {
            meta.malformed_kind = MALFORMED_UDP_LENGTH;
        }
    }
}

#endif
