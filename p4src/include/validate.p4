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
 * The glue that cannot know the frame length (TNA: ingress does not see it)
 * defines BS_NO_FRAME_LEN before including this file; the truncation check
 * against the frame is then the parser's own (docs/tofino.md). */
#ifndef P4HANDOFF_VALIDATE_P4
#define P4HANDOFF_VALIDATE_P4

#include "headers.p4"

const bit<16> ETHERNET_HEADER_BYTES = 14;
const bit<16> UDP_HEADER_BYTES = 8;

control Validate(in headers_t hdr, inout local_meta_t meta, in bool had_ipv4) {
    /* Few fields, reused: on Tofino-1 every length below is operand of an
     * operation with every other (through the header lengths), and all such
     * fields must fit one group of 16 PHV containers. */
    bit<16> ihl_bytes = 0;
    bit<16> inner_ihl_bytes = 0;
    bit<16> tcp_bytes = 0;
    bit<16> l4_len = 0;           /* bytes after the outer, then the innermost, IPv4 header */
    bit<16> inner_l4_len = 0;     /* bytes after the inner IPv4 header */
    bit<16> x = 0;                /* step 2: total_len < ihl_bytes; step 4: TCP header beyond l4_len */
    bit<16> y = 0;                /* step 2: the same, inner; step 4: UDP length beyond l4_len */
    bit<16> z = 0;                /* step 3: inner datagram beyond the outer payload; step 4: UDP length < 8 */

    /* 32-bit words -> bytes (IHL, TCP data offset; values below 5 never
     * get here: the parser rejects them). A lookup, not a shift: on Tofino
     * a shift of the 4-bit header field ties its PHV alignment to the
     * lengths it is compared with, and a hash unit cannot serve a keyless
     * table. */
#define BS_WORDS_TO_BYTES(set) \
        5 : set(20); 6 : set(24); 7 : set(28); 8 : set(32); 9 : set(36); 10 : set(40); \
        11 : set(44); 12 : set(48); 13 : set(52); 14 : set(56); 15 : set(60);
    @hidden action set_ihl_bytes(bit<16> bytes) { ihl_bytes = bytes; }
    @hidden action set_inner_ihl_bytes(bit<16> bytes) { inner_ihl_bytes = bytes; }
    @hidden action set_tcp_bytes(bit<16> bytes) { tcp_bytes = bytes; }
    @hidden table step_ihl_bytes {
        key = { hdr.ipv4.ihl : exact; }
        actions = { set_ihl_bytes; @defaultonly NoAction; }
        const entries = { BS_WORDS_TO_BYTES(set_ihl_bytes) }
        const default_action = NoAction();
    }
    @hidden table step_inner_ihl_bytes {
        key = { hdr.inner.ihl : exact; }
        actions = { set_inner_ihl_bytes; @defaultonly NoAction; }
        const entries = { BS_WORDS_TO_BYTES(set_inner_ihl_bytes) }
        const default_action = NoAction();
    }
    @hidden table step_tcp_bytes {
        key = { hdr.tcp.data_offset : exact; }
        actions = { set_tcp_bytes; @defaultonly NoAction; }
        const entries = { BS_WORDS_TO_BYTES(set_tcp_bytes) }
        const default_action = NoAction();
    }

    @hidden action payload_bytes() {
        x = ihl_bytes |-| hdr.ipv4.total_len;
        l4_len = hdr.ipv4.total_len - ihl_bytes;
        y = inner_ihl_bytes |-| hdr.inner.total_len;
        inner_l4_len = hdr.inner.total_len - inner_ihl_bytes;
    }
    @hidden table step_payload_bytes {
        actions = { payload_bytes; }
        const default_action = payload_bytes();
    }

    /* l4_len becomes the innermost payload once the inner header's fit in
     * the outer payload is known (z reads the old value) */
    @hidden action inner_payload() {
        z = hdr.inner.total_len |-| l4_len;
        l4_len = inner_l4_len;
    }
    @hidden table step_inner_payload {
        actions = { inner_payload; }
        const default_action = inner_payload();
    }

    @hidden action transport_overruns() {
        x = tcp_bytes |-| l4_len;
        y = hdr.udp.length |-| l4_len;
        z = UDP_HEADER_BYTES |-| hdr.udp.length;
    }
    @hidden table step_transport_overruns {
        actions = { transport_overruns; }
        const default_action = transport_overruns();
    }

    /* had_ipv4: the outer IPv4 header was parsed (forwarding may have
     * invalidated it since; its fields are still those parsed) */
    apply {
        if (had_ipv4) {
            step_ihl_bytes.apply();
            if (hdr.inner.isValid()) {
                step_inner_ihl_bytes.apply();
            }
            if (hdr.tcp.isValid()) {
                step_tcp_bytes.apply();
            }
            step_payload_bytes.apply();
            if (x != 0) {
                meta.malformed_kind = MALFORMED_IPV4_LENGTH;
#ifndef BS_NO_FRAME_LEN
            } else if ((bit<32>)hdr.ipv4.total_len + (bit<32>)ETHERNET_HEADER_BYTES > meta.frame_len) {
                meta.malformed_kind = MALFORMED_TRUNCATED;
#endif
            } else if (hdr.inner.isValid()) {
                step_inner_payload.apply();
                if (y != 0) {
                    meta.malformed_kind = MALFORMED_IPV4_LENGTH;
                } else if (z != 0) {
                    meta.malformed_kind = MALFORMED_TRUNCATED;
                }
            }
            if (meta.malformed_kind == 0) {
                step_transport_overruns.apply();
                if (hdr.tcp.isValid() && x != 0) {
                    meta.malformed_kind = MALFORMED_TCP_OFFSET;
                } else if (hdr.udp.isValid() && (z != 0 || y != 0)) {
                    meta.malformed_kind = MALFORMED_UDP_LENGTH;
                }
            }
        }
    }
}

#endif
