/* The target-independent ingress: validation, packet-out, port roles,
 * sanitisation, registration punts, ARP, tunnel termination, forwarding,
 * DSBP classification and the egress port's AQM configuration. It only
 * decides (meta.drop / punt_reason / egress_port / cls / aqm_*); the glue
 * acts on the decision, runs the AQM against its registers and counts. */
#ifndef P4HANDOFF_INGRESS_P4
#define P4HANDOFF_INGRESS_P4

#include "headers.p4"
#include "validate.p4"
#include "forwarding.p4"
#include "sanitise.p4"
#include "dsbp.p4"
#include "aqm.p4"

control BsIngress(inout headers_t hdr, inout local_meta_t meta) {
    Validate() validate;
    IpfConfig() ipf_config;
    PortRole() port_role;
    Sanitise() sanitise;
    Arp() arp;
    Ipv4Forwarding() ipv4_forwarding;
    DsbpClassify() dsbp_classify;
    AqmConfig() aqm_config;

    /* meta arrives zeroed: the target resets all user metadata of every
     * new packet (simple_switch does; on TNA the glue declares
     * @pa_auto_init_metadata), and every decision field's default is 0 or
     * false (PORT_ROLE_CORE, malformed_kind, drop, drop_reason,
     * punt_reason, egress_port, sanitised, trusted_tunnel, ipf_priority,
     * l3_dst, tunnel_mark, aqm_on, AQM_MODE_DROPTAIL, AQM_CLASS_NP).
     * Not re-initialising them saves 14 field writes per packet on BMv2. */
    apply {
        bool from_cpu = hdr.packet_out.isValid();
        bool had_ipv4 = hdr.ipv4.isValid();   /* before decapsulation */
        bool use_table = false;
        /* Validation first, gating nothing: the glue drops a malformed
         * packet before it acts on any other decision, and nothing below
         * has a side effect. It reads the headers as parsed (lengths, the
         * inner and transport headers, the outer header's validity), which
         * forwarding leaves alone anyway. First in the sequence, its flat
         * steps finish by Tofino-1's stage 5, beside the forwarding chain;
         * after the forwarding block (Tofino-1 has no long branches) the
         * verdict came at stage 10 and the five ingress counters that wait
         * for it needed a 13th stage (docs/tofino.md, "Resources"). */
        validate.apply(hdr, meta, had_ipv4);
        ipf_config.apply(meta);
        if (from_cpu) {
            if (hdr.packet_out.mark_priority == 1) {
                meta.ipf_priority = true;
            }
            meta.egress_port = hdr.packet_out.egress_port;
            if (hdr.packet_out.telemetry == 1) {
                /* a probe: nothing is forwarded, the glue answers with the
                 * state of the port it names */
                meta.punt_reason = PUNT_REASON_TELEMETRY;
            } else if (hdr.packet_out.lookup == 1) {
                use_table = true;
            } else if (meta.ipf_priority && hdr.ipv4.isValid()) {
                /* a frame the controller built (a tunnel packet for a
                 * flush): the mark goes on its outermost IPv4 header */
                hdr.ipv4.dscp = meta.ipf_dscp;
            }
            hdr.packet_out.setInvalid();
        } else {
            port_role.apply(meta);
            sanitise.apply(hdr, meta);
            if (meta.port_role == PORT_ROLE_ACCESS && hdr.udp.isValid() && !hdr.inner.isValid()
                    && BS_READ(hdr.udp, dst_port) == UDP_PORT_MIP_REGISTRATION) {
                meta.punt_reason = PUNT_REASON_REGISTRATION;
            } else {
                use_table = true;
            }
        }
        if (use_table) {
            if (hdr.ipv4.isValid()) {
                ipv4_forwarding.apply(hdr, meta);
            } else if (!from_cpu && hdr.arp.isValid()) {
                arp.apply(hdr, meta);
            } else {
                meta.drop = true;
                if (from_cpu) {
                    meta.drop_reason = FWD_DROP_PACKET_OUT;
                } else {
                    meta.drop_reason = FWD_DROP_UNSUPPORTED;
                }
            }
            if (from_cpu && meta.punt_reason != 0) {
                /* never loop a controller packet back to the controller:
                 * dropped (a drop overrides a punt in both glues); the
                 * reason is left as it is, so the punt decision is final
                 * where forwarding made it (Tofino stages: the TNA punt
                 * budget reads it) */
                meta.drop = true;
                meta.drop_reason = FWD_DROP_PACKET_OUT;
            }
        }
        /* Classification and the egress port's AQM configuration matter
         * only to packets that are forwarded (or probes: their port's
         * configuration); the glue ignores them otherwise, so they do not
         * wait for the drop and punt decisions (Tofino stages). */
        dsbp_classify.apply(hdr, meta);
        aqm_config.apply(meta);
    }
}

#endif
