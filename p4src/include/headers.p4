/* Header and metadata types of the base-station pipeline.
 *
 * Target independent: the v1model glue (bs.p4) and the TNA glue
 * (p4src/tna/) share these. Layouts of packet_in, packet_out and telemetry are part
 * of the wire contract (docs/wire-contract.md).
 */
#ifndef P4HANDOFF_HEADERS_P4
#define P4HANDOFF_HEADERS_P4

#include "constants.p4"

/* A field of a header that may be invalid where it is read, in a condition
 * that also tests the header's validity, or in a step that computes a value
 * only used under that test. P4_16 leaves an invalid header's fields
 * unspecified; the program never depends on them (each use is guarded), so
 * every build reads the field as it is. P4Testgen models the unspecified
 * value as unknown and does not short-circuit `&&`: the guard is then unknown
 * too, and the path runs on in an undefined state whose output port it cannot
 * decide. `make testgen` alone defines BS_TESTGEN_DEFINED_READS, which reads 0
 * from an invalid header instead; the tests are replayed on the real program
 * (docs/testgen.md, "Unspecified reads"). */
#ifdef BS_TESTGEN_DEFINED_READS
#define BS_READ(h, f) ((h).isValid() ? (h).f : 0)
#else
#define BS_READ(h, f) (h).f
#endif

typedef bit<48> mac_t;
typedef bit<32> ip4_t;
typedef bit<9>  port_t;

/* Switch -> controller. P4Runtime strips it into PacketIn.metadata. */
@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;   /* where the packet came from (telemetry: the CPU port; telemetry.port is the port probed) */
    bit<8> reason;         /* PUNT_REASON_* */
    bit<7> _pad;
}

/* Controller -> switch. P4Runtime builds it from PacketOut.metadata. */
@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;    /* port to send to (ignored when lookup = 1) */
    bit<1> mark_priority;  /* treat as an IPF priority packet */
    bit<1> lookup;         /* forward through the IPv4 table instead */
    bit<1> telemetry;      /* probe: answer with the AQM state of egress_port */
    bit<4> _pad;
}

/* Telemetry answer, carried after packet_in in the payload of a PacketIn
 * with reason PUNT_REASON_TELEMETRY (24 bytes, big-endian). */
header telemetry_t {
    bit<16> port;
    bit<8>  aqm_mode;      /* AQM_MODE_*, TELEMETRY_AQM_MODE_NONE = port has no AQM */
    bit<8>  _pad;
    bit<32> occ_np;        /* current occupancy, packets, per class */
    bit<32> occ_prio;
    bit<32> occ_dummy;
    bit<32> avg;           /* average occupancy, Q16.16 packets */
    bit<32> red_count;     /* Floyd-Jacobson count + 1 (0 means count = -1) */
}

header ethernet_t {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

header arp_t {
    bit<16> htype;
    bit<16> ptype;
    bit<8>  hlen;
    bit<8>  plen;
    bit<16> oper;
}

/* Only present when arp is Ethernet/IPv4 (htype 1, ptype 0x0800, 6, 4). */
header arp_ipv4_t {
    mac_t sha;
    ip4_t spa;
    mac_t tha;
    ip4_t tpa;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ip4_t   src;
    ip4_t   dst;
}

/* IPv4 options: (ihl - 5) 32-bit words, kept opaque. */
header ipv4_opts_t {
    varbit<320> data;
}

/* TCP fixed header. Byte 12 is data_offset | dummy | res | ae: `dummy` is
 * the DSBP flag, mask TCP_BYTE12_DUMMY_MASK (0x08) of byte 12. Options stay
 * in the payload (the header is never resized here). */
header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq;
    bit<32> ack;
    bit<4>  data_offset;
    bit<1>  dummy;
    bit<2>  res;
    bit<1>  ae;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* Header order is the deparser's emit order. `ipv4` is the first IPv4
 * header after Ethernet; `inner` follows it when ipv4.protocol is
 * IP_PROTO_IPIP. `encap` is only ever pushed by this switch (a tunnel it
 * starts); decapsulation invalidates `ipv4` and its options. */
struct headers_t {
    packet_in_t  packet_in;
    telemetry_t  telemetry;
    packet_out_t packet_out;
    ethernet_t   ethernet;
    arp_t        arp;
    arp_ipv4_t   arp_ipv4;
    ipv4_t       encap;
    ipv4_t       ipv4;
    ipv4_opts_t  ipv4_opts;
    ipv4_t       inner;
    ipv4_opts_t  inner_opts;
    tcp_t        tcp;
    udp_t        udp;
}

/* Per-packet state shared by the target-independent controls. The glue
 * fills the first block from target metadata and acts on the verdicts. */
struct local_meta_t {
    /* from the target */
    port_t   ingress_port;
    bit<32>  frame_len;        /* bytes from Ethernet on (packet_out excluded) */
    bit<48>  now_us;           /* ingress timestamp, microseconds */

    /* ingress decisions */
    bit<2>   port_role;
    bit<8>   malformed_kind;   /* MALFORMED_*, 0 = well formed */
    bool     drop;
    bit<8>   drop_reason;      /* FWD_DROP_* */
    bit<8>   punt_reason;      /* PUNT_REASON_*, 0 = not punted */
    port_t   egress_port;
    bool     sanitised;
    bool     trusted_tunnel;   /* IPIP from a configured peer on a peer port */
    bool     ipf_priority;     /* IPF priority packet (AQM class PRIO) */
    bit<6>   ipf_dscp;         /* the priority codepoint in force */
    ip4_t    l3_dst;
    bit<1>   tunnel_mark;      /* tunnel action asked for the priority mark */

    /* AQM configuration of the egress port (table aqm_port) */
    bool     aqm_on;
    bit<2>   aqm_mode;
    bit<8>   aqm_profile;
    bit<32>  qlimit;           /* data packets (np + prio) admitted, packets */
    bit<32>  dummy_th;         /* dummies admitted only below this total occupancy */
    bit<32>  min_th;           /* Q16.16 */
    bit<32>  max_th;           /* Q16.16 */
    bit<5>   wq_shift;         /* w_q = 2^-wq_shift */
    bit<2>   cls;              /* AQM_CLASS_* */

    /* AQM state snapshot (read by the glue) and decision */
    bit<32>  occ_np;
    bit<32>  occ_prio;
    bit<32>  occ_dummy;
    bit<32>  avg_old;
    bit<16>  cnt_old;
    bit<32>  idle_us;          /* time the averaged queue has been empty */
    bit<32>  rnd;              /* uniform in [0, 2^PROB_BITS) */
    bit<8>   pb_level;
    bit<32>  pa_thr;           /* drop if rnd < pa_thr */
    bit<13>  decay;            /* idle decay factor, Q0.12 */
    bit<32>  avg_new;
    bit<16>  cnt_new;
    bit<2>   verdict;          /* VERDICT_* */

    /* v1model parser: an IPv4 header without options (v1model/bs.p4, V1VerifyChecksum) */
    bool     ipv4_plain;
    bool     inner_plain;

    /* kept across recirculation of a held dummy (field list 1) */
    @field_list(1) port_t recirc_port;
    @field_list(1) bit<8> recirc_passes;
}

/* AQM verdicts (internal, not on the wire) */
const bit<2> VERDICT_ADMIT = 0;
const bit<2> VERDICT_RED_DROP = 1;
const bit<2> VERDICT_OVERFLOW_DROP = 2;
const bit<2> VERDICT_DUMMY_DROP = 3;

#endif
