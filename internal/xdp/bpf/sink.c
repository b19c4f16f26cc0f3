// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// intake's INT sink (package xdp, docs/sink.md): the XDP program of a host that receives data
// packets carrying INT-MD over TCP or UDP. For a packet that INT marks (a DSCP match, or a
// UDP destination port) and whose INT it can take out, it
//   - copies the frame up to the end of INT (and a few bytes more, for the original L4 header
//     that v2.x NPT 2 leaves behind INT) with the receive time into a ring buffer, for the
//     collector's pipeline (the SmartNIC sink's "extract the metadata");
//   - removes the INT bytes: shim, metadata header, stack, v0.5 tail (and for NPT 2 the UDP
//     header the source inserted);
//   - restores what the source changed as the spec says: the DSCP (v1.0 shim, v2.x NPT 0,
//     v0.5 tail), the UDP destination port (v2.x NPT 1, v0.5 tail), the IP protocol (v2.x
//     NPT 2);
//   - fixes the IPv4 total length and header checksum, the IPv6 payload length, the UDP
//     length and checksum, the TCP checksum (incrementally: the removed bytes and the changed
//     words come out of the sum);
//   - and passes the packet on.
// Every other packet passes untouched, and so does one whose INT it cannot take out: the
// sink never drops or breaks the host's traffic. Each packet's outcome is counted by reason.
//
// Built with `go generate ./internal/xdp` (bpf2go, second line of gen.go).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

enum sink_outcome {
	sink_stripped = 0,   // INT taken out, its metadata in the ring, the packet passed
	sink_ring_full,      // INT taken out and the packet passed, but the ring was full: its metadata is lost
	sink_pass_other,     // no INT marking (or not IP, TCP or UDP): passed untouched
	sink_pass_fragment,  // an IPv4 fragment: passed untouched
	sink_pass_ipv6_ext,  // IPv6 with extension headers: passed untouched
	sink_pass_malformed, // marked, but the IP or L4 header is cut short or inconsistent
	sink_pass_int,       // marked, but INT does not parse (shim type, version, length)
	sink_pass_long,      // marked, but the headers or INT are longer than the sink reads
	sink_pass_error,     // a helper failed before the packet was changed
	num_sink_outcomes,
};

const enum sink_outcome *const btf_sink_outcome = 0;

// The most bytes of headers before INT (Ethernet, two VLAN tags, IPv4 with options, TCP with
// options: 14 + 8 + 60 + 60), of INT (NPT 2's UDP header, the shim and 255 words), and what
// is copied after INT for the original L4 header.
#define SINK_HDR_MAX 142
#define SINK_INT_MAX 1032
#define SINK_AFTER 64
#define SINK_COPY (SINK_HDR_MAX + SINK_INT_MAX + SINK_AFTER)

// What INT marks (set by the loader): up to 4 DSCP matches (dscp & mask == val & mask) and a
// UDP destination port (network order, 0: none).
volatile const __u8 sink_dscp_n = 0;
volatile const __u8 sink_dscp_val[4] = {};
volatile const __u8 sink_dscp_mask[4] = {};
volatile const __u16 sink_port = 0;
// Which shims are taken out: bit 0 v0.5, bit 1 v1.0, bit 2 v2.x, bit 3 Intel host-int's
// type 3 (quirks.host_int).
volatile const __u8 sink_versions = 7;
// INT after the first 20 bytes of TCP, before its options (tcp_shim_before_options, and
// host-int).
volatile const __u8 sink_tcp_before_opts = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, num_sink_outcomes);
	__type(key, __u32);
	__type(value, __u64);
} sink_counts SEC(".maps");

// A record of the ring: the receive time (CLOCK_MONOTONIC ns), the receiving interface, the
// bytes of frame copied and the frame's length, then the frame from its first byte.
struct sink_rec {
	__u64 time;
	__u32 ifindex;
	__u16 len;
	__u16 wire_len;
	__u8 data[2048 + 512]; // room for masked offsets (below 2048) plus a checksum chunk (512)
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_rec);
} sink_scratch SEC(".maps");

// Sized by the loader (sinks[].ring).
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} sink_ring SEC(".maps");

static __always_inline int out(__u32 o)
{
	__u64 *c = bpf_map_lookup_elem(&sink_counts, &o);
	if (c)
		*c += 1;
	return XDP_PASS;
}

// fold folds a one's-complement sum to 16 bits.
static __always_inline __u16 fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

// swap16 adds to a one's-complement sum the change of a 16-bit word from o to n (both as
// they lie in memory: the sum is byte-order independent, RFC 1071).
static __always_inline __u64 swap16(__u16 o, __u16 n) { return (__u16)~o + (__u64)n; }

static __always_inline __u16 ld16(__u8 *b, __u32 o) { return *(__u16 *)(b + o); }
static __always_inline void st16(__u8 *b, __u32 o, __u16 v) { *(__u16 *)(b + o) = v; }

// What to restore: the DSCP, the destination port, the IP protocol.
#define R_DSCP 1
#define R_PORT 2
#define R_PROTO 4

SEC("xdp")
int intake_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *p = data;
	__u32 l3 = 14;
	if (p + 14 > (__u8 *)end)
		return out(sink_pass_other);
	__u16 et = *(__u16 *)(p + 12);
	for (int i = 0; i < 2; i++) {
		if (et != bpf_htons(ETH_P_8021Q) && et != bpf_htons(ETH_P_8021AD))
			break;
		__u8 *v = p + l3;
		if (v + 4 > (__u8 *)end)
			return out(sink_pass_other);
		et = *(__u16 *)(v + 2);
		l3 += 4;
	}
	__u8 *ip = p + l3;
	__u8 dscp, proto;
	__u32 ihl, iplen; // iplen: bytes from l3 that the IP header says the packet has
	int v6 = 0;
	if (et == bpf_htons(ETH_P_IP)) {
		if (ip + 20 > (__u8 *)end)
			return out(sink_pass_other);
		proto = ip[9];
		if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
			return out(sink_pass_other);
		if (*(__u16 *)(ip + 6) & bpf_htons(0x3fff))
			return out(sink_pass_fragment);
		ihl = (ip[0] & 0x0f) * 4;
		if (ip[0] >> 4 != 4 || ihl < 20)
			return out(sink_pass_other);
		dscp = ip[1] >> 2;
		iplen = bpf_ntohs(*(__u16 *)(ip + 2));
	} else if (et == bpf_htons(ETH_P_IPV6)) {
		if (ip + 40 > (__u8 *)end)
			return out(sink_pass_other);
		proto = ip[6];
		if (proto != IPPROTO_TCP && proto != IPPROTO_UDP) {
			if (proto == 0 || proto == 43 || proto == 44 || proto == 60)
				return out(sink_pass_ipv6_ext);
			return out(sink_pass_other);
		}
		dscp = ((ip[0] & 0x0f) << 2) | (ip[1] >> 6);
		ihl = 40;
		iplen = 40 + bpf_ntohs(*(__u16 *)(ip + 4));
		v6 = 1;
	} else {
		return out(sink_pass_other);
	}
	__u8 *l4p = ip + ihl;
	if (proto == IPPROTO_TCP) {
		if (l4p + 20 > (__u8 *)end)
			return out(sink_pass_other);
	} else if (l4p + 8 > (__u8 *)end) {
		return out(sink_pass_other);
	}
	__u16 dport = *(__u16 *)(l4p + 2);

	// Marked? A port first (it says where INT is), then the DSCP.
	int by_port = sink_port && proto == IPPROTO_UDP && dport == sink_port;
	int by_dscp = 0;
	for (int i = 0; i < 4; i++) {
		if (i < sink_dscp_n && (dscp & sink_dscp_mask[i]) == (sink_dscp_val[i] & sink_dscp_mask[i]))
			by_dscp = 1;
	}
	if (!by_port && !by_dscp)
		return out(sink_pass_other);

	__u32 pkt = (__u8 *)end - p;
	__u32 l4 = l3 + ihl;
	if (iplen < ihl || l3 + iplen > pkt)
		return out(sink_pass_malformed);
	__u32 seg = l3 + iplen; // the end of the L4 segment
	__u32 pay;              // where INT starts
	__u16 ulen = 0;
	if (proto == IPPROTO_UDP) {
		ulen = bpf_ntohs(*(__u16 *)(l4p + 4));
		if (ulen < 8 || l4 + ulen > seg)
			return out(sink_pass_malformed);
		seg = l4 + ulen;
		pay = l4 + 8;
	} else {
		__u32 doff = (l4p[12] >> 4) * 4;
		if (doff < 20 || l4 + doff > seg)
			return out(sink_pass_malformed);
		pay = sink_tcp_before_opts ? l4 + 20 : l4 + doff;
	}
	if (pay > SINK_HDR_MAX)
		return out(sink_pass_long);
	__u8 *sh = p + pay;
	if (pay + 4 > seg || sh + 4 > (__u8 *)end)
		return out(sink_pass_int);

	// The shim: how long INT is (n bytes from pay), where the bytes to take out start (s),
	// and what to restore. The v0.5 and v1.0 headers are told apart by the MD header's
	// version, read below from the copy.
	__u32 n, s = pay, restore = 0;
	__u8 new_dscp = 0, new_proto = proto;
	__u16 new_port = dport;
	__u8 t = sh[0];
	int old = t == 0x01 || (t == 0x03 && (sink_versions & 8)); // v1.0, v0.5, host-int
	if (t >> 4 == 1 || t >> 4 == 3) { // v2.x: MD (type 1) or MX (type 3)
		__u32 npt = (t >> 2) & 3;
		if (!(sink_versions & 4) || (t & 3) || npt == 3)
			return out(sink_pass_int);
		n = 4 + (__u32)sh[1] * 4; // Length excludes the shim
		if (n < 16)
			return out(sink_pass_int);
		if (npt == 0) {
			if (!by_dscp || by_port)
				return out(sink_pass_int);
			new_dscp = sh[3] >> 2;
			restore = R_DSCP;
		} else {
			if (!by_port || proto != IPPROTO_UDP)
				return out(sink_pass_int);
			if (npt == 1) {
				new_port = *(__u16 *)(sh + 2);
				restore = R_PORT;
			} else {
				new_proto = sh[3];
				if (new_proto != IPPROTO_TCP && new_proto != IPPROTO_UDP)
					return out(sink_pass_int);
				restore = R_PROTO;
				s = l4; // the UDP header the source inserted goes too
			}
		}
	} else if (old) {
		n = (__u32)sh[2] * 4; // includes the shim (and a v0.5 tail)
		if (n < 12)
			return out(sink_pass_int);
	} else {
		return out(sink_pass_int);
	}
	if (pay + n > seg)
		return out(sink_pass_int);
	if (n > 1024)
		return out(sink_pass_long);
	__u32 cut = pay + n - s;

	// The rest of the checks read the INT bytes: copy the frame up to INT's end (and a
	// little more) into the record, which then goes to the ring as it is.
	__u32 z = 0;
	struct sink_rec *rec = bpf_map_lookup_elem(&sink_scratch, &z);
	if (!rec)
		return out(sink_pass_error);
	__u32 copy = pay + n + SINK_AFTER;
	if (copy > pkt)
		copy = pkt;
	if (copy > SINK_COPY || copy < 14) // (never below: the verifier wants a bound)
		return out(sink_pass_long);
	if (bpf_xdp_load_bytes(ctx, 0, rec->data, copy))
		return out(sink_pass_error);
	__u8 *b = rec->data;
	if (old) {
		__u8 ver = b[(pay + 4) & 2047] >> 4;
		if (t == 0x01 && ver == 1) { // v1.0: the shim's last byte keeps the DSCP
			if (!(sink_versions & 2) || !by_dscp || by_port)
				return out(sink_pass_int);
			new_dscp = b[(pay + 3) & 2047] >> 2;
			restore = R_DSCP;
		} else if (ver == 0) { // v0.5 (host-int too): the tail keeps protocol, port, DSCP
			if (t == 0x01 && !(sink_versions & 1))
				return out(sink_pass_int);
			if (n < (t == 0x03 ? 20 : 16))
				return out(sink_pass_int);
			__u32 tl = (pay + n - 4) & 2047;
			if (b[tl] != proto)
				return out(sink_pass_int);
			if (by_port) {
				new_port = ld16(b, (tl + 1) & 2047);
				restore = R_PORT;
			} else {
				new_dscp = b[(tl + 3) & 2047] >> 2;
				restore = R_DSCP;
			}
		} else {
			return out(sink_pass_int);
		}
	} else if (b[(pay + 4) & 2047] >> 4 != 2) {
		return out(sink_pass_int);
	}
	if (restore == R_PROTO) {
		// NPT 2: the original L4 header follows INT, and the packet will be judged by it:
		// its length must be what is left (UDP), its data offset within it (TCP). A stack
		// whose Length lies puts something else there.
		__u32 o4 = (pay + n) & 2047, left = seg - pay - n;
		if (new_proto == IPPROTO_UDP) {
			if (copy < pay + n + 8 || bpf_ntohs(ld16(b, (o4 + 4) & 2047)) != left)
				return out(sink_pass_int);
		} else {
			__u32 doff = (b[(o4 + 12) & 2047] >> 4) * 4;
			if (copy < pay + n + 20 || doff < 20 || doff > left)
				return out(sink_pass_int);
		}
	}

	rec->time = bpf_ktime_get_ns();
	rec->ifindex = ctx->ingress_ifindex;
	rec->len = copy;
	rec->wire_len = pkt;
	__u32 o = sink_stripped;
	if (bpf_ringbuf_output(&sink_ring, rec, 16 + copy, BPF_RB_NO_WAKEUP))
		o = sink_ring_full;

	// The L4 header and its checksum, unless NPT 2 (the original L4 header follows INT,
	// untouched): the new sum is the old one without the bytes taken out and with the
	// changed words.
	s &= 255;
	l3 &= 255;
	l4 &= 255;
	if (restore != R_PROTO) {
		__u32 csum = proto == IPPROTO_UDP ? l4 + 6 : l4 + 16;
		__u16 c = ld16(b, csum);
		// An IPv4 UDP datagram without a checksum keeps none.
		int fix = proto == IPPROTO_TCP || v6 || c != 0;
		__u64 sum = 0;
		if (fix) {
			__u32 left = cut & 2047, at = s;
			for (int i = 0; i < 3; i++) {
				__u32 k = left > 512 ? 512 : left;
				if (k == 0)
					break;
				__s64 d = bpf_csum_diff((__be32 *)(b + (at & 2047)), k, 0, 0, 0);
				if (d < 0)
					return out(sink_pass_error); // the packet is not changed yet
				sum += (__u32)d;
				left -= k;
				at += k;
			}
			if (left)
				return out(sink_pass_error);
		}
		if (proto == IPPROTO_UDP) {
			// The UDP length is in the header and in the pseudo-header.
			__u16 nl = bpf_htons(ulen - cut);
			sum += 2 * swap16(bpf_htons(ulen), nl);
			st16(b, l4 + 4, nl);
		} else {
			__u32 l4len = iplen - ihl; // the pseudo-header's TCP length
			sum += swap16(bpf_htons(l4len), bpf_htons(l4len - cut));
		}
		if (restore == R_PORT) {
			sum += swap16(dport, new_port);
			st16(b, l4 + 2, new_port);
		}
		if (fix) {
			__u16 nc = ~fold((__u64)(__u16)~c + sum);
			if (proto == IPPROTO_UDP && nc == 0)
				nc = 0xffff;
			st16(b, csum, nc);
		}
	}
	// The IP header.
	if (v6) {
		st16(b, l3 + 4, bpf_htons(iplen - 40 - cut));
		if (restore == R_DSCP) {
			b[l3] = (b[l3] & 0xf0) | (new_dscp >> 2);
			b[l3 + 1] = (b[l3 + 1] & 0x3f) | (new_dscp << 6);
		}
		if (restore == R_PROTO)
			b[l3 + 6] = new_proto;
	} else {
		// The header checksum, updated for the three words that change (RFC 1624).
		__u16 w0 = ld16(b, l3), w4 = ld16(b, l3 + 8);
		__u64 sum = swap16(bpf_htons(iplen), bpf_htons(iplen - cut));
		st16(b, l3 + 2, bpf_htons(iplen - cut));
		if (restore == R_DSCP)
			b[l3 + 1] = (new_dscp << 2) | (b[l3 + 1] & 3);
		if (restore == R_PROTO)
			b[l3 + 9] = new_proto;
		sum += swap16(w0, ld16(b, l3)) + swap16(w4, ld16(b, l3 + 8));
		st16(b, l3 + 10, ~fold((__u64)(__u16)~ld16(b, l3 + 10) + sum));
	}
	// The headers move forward over the INT bytes, and the frame starts cut bytes later.
	if (s < 14 || bpf_xdp_store_bytes(ctx, cut, b, s))
		return out(sink_pass_error);
	if (bpf_xdp_adjust_head(ctx, (int)cut))
		return out(sink_pass_error);
	return out(o);
}

char _license[] SEC("license") = "Dual BSD/GPL";
