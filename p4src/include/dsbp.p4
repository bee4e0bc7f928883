/* DSBP dummy classification (docs/papers.md#dsbp): a TCP segment (or ACK) whose dummy
 * flag is set AND whose innermost IPv4 header carries DSCP LE (RFC 8622) is
 * a dummy; either mark alone is an ordinary segment. Dummies get the AQM
 * class DUMMY: lowest egress queue, never in the average, dropped first. */
#ifndef P4HANDOFF_DSBP_P4
#define P4HANDOFF_DSBP_P4

#include "headers.p4"

control DsbpClassify(in headers_t hdr, inout local_meta_t meta) {
    apply {
        bit<6> dscp = 0;  /* of the innermost IPv4 header */
        if (hdr.inner.isValid()) {
            dscp = hdr.inner.dscp;
        } else if (hdr.ipv4.isValid()) {
            dscp = hdr.ipv4.dscp;
        }
        if (hdr.tcp.isValid() && hdr.tcp.dummy == 1 && dscp == DSCP_LE) {
            meta.cls = AQM_CLASS_DUMMY;
        } else if (meta.ipf_priority) {
            meta.cls = AQM_CLASS_PRIO;
        } else {
            meta.cls = AQM_CLASS_NP;
        }
    }
}

#endif
