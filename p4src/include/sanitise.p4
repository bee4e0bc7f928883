/* IPF anti-abuse rule (docs/papers.md#ipf-mred: only BS-to-BS traffic may keep it): the priority codepoint is
 * honoured only on the OUTER header of an IPv4-in-IPv4 packet that arrives
 * on a peer port from a configured peer address. Anywhere else (outer
 * header of any other packet, any inner header) it is re-marked to 0 and
 * the packet is counted (counter `sanitised`, by ingress port). Packets
 * from the controller are trusted and never pass through here. */
#ifndef P4HANDOFF_SANITISE_P4
#define P4HANDOFF_SANITISE_P4

#include "headers.p4"

control Sanitise(inout headers_t hdr, inout local_meta_t meta) {
    @name(".trusted_peer")
    action trusted_peer() {
        meta.trusted_tunnel = true;
    }

    /* (peer port, peer BS tunnel address) pairs whose marks are trusted */
    @name(".ipf_peer")
    table ipf_peer {
        key = {
            meta.ingress_port : exact @name("ingress_port");
            hdr.ipv4.src      : exact @name("src_addr");
        }
        actions = { trusted_peer; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_IPF_PEER;
    }

    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.inner.isValid() && meta.port_role == PORT_ROLE_PEER) {
                ipf_peer.apply();
            }
            if (hdr.ipv4.dscp == meta.ipf_dscp) {
                if (meta.trusted_tunnel) {
                    meta.ipf_priority = true;
                } else {
                    hdr.ipv4.dscp = DSCP_BEST_EFFORT;
                    meta.sanitised = true;
                }
            }
            if (hdr.inner.isValid() && BS_READ(hdr.inner, dscp) == meta.ipf_dscp) {
                hdr.inner.dscp = DSCP_BEST_EFFORT;
                meta.sanitised = true;
            }
        }
    }
}

#endif
