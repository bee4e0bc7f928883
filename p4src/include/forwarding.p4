/* Forwarding: port roles, the IPF codepoint in force, ARP for the
 * switch's gateway addresses, tunnel termination, and the IPv4 table that
 * delivers, tunnels, punts or drops. All tables are filled by the
 * controller; names are global (@name(".x")) so P4Info names stay short
 * and identical across targets. */
#ifndef P4HANDOFF_FORWARDING_P4
#define P4HANDOFF_FORWARDING_P4

#include "headers.p4"

const bit<8> TUNNEL_TTL = 64;
const bit<16> IPV4_HEADER_BYTES = 20;

/* Role of the port a packet arrived on; ports without an entry are core
 * (untrusted). */
control PortRole(inout local_meta_t meta) {
    @name(".set_port_role")
    action set_port_role(bit<2> role) {
        meta.port_role = role;
    }

    @name(".port_role")
    table port_role {
        key = { meta.ingress_port : exact @name("port"); }
        actions = { set_port_role; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_PORT_ROLE;
    }

    apply { port_role.apply(); }
}

/* The IPF priority codepoint in force: the default action of a keyless
 * table, so the controller changes it with one P4Runtime write. */
control IpfConfig(inout local_meta_t meta) {
    @name(".set_ipf_dscp")
    action set_ipf_dscp(bit<6> dscp) {
        meta.ipf_dscp = dscp;
    }

    @name(".ipf_config")
    table ipf_config {
        actions = { set_ipf_dscp; }
        default_action = set_ipf_dscp(DSCP_IPF_PRIORITY_DEFAULT);
    }

    apply { ipf_config.apply(); }
}

/* ARP: requests for one of the switch's gateway addresses are answered
 * here, out of the port they came in on; every other ARP packet goes to
 * the controller. */
control Arp(inout headers_t hdr, inout local_meta_t meta) {
    @name(".arp_reply")
    action arp_reply(mac_t mac) {
        ip4_t target = hdr.arp_ipv4.tpa;
        hdr.ethernet.dst = hdr.ethernet.src;
        hdr.ethernet.src = mac;
        hdr.arp.oper = 2;
        hdr.arp_ipv4.tha = hdr.arp_ipv4.sha;
        hdr.arp_ipv4.tpa = hdr.arp_ipv4.spa;
        hdr.arp_ipv4.sha = mac;
        hdr.arp_ipv4.spa = target;
        meta.egress_port = meta.ingress_port;
    }

    @name(".arp_gateway")
    table arp_gateway {
        key = { hdr.arp_ipv4.tpa : exact @name("target_addr"); }
        actions = { arp_reply; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_ARP_GATEWAY;
    }

    apply {
        meta.punt_reason = PUNT_REASON_ARP;
        if (hdr.arp_ipv4.isValid() && hdr.arp.oper == 1) {
            if (arp_gateway.apply().hit) {
                meta.punt_reason = 0;
            }
        }
    }
}

/* IPv4 forwarding on the effective header: the inner one after
 * decapsulation, the first one otherwise (transit tunnels are forwarded on
 * their outer header). */
control Ipv4Forwarding(inout headers_t hdr, inout local_meta_t meta) {
    ip4_t tun_src = 0;
    ip4_t tun_dst = 0;
    bool is_tunnel = false;
    bool routed = false;

    @name(".decap")
    action decap() {
        hdr.ipv4.setInvalid();
        hdr.ipv4_opts.setInvalid();
    }

    /* tunnels addressed to this switch */
    @name(".tunnel_term")
    table tunnel_term {
        key = { hdr.ipv4.dst : exact @name("dst_addr"); }
        actions = { decap; @defaultonly NoAction; }
        default_action = NoAction();
        size = SIZE_TUNNEL_TERM;
    }

    @name(".deliver")
    action deliver(port_t port, mac_t src_mac, mac_t dst_mac) {
        meta.egress_port = port;
        hdr.ethernet.src = src_mac;
        hdr.ethernet.dst = dst_mac;
        routed = true;
    }

    @name(".tunnel")
    action tunnel(port_t port, mac_t src_mac, mac_t dst_mac, ip4_t src_addr, ip4_t dst_addr, bit<1> mark) {
        meta.egress_port = port;
        hdr.ethernet.src = src_mac;
        hdr.ethernet.dst = dst_mac;
        tun_src = src_addr;
        tun_dst = dst_addr;
        meta.tunnel_mark = mark;
        is_tunnel = true;
        routed = true;
    }

    /* to the controller with a reason it chooses (PUNT_REASON_BUFFER:
     * divert a mobile host's packets to its buffer; PUNT_REASON_NO_ROUTE).
     * Reason 0 means "not punted" inside the pipeline, so the apply block
     * turns it into PUNT_REASON_NO_ROUTE rather than sending the packet to
     * port 0 (a condition inside an action is beyond Tofino's action ALUs). */
    @name(".fwd_punt")
    action fwd_punt(bit<8> reason) {
        meta.punt_reason = reason;
    }

    @name(".fwd_drop")
    action fwd_drop() {
        meta.drop = true;
        meta.drop_reason = FWD_DROP_TABLE;
    }

    @name(".ipv4_fwd")
    table ipv4_fwd {
        key = { meta.l3_dst : lpm @name("dst_addr"); }
        actions = { deliver; tunnel; fwd_punt; fwd_drop; }
        default_action = fwd_drop();
        size = SIZE_IPV4_FWD;
    }

    /* the outer header of a tunnel this switch starts; dscp is chosen by
     * the caller (no conditions inside actions: Tofino) */
    action push_tunnel_header(bit<6> dscp, bit<2> ecn, bit<16> total_len) {
        hdr.encap.setValid();
        hdr.encap.version = 4;
        hdr.encap.ihl = 5;
        hdr.encap.dscp = dscp;
        hdr.encap.ecn = ecn;
        hdr.encap.total_len = total_len + IPV4_HEADER_BYTES;
        hdr.encap.identification = 0;
        hdr.encap.flags = 0;
        hdr.encap.frag_offset = 0;
        hdr.encap.ttl = TUNNEL_TTL;
        hdr.encap.protocol = IP_PROTO_IPIP;
        hdr.encap.hdr_checksum = 0;
        hdr.encap.src = tun_src;
        hdr.encap.dst = tun_dst;
    }

    /* The effective IPv4 header is `ipv4` while it is valid, else `inner`
     * (after decapsulation). Every access below is guarded by validity. */
    apply {
        bit<8> ttl = 0;
        bit<6> dscp = 0;
        bit<2> ecn = 0;
        bit<16> total_len = 0;
        if (hdr.inner.isValid()) {
            tunnel_term.apply();
        }
        if (hdr.ipv4.isValid()) {
            meta.l3_dst = hdr.ipv4.dst;
            ttl = hdr.ipv4.ttl;
            /* what a tunnel this switch starts carries over from ipv4,
             * unless an inner header overrides it below: read here, where
             * ipv4 is known valid (ipv4 is only ever invalidated when inner
             * is valid) */
            dscp = hdr.ipv4.dscp;
            ecn = hdr.ipv4.ecn;
            total_len = hdr.ipv4.total_len;
        } else if (hdr.inner.isValid()) {
            meta.l3_dst = hdr.inner.dst;
            ttl = hdr.inner.ttl;
        }
        switch (ipv4_fwd.apply().action_run) {
            fwd_punt: {
                if (meta.punt_reason == 0) {
                    meta.punt_reason = PUNT_REASON_NO_ROUTE;
                }
            }
        }
        /* what a tunnel this switch starts carries, chosen for every packet
         * (only push_tunnel_header below reads it), in one flat step beside
         * the TTL decision rather than nested under it (Tofino stages): the
         * priority mark if the route marks (tunnel_mark, set only by the
         * tunnel action) or the packet is already priority, else the inner
         * codepoint (already sanitised: never the priority codepoint), so
         * LE dummies stay LE; without inner, ipv4's (read above). A marking
         * tunnel makes the packet a priority packet. */
        if (meta.tunnel_mark == 1) {
            meta.ipf_priority = true;
            dscp = meta.ipf_dscp;
        } else if (meta.ipf_priority) {
            dscp = meta.ipf_dscp;
        } else if (hdr.inner.isValid()) {
            dscp = hdr.inner.dscp;
        }
        /* the inner header if present (a transit tunnel's, or after
         * decapsulation), else ipv4's (read above) */
        if (hdr.inner.isValid()) {
            ecn = hdr.inner.ecn;
            total_len = hdr.inner.total_len;
        }
        if (routed && ttl <= 1) {
            meta.drop = true;
            meta.drop_reason = FWD_DROP_TTL;
        } else if (routed) {
            if (hdr.ipv4.isValid()) {
                hdr.ipv4.ttl = ttl - 1;
            } else if (hdr.inner.isValid()) {
                hdr.inner.ttl = ttl - 1;
            }
            if (is_tunnel) {
                if (hdr.ipv4.isValid() && hdr.inner.isValid()) {
                    /* a transit tunnel re-encapsulated: its old outer header goes */
                    hdr.ipv4.setInvalid();
                    hdr.ipv4_opts.setInvalid();
                }
                push_tunnel_header(dscp, ecn, total_len);
            }
        }
    }
}

#endif
