/* Deparser: emit order is the header order of headers_t. packet_out is
 * never emitted (consumed by the ingress); packet_in and telemetry only go
 * to the CPU port. Same on every target. */
#ifndef P4HANDOFF_DEPARSER_P4
#define P4HANDOFF_DEPARSER_P4

#include "headers.p4"

control BsDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.telemetry);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.arp_ipv4);
        pkt.emit(hdr.encap);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_opts);
        pkt.emit(hdr.inner);
        pkt.emit(hdr.inner_opts);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

#endif
