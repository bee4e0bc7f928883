/* Length checks the parser cannot make: every header must fit in the
 * bytes the enclosing header says it carries, and the frame must hold the
 * whole IPv4 datagram it announces. Failures set meta.malformed_kind; the
 * glue drops and counts them (counter `malformed`). Ethernet padding (frame
 * longer than the datagram) is fine. */
#ifndef P4HANDOFF_VALIDATE_P4
#define P4HANDOFF_VALIDATE_P4

#include "headers.p4"

const bit<16> ETHERNET_HEADER_BYTES = 14;

control Validate(in headers_t hdr, inout local_meta_t meta) {
    /* One action instead of a chain of if/else: on BMv2 every if and every
     * assignment outside an action is a pipeline node of its own, and this
     * runs on every packet. The first failing check wins, in this order. */
    action check_lengths() {
        bit<16> ihl_bytes = ((bit<16>)hdr.ipv4.ihl) << 2;
        bit<16> inner_ihl_bytes = ((bit<16>)hdr.inner.ihl) << 2;
        bit<16> outer_payload = hdr.ipv4.total_len - ihl_bytes;
        /* bytes after the innermost IPv4 header */
        bit<16> l4_len = hdr.inner.isValid() ? hdr.inner.total_len - inner_ihl_bytes : outer_payload;
        /* P4's ?: associates to the left: the nesting is parenthesised */
        meta.malformed_kind =
              hdr.ipv4.total_len < ihl_bytes ? MALFORMED_IPV4_LENGTH
            : ((bit<32>)hdr.ipv4.total_len + (bit<32>)ETHERNET_HEADER_BYTES > meta.frame_len ? MALFORMED_TRUNCATED
            : (hdr.inner.isValid() && hdr.inner.total_len < inner_ihl_bytes ? MALFORMED_IPV4_LENGTH
            : (hdr.inner.isValid() && hdr.inner.total_len > outer_payload ? MALFORMED_TRUNCATED
            : (hdr.tcp.isValid() && (((bit<16>)hdr.tcp.data_offset) << 2) > l4_len ? MALFORMED_TCP_OFFSET
            : (hdr.udp.isValid() && (hdr.udp.length < 8 || hdr.udp.length > l4_len) ? MALFORMED_UDP_LENGTH
            : 8w0)))));
    }

    apply {
        if (hdr.ipv4.isValid()) {
            check_lengths();
        }
    }
}

#endif
