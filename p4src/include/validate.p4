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
    apply {
        bit<16> ihl_bytes = 0;
        bit<16> inner_ihl_bytes = 0;
        bit<16> l4_len = 0;  /* bytes after the innermost IPv4 header */
        if (hdr.ipv4.isValid()) {
            ihl_bytes = ((bit<16>)hdr.ipv4.ihl) << 2;
            l4_len = hdr.ipv4.total_len - ihl_bytes;
            if (hdr.inner.isValid()) {
                inner_ihl_bytes = ((bit<16>)hdr.inner.ihl) << 2;
            }
            if (hdr.ipv4.total_len < ihl_bytes) {
                meta.malformed_kind = MALFORMED_IPV4_LENGTH;
            } else if ((bit<32>)hdr.ipv4.total_len + (bit<32>)ETHERNET_HEADER_BYTES > meta.frame_len) {
                meta.malformed_kind = MALFORMED_TRUNCATED;
            } else if (hdr.inner.isValid() && hdr.inner.total_len < inner_ihl_bytes) {
                meta.malformed_kind = MALFORMED_IPV4_LENGTH;
            } else if (hdr.inner.isValid() && hdr.inner.total_len > l4_len) {
                meta.malformed_kind = MALFORMED_TRUNCATED;
            } else {
                if (hdr.inner.isValid()) {
                    l4_len = hdr.inner.total_len - inner_ihl_bytes;
                }
                if (hdr.tcp.isValid() && (((bit<16>)hdr.tcp.data_offset) << 2) > l4_len) {
                    meta.malformed_kind = MALFORMED_TCP_OFFSET;
                } else if (hdr.udp.isValid() && (hdr.udp.length < 8 || hdr.udp.length > l4_len)) {
                    meta.malformed_kind = MALFORMED_UDP_LENGTH;
                }
            }
        }
    }
}

#endif
