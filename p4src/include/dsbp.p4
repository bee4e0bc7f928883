/* DSBP dummy classification (dsbp.md): a TCP segment (or ACK) whose dummy
 * flag is set AND whose innermost IPv4 header carries DSCP LE (RFC 8622) is
 * a dummy; either mark alone is an ordinary segment. Dummies get the AQM
 * class DUMMY: lowest egress queue, never in the average, dropped first. */
#ifndef P4HANDOFF_DSBP_P4
#define P4HANDOFF_DSBP_P4

#include "headers.p4"

control DsbpClassify(in headers_t hdr, inout local_meta_t meta) {
    /* one action (one BMv2 pipeline node instead of nine); dscp is the
     * innermost IPv4 header's: `inner` while valid, else `ipv4` */
    action classify() {
        bit<6> dscp = hdr.inner.isValid() ? hdr.inner.dscp : (hdr.ipv4.isValid() ? hdr.ipv4.dscp : 6w0);
        meta.cls = hdr.tcp.isValid() && hdr.tcp.dummy == 1 && dscp == DSCP_LE ? AQM_CLASS_DUMMY
                 : (meta.ipf_priority ? AQM_CLASS_PRIO : AQM_CLASS_NP);
    }

    apply { classify(); }
}

#endif
