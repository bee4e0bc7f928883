/* DSBP dummy classification (docs/papers.md#dsbp): a TCP segment (or ACK) whose dummy
 * flag is set AND whose innermost IPv4 header carries DSCP LE (RFC 8622) is
 * a dummy; either mark alone is an ordinary segment. Dummies get the AQM
 * class DUMMY: lowest egress queue, never in the average, dropped first. */
#ifndef P4HANDOFF_DSBP_P4
#define P4HANDOFF_DSBP_P4

#include "headers.p4"

control DsbpClassify(in headers_t hdr, inout local_meta_t meta) {
    /* One decision on the headers as they are (innermost IPv4 header: inner
     * if present), no intermediate value: one Tofino stage. A tunnel this
     * switch starts with the mark (tunnel_mark) is a priority packet, as
     * Ipv4Forwarding records in ipf_priority. */
    apply {
        if (hdr.tcp.isValid() && BS_READ(hdr.tcp, dummy) == 1
                && ((hdr.inner.isValid() && BS_READ(hdr.inner, dscp) == DSCP_LE)
                    || (!hdr.inner.isValid() && hdr.ipv4.isValid() && BS_READ(hdr.ipv4, dscp) == DSCP_LE))) {
            meta.cls = AQM_CLASS_DUMMY;
        } else if (meta.ipf_priority || meta.tunnel_mark == 1) {
            meta.cls = AQM_CLASS_PRIO;
        } else {
            meta.cls = AQM_CLASS_NP;
        }
    }
}

#endif
