/* Target-independent parser: Ethernet, ARP, IPv4 with options,
 * IPv4-in-IPv4 (one level of nesting parsed), TCP, UDP.
 *
 * Malformed input is never undefined: a failed `verify` or a packet that
 * ends inside a header stops the parser with an error, which the ingress
 * glue turns into a counted drop (counter `malformed`). Lengths that the
 * parser cannot check (IPv4 total length, TCP data offset vs. payload, UDP
 * length) are checked by the Validate control.
 */
#ifndef P4HANDOFF_PARSER_P4
#define P4HANDOFF_PARSER_P4

#include "headers.p4"

error {
    Ipv4BadVersion,
    Ipv4BadIhl,
    TcpBadDataOffset
}

parser BsParser(packet_in pkt, out headers_t hdr, in port_t ingress_port) {
    state start {
        transition select(ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        transition select(hdr.arp.htype, hdr.arp.ptype, hdr.arp.hlen, hdr.arp.plen) {
            (1, ETHERTYPE_IPV4, 6, 4): parse_arp_ipv4;
            default: accept;
        }
    }

    state parse_arp_ipv4 {
        pkt.extract(hdr.arp_ipv4);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.Ipv4BadVersion);
        verify(hdr.ipv4.ihl >= 5, error.Ipv4BadIhl);
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_payload;
            default: parse_ipv4_opts;
        }
    }

    state parse_ipv4_opts {
        pkt.extract(hdr.ipv4_opts, ((bit<32>)hdr.ipv4.ihl - 5) << 5);
        transition parse_ipv4_payload;
    }

    /* Only first fragments (offset 0) carry a transport header. */
    state parse_ipv4_payload {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_IPIP): parse_inner;
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_inner {
        pkt.extract(hdr.inner);
        verify(hdr.inner.version == 4, error.Ipv4BadVersion);
        verify(hdr.inner.ihl >= 5, error.Ipv4BadIhl);
        transition select(hdr.inner.ihl) {
            5: parse_inner_payload;
            default: parse_inner_opts;
        }
    }

    state parse_inner_opts {
        pkt.extract(hdr.inner_opts, ((bit<32>)hdr.inner.ihl - 5) << 5);
        transition parse_inner_payload;
    }

    /* A third IPv4 level (IPIP inside the inner header) is left unparsed:
     * it is forwarded on the inner header like any other payload. */
    state parse_inner_payload {
        transition select(hdr.inner.frag_offset, hdr.inner.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        verify(hdr.tcp.data_offset >= 5, error.TcpBadDataOffset);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

#endif
