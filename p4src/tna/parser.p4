/* TNA glue, part 2: the parsers.
 *
 * The ingress parser follows include/parser.p4 (BsParser) state by state,
 * with what Tofino needs instead of v1model's: the intrinsic/port metadata
 * in front, checksum verification in the parser (Checksum), and the
 * `verify` errors (which bf-p4c ignores) as transitions that record the
 * malformed kind and stop. The varbit IPv4 options are desugared by
 * bf-p4c into one state per IHL value.
 */
#ifndef P4HANDOFF_TNA_PARSER_P4
#define P4HANDOFF_TNA_PARSER_P4

#include "types.p4"

parser TnaIngressParser(packet_in pkt, out tna_headers_t hdr, out tna_ingress_meta_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_csum;
    Checksum() inner_csum;

    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        meta.ipv4_csum_err = false;
        meta.inner_csum_err = false;
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT_TNA: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.bs.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.bs.ethernet);
        transition select(hdr.bs.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    /* BsParser's one select on 48 bits in two: Tofino-1's parser matches
     * on at most 32 bits at a time (one 16-bit and two 8-bit registers) */
    state parse_arp {
        pkt.extract(hdr.bs.arp);
        transition select(hdr.bs.arp.htype, hdr.bs.arp.ptype) {
            (1, ETHERTYPE_IPV4): parse_arp_lengths;
            default: accept;
        }
    }

    state parse_arp_lengths {
        transition select(hdr.bs.arp.hlen, hdr.bs.arp.plen) {
            (6, 4): parse_arp_ipv4;
            default: accept;
        }
    }

    state parse_arp_ipv4 {
        pkt.extract(hdr.bs.arp_ipv4);
        transition accept;
    }

    /* version first, then IHL, as BsParser's two verify()s */
    state parse_ipv4 {
        pkt.extract(hdr.bs.ipv4);
        ipv4_csum.add(hdr.bs.ipv4);
        transition select(hdr.bs.ipv4.version, hdr.bs.ipv4.ihl) {
            (4, 5): parse_ipv4_payload;
            (4, 6 &&& 0xE): parse_ipv4_opts;   /* 6, 7 */
            (4, 8 &&& 0x8): parse_ipv4_opts;   /* 8..15 */
            (4, _): bad_ihl;
            default: bad_version;
        }
    }

    state parse_ipv4_opts {
        /* tells bf-p4c which IHL values reach the varbit extract */
        verify(hdr.bs.ipv4.ihl > 5, error.ParserInvalidArgument);
        pkt.extract(hdr.bs.ipv4_opts, ((bit<32>)hdr.bs.ipv4.ihl - 5) << 5);
        ipv4_csum.add(hdr.bs.ipv4_opts);
        transition parse_ipv4_payload;
    }

    state parse_ipv4_payload {
#ifdef BS_TESTGEN_CHECKSUMS_VALID
        meta.ipv4_csum_err = false;   /* P4Testgen only (docs/testgen.md): it models verify() as unknown */
#else
        meta.ipv4_csum_err = ipv4_csum.verify();
#endif
        transition select(hdr.bs.ipv4.frag_offset, hdr.bs.ipv4.protocol) {
            (0, IP_PROTO_IPIP): parse_inner;
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_inner {
        pkt.extract(hdr.bs.inner);
        inner_csum.add(hdr.bs.inner);
        transition select(hdr.bs.inner.version, hdr.bs.inner.ihl) {
            (4, 5): parse_inner_payload;
            (4, 6 &&& 0xE): parse_inner_opts;
            (4, 8 &&& 0x8): parse_inner_opts;
            (4, _): bad_ihl;
            default: bad_version;
        }
    }

    state parse_inner_opts {
        verify(hdr.bs.inner.ihl > 5, error.ParserInvalidArgument);
        pkt.extract(hdr.bs.inner_opts, ((bit<32>)hdr.bs.inner.ihl - 5) << 5);
        inner_csum.add(hdr.bs.inner_opts);
        transition parse_inner_payload;
    }

    state parse_inner_payload {
#ifdef BS_TESTGEN_CHECKSUMS_VALID
        meta.inner_csum_err = false;   /* P4Testgen only (docs/testgen.md): it models verify() as unknown */
#else
        meta.inner_csum_err = inner_csum.verify();
#endif
        transition select(hdr.bs.inner.frag_offset, hdr.bs.inner.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.bs.tcp);
        transition select(hdr.bs.tcp.data_offset) {
            0 &&& 0xC: bad_tcp_offset;         /* 0..3 */
            4: bad_tcp_offset;
            default: accept;
        }
    }

    state parse_udp {
        pkt.extract(hdr.bs.udp);
        transition accept;
    }

    state bad_version {
        meta.bs.malformed_kind = MALFORMED_IPV4_VERSION;
        transition accept;
    }

    state bad_ihl {
        meta.bs.malformed_kind = MALFORMED_IPV4_IHL;
        transition accept;
    }

    state bad_tcp_offset {
        meta.bs.malformed_kind = MALFORMED_TCP_OFFSET;
        transition accept;
    }
}

/* Egress: the bridged header, then, on the way to the CPU, packet_in and
 * telemetry (the egress fills the AQM state of a probe); the rest is
 * payload. */
parser TnaEgressParser(packet_in pkt, out tna_headers_t hdr, out tna_egress_meta_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridged);
        transition select(hdr.bridged.telemetry) {
            1: parse_telemetry;
            default: accept;
        }
    }

    state parse_telemetry {
        pkt.extract(hdr.bs.packet_in);
        pkt.extract(hdr.bs.telemetry);
        transition accept;
    }
}

#endif
