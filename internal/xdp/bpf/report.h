// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The kernel's telemetry report parser (detect.kernel, docs/xdp.md "Detection in the
// kernel"). It reads the shapes that make up nearly all of a fabric's reports, exactly as
// package wire decodes them: a Telemetry Report v2.0 packet with one individual report
// (RepType 0 or 1, its RepMdBits hop included; InType 3, 4 or 5), a TR v1.0 report (its
// RepMdBits hop included; NProt 0, 1 or 2) or a TR v0.5 report (NProto 0, 1 or 2, the drop
// or local header's hop included), whose inner packet (Ethernet with at most one VLAN tag,
// IPv4 or IPv6 without extension headers) is TCP or UDP with INT-MD v2.x (NPT 0) or v1.0 at
// the L4 payload, up to KMAX_HOPS hops in all. Anything else,
// or anything about which package wire might decide otherwise (a quirk, a tunnel, a cut or
// inconsistent header), is left to user space: parse returns the reason, and the frame goes
// up through AF_XDP as in mode xdp. The parser accepts less than the decoder, never
// something else.

#define KMAX_HOPS 8
#define KBUF 1024 // the longest report the parser reads (bytes of UDP payload)

// The hop fields: telemetry.Field's bits.
#define F_NODE (1 << 0)
#define F_IN_PORT (1 << 1)
#define F_EG_PORT (1 << 2)
#define F_HOP_LAT (1 << 3)
#define F_QUEUE_ID (1 << 4)
#define F_QUEUE_OCC (1 << 5)
#define F_IN_TS (1 << 6)
#define F_EG_TS (1 << 7)
#define F_L2_IN (1 << 8)
#define F_L2_EG (1 << 9)
#define F_TX_UTIL (1 << 10)
#define F_BUF_ID (1 << 11)
#define F_BUF_OCC (1 << 12)

struct khop {
	__u64 in_ts, eg_ts;
	__u32 node, in_port, eg_port, lat, qocc, tx, bocc, l2_in, l2_eg;
	__u16 fields, qid;
	__u8 bid, pad[3];
};

// A flow 5-tuple laid out as telemetry.FlowKey (IPv4 as IPv4-mapped IPv6), padded to 40.
struct fkey {
	__u8 src[16], dst[16];
	__u16 sport, dport;
	__u8 proto, v6, pad[2];
};

// The parsed report: package telemetry's normal form, as far as detection and the flow
// cache read it. Hops are newest first.
struct krep {
	__u64 now;        // receive time, CLOCK_MONOTONIC ns
	__u32 node, seq;  // the reporting node (has_node) and the report's sequence number
	__u32 its;        // the report header's ingress timestamp (has_its: TR v0.5, v1.0)
	__u8 hw_id, drop, has_reason, reason;
	__u8 has_flow, nhops, queue_rx, has_node, has_its, pad[3];
	struct fkey flow;
	struct khop hop[KMAX_HOPS];
};

// Why a report went to user space instead (lift_* counters; package xdp's Lift constants are
// checked against it through bpf2go's intakeLift).
enum lift {
	lift_version = 0, // not a Telemetry Report of v0.5, v1.0 or v2.0 the parser reads
	lift_batch,       // several individual reports, or a TLV/other inner type
	lift_rep_type,    // RepType other than 0 and 1, or RepMdBits the parser does not read
	lift_inner,       // the inner packet: VLANs, fragments, IPv6 extension headers, not TCP/UDP, cut
	lift_tunnel,      // VXLAN-GPE, Geneve or the INT port: user space's tunnel decoding
	lift_int,         // INT not v2.x MD with NPT 0, or a shim that user space must judge
	lift_hops,        // more than KMAX_HOPS hops
	lift_long,        // a datagram longer than KBUF
	num_lifts,
};

// The decoder settings the parser follows (the listener's decoder: DSCP values and masks,
// probe_shim, the tunnel and INT ports); set by the loader.
volatile const __u8 dec_dscp_n = 2;
volatile const __u8 dec_dscp_val[4] = {0x17, 0x01};
volatile const __u8 dec_dscp_mask[4] = {0x3f, 0x01};
volatile const __u8 dec_probe = 1;
volatile const __u16 dec_gpe_port = 4790;
volatile const __u16 dec_geneve_port = 6081;
volatile const __u16 dec_int_port = 0;
// dec_quirks: the listener's decoder has a quirk on; those that change what the parser
// reads (the TR v0.5 layout under Ver 1, INT v1.0 item sizes) are user space's.
volatile const __u8 dec_quirks = 0;

// The parse buffer: the report copied from the frame, so that reads at offsets that depend
// on the packet are plain reads of a map value the verifier can bound (off & (KBUF-1)).
struct pbuf {
	__u8 b[KBUF + 64];
	struct krep r;
	// The hop block's plan (plan()): the offset of the item of bits 0-8, 0xff when absent.
	__u8 at[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pbuf);
} pbufs SEC(".maps");

// OFF bounds an offset into the buffer for the verifier. The mask is written in assembly:
// where clang can prove an offset small it drops a C mask, and the verifier, whose bounds
// are coarser, then refuses the read.
static __always_inline __u32 OFF(__u32 o)
{
	asm volatile("%[o] &= 1023" : [o] "+r"(o));
	return o;
}

// HOP bounds a hop index the same way.
static __always_inline __u32 HOP(__u32 i)
{
	asm volatile("%[i] &= 7" : [i] "+r"(i));
	return i;
}

static __always_inline __u32 rd32(__u8 *b, __u32 o)
{
	return __builtin_bswap32(*(__u32 *)(b + OFF(o)));
}

static __always_inline __u16 rd16(__u8 *b, __u32 o)
{
	return __builtin_bswap16(*(__u16 *)(b + OFF(o)));
}

static __always_inline __u64 rd64(__u8 *b, __u32 o)
{
	return __builtin_bswap64(*(__u64 *)(b + OFF(o)));
}

// set_item decodes item `bit` (0 = MSB) at b[o] into h, as wire's decodeHop and tr20Metadata
// do (all ones is absent). Bit 0 (node id) is the caller's.
static __always_inline void set_item(struct khop *h, __u8 *b, __u32 o, __u32 bit, int v1)
{
	__u32 x = rd32(b, o);
	switch (bit) {
	case 0:
		if (x != 0xffffffff) {
			h->node = x;
			h->fields |= F_NODE;
		}
		break;
	case 1:
		if (x >> 16 != 0xffff) {
			h->in_port = x >> 16;
			h->fields |= F_IN_PORT;
		}
		if ((x & 0xffff) != 0xffff) {
			h->eg_port = x & 0xffff;
			h->fields |= F_EG_PORT;
		}
		break;
	case 2:
		if (x != 0xffffffff) {
			h->lat = x;
			h->fields |= F_HOP_LAT;
		}
		break;
	case 3:
		if (x >> 24 != 0xff) {
			h->qid = x >> 24;
			h->fields |= F_QUEUE_ID;
		}
		if ((x & 0xffffff) != 0xffffff) {
			h->qocc = x & 0xffffff;
			h->fields |= F_QUEUE_OCC;
		}
		break;
	case 4: {
		__u64 t = v1 ? x : rd64(b, o);
		if (t != (v1 ? 0xffffffffULL : ~0ULL)) {
			h->in_ts = t;
			h->fields |= F_IN_TS;
		}
		break;
	}
	case 5: {
		__u64 t = v1 ? x : rd64(b, o);
		if (t != (v1 ? 0xffffffffULL : ~0ULL)) {
			h->eg_ts = t;
			h->fields |= F_EG_TS;
		}
		break;
	}
	case 6: {
		__u32 y = rd32(b, o + 4);
		if (x != 0xffffffff) {
			h->l2_in = x;
			h->fields |= F_L2_IN;
		}
		if (y != 0xffffffff) {
			h->l2_eg = y;
			h->fields |= F_L2_EG;
		}
		break;
	}
	case 7:
		if (x != 0xffffffff) {
			h->tx = x;
			h->fields |= F_TX_UTIL;
		}
		break;
	case 8:
		if (v1) // reserved before v2.x
			break;
		if (x >> 24 != 0xff) {
			h->bid = x >> 24;
			h->fields |= F_BUF_ID;
		}
		if ((x & 0xffffff) != 0xffffff) {
			h->bocc = x & 0xffffff;
			h->fields |= F_BUF_OCC;
		}
		break;
	}
}

// The offset of item `bit` in a block of bitmap bm, and a block's size: 4 bytes an item,
// 8 for the wide ones: bits 4-6 in v2.x (mask 0x0e00), bit 6 in v1.0 (0x0200).
// Branch-free, so that the verifier sees one path per hop.
static __always_inline __u32 wide(int v1) { return v1 ? 0x0200 : 0x0e00; }

static __always_inline __u32 item_at(__u32 bm, __u32 bit, int v1)
{
	__u32 before = bm & (0xffff0000 >> bit) & 0xffff;
	return 4 * __builtin_popcount(before) + 4 * __builtin_popcount(before & wide(v1));
}

static __always_inline __u32 bitmap_size(__u32 bm, int v1)
{
	return 4 * __builtin_popcount(bm & 0xffff) + 4 * __builtin_popcount(bm & wide(v1));
}

// plan sets pb->at for bitmap bm: once per stack, not once per hop.
static __always_inline void plan(struct pbuf *pb, __u32 bm, int v1)
{
	for (__u32 bit = 0; bit < 9; bit++)
		pb->at[bit] = bm & (0x8000 >> bit) ? item_at(bm, bit, v1) : 0xff;
}

#define ITEM(h, b, o, at, bit, v1)                                     \
	if (at[bit] != 0xff)                                          \
		set_item(h, b, (o) + at[bit], bit, v1)

// hop_items decodes one hop block at pb->b[o] into hop k by the plan in pb->at (bits 0-8
// read, the rest skipped by size). A global function, verified once: inline, the
// verifier would walk each hop's branches again.
__attribute__((noinline)) int hop_items(struct pbuf *pb, __u32 k, __u32 o, int v1)
{
	if (!pb)
		return 0;
	__u8 *b = pb->b;
	struct khop *h = &pb->r.hop[HOP(k)];
	ITEM(h, b, o, pb->at, 0, v1);
	ITEM(h, b, o, pb->at, 1, v1);
	ITEM(h, b, o, pb->at, 2, v1);
	ITEM(h, b, o, pb->at, 3, v1);
	ITEM(h, b, o, pb->at, 4, v1);
	ITEM(h, b, o, pb->at, 5, v1);
	ITEM(h, b, o, pb->at, 6, v1);
	ITEM(h, b, o, pb->at, 7, v1);
	ITEM(h, b, o, pb->at, 8, v1);
	return 0;
}

// parse_int parses INT-MD at b[o] (the L4 payload, which ends at end) into r's hops after
// the ones it has: a v2.x shim (type 1, NPT 0) with a v2 header, or the one-byte-type shim
// of v0.5/v1.0 with a v1.0 header. committed: a DSCP match (an error is the decoder's, not
// "no INT"). It returns 0 when the report holds the INT, 1 when there is none (a probe
// that found no shim: a first byte no shim of any version starts with), or -(lift reason
// + 1): anything else user space judges (v0.5 headers, MX, NPT 1/2, lengths that do not
// fit, the v1.0 erratum, quirks).
static __always_inline int parse_int(struct pbuf *pb, __u32 o, __u32 end, int committed)
{
	struct krep *r = &pb->r;
	__u8 *b = pb->b;
	if (o + 4 > end)
		return committed ? -(lift_int + 1) : 1;
	__u8 t = b[OFF(o)];
	__u32 md, n, hs, bm, stack;
	int v1;
	if (t == 0x10) {
		n = 4 + (__u32)b[OFF(o + 1)] * 4; // v2.x: Length excludes the shim
		md = o + 4;
		if (n < 16 || o + n > end || b[OFF(md)] >> 4 != 2)
			return -(lift_int + 1);
		hs = (b[OFF(md + 2)] & 0x1f) * 4;
		bm = rd16(b, md + 4);
		if (hs == 0 || hs < bitmap_size(bm, 0))
			return -(lift_int + 1);
		stack = md + 12;
		v1 = 0;
	} else if (t == 0x01 && !dec_quirks) {
		n = (__u32)b[OFF(o + 2)] * 4; // v1.0: Length includes the shim
		md = o + 4;
		if (n < 12 || o + n > end || b[OFF(md)] >> 4 != 1)
			return -(lift_int + 1);
		hs = (b[OFF(md + 2)] & 0x1f) * 4;
		bm = rd16(b, md + 4);
		stack = md + 8;
		if (hs == 0 || hs != bitmap_size(bm, 1) || (o + n - stack) % hs != 0)
			return -(lift_int + 1);
		v1 = 1;
	} else {
		__u8 typ = t >> 4;
		if (!committed && t != 0x01 && t != 0x03 && (t == 0x02 || (typ != 1 && typ != 3) || (t & 3)))
			return 1;
		return -(lift_int + 1);
	}
	__u32 nh = (o + n - stack) / hs;
	if (nh + r->nhops > KMAX_HOPS)
		return -(lift_hops + 1);
	plan(pb, bm, v1);
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		if (i >= nh)
			break;
		__u32 k = r->nhops;
		if (k >= KMAX_HOPS)
			break;
		__builtin_memset(&r->hop[HOP(k)], 0, sizeof(struct khop));
		hop_items(pb, k, stack + i * hs, v1);
		r->nhops = k + 1;
	}
	return 0;
}

// parse_inner parses the inner packet at b[o:end] of link type `link` (3 Ethernet, 4 IPv4,
// 5 IPv6): the flow, and INT when the report tracks the flow (find). 0 or a lift reason + 1.
static __always_inline int parse_inner(struct pbuf *pb, __u32 o, __u32 end, int link, int find)
{
	struct krep *r = &pb->r;
	__u8 *b = pb->b;
	int v6 = link == 5;
	if (link == 3) {
		if (o + 14 > end)
			return lift_inner + 1;
		__u16 et = rd16(b, o + 12);
		o += 14;
		if (et == 0x8100 || et == 0x88a8 || et == 0x9100) {
			if (o + 4 > end)
				return lift_inner + 1;
			et = rd16(b, o + 2);
			o += 4;
		}
		if (et == 0x86dd)
			v6 = 1;
		else if (et != 0x0800)
			return lift_inner + 1;
	}
	__u8 proto, dscp;
	__u32 l4;
	struct fkey *fk = &r->flow;
	__builtin_memset(fk, 0, sizeof(*fk));
	if (!v6) {
		if (o + 20 > end)
			return lift_inner + 1;
		__u8 vihl = b[OFF(o)];
		__u32 ihl = (vihl & 0x0f) * 4;
		if (vihl >> 4 != 4 || ihl < 20 || o + ihl > end || rd16(b, o + 2) < ihl)
			return lift_inner + 1;
		if (rd16(b, o + 6) & 0x3fff) // fragments (and MF) are user space's
			return lift_inner + 1;
		dscp = b[OFF(o + 1)] >> 2;
		proto = b[OFF(o + 9)];
		fk->src[10] = fk->src[11] = fk->dst[10] = fk->dst[11] = 0xff;
		*(__u32 *)&fk->src[12] = *(__u32 *)(b + OFF(o + 12));
		*(__u32 *)&fk->dst[12] = *(__u32 *)(b + OFF(o + 16));
		l4 = o + ihl;
	} else {
		if (o + 40 > end)
			return lift_inner + 1;
		if (b[OFF(o)] >> 4 != 6)
			return lift_inner + 1;
		dscp = (b[OFF(o)] & 0x0f) << 2 | b[OFF(o + 1)] >> 6;
		proto = b[OFF(o + 6)];
		fk->v6 = 1;
		__builtin_memcpy(fk->src, b + OFF(o + 8), 16);
		__builtin_memcpy(fk->dst, b + OFF(o + 24), 16);
		l4 = o + 40;
	}
	fk->proto = proto;
	__u32 pay;
	if (proto == 6) {
		if (l4 + 20 > end)
			return lift_inner + 1;
		__u32 doff = (b[OFF(l4 + 12)] >> 4) * 4;
		if (doff < 20 || l4 + doff > end)
			return lift_inner + 1;
		pay = l4 + doff;
	} else if (proto == 17) {
		if (l4 + 8 > end)
			return lift_inner + 1;
		pay = l4 + 8;
	} else {
		return lift_inner + 1;
	}
	fk->sport = rd16(b, l4);
	fk->dport = rd16(b, l4 + 2);
	r->has_flow = 1;
	if (!find)
		return 0;
	if (proto == 17 && ((dec_gpe_port && fk->dport == dec_gpe_port) ||
			    (dec_geneve_port && fk->dport == dec_geneve_port) ||
			    (dec_int_port && fk->dport == dec_int_port)))
		return lift_tunnel + 1;
	int committed = 0;
	for (int i = 0; i < 4; i++) {
		if (i < dec_dscp_n && (dscp & dec_dscp_mask[i]) == (dec_dscp_val[i] & dec_dscp_mask[i]))
			committed = 1;
	}
	if (!committed && !dec_probe)
		return 0;
	int e = parse_int(pb, pay, end, committed);
	if (e < 0)
		return -e;
	return 0;
}

// reporter_hop starts the reporting node's hop (wire's reporterHop): its node id, and the
// report header's ingress timestamp.
static __always_inline struct khop *reporter_hop(struct krep *r, __u32 node)
{
	struct khop *h = &r->hop[0];
	__builtin_memset(h, 0, sizeof(*h));
	r->node = node;
	r->has_node = 1;
	if (node != 0xffffffff) {
		h->node = node;
		h->fields = F_NODE;
	}
	if (r->has_its && r->its != 0xffffffff) {
		h->in_ts = r->its;
		h->fields |= F_IN_TS;
	}
	r->nhops = 1;
	return h;
}

// parse_tr20 reads a TR v2.0 packet of one individual report.
static __always_inline int parse_tr20(struct pbuf *pb, __u32 plen)
{
	__u8 *b = pb->b;
	struct krep *r = &pb->r;
	__u32 w = rd32(b, 0);
	r->hw_id = (w >> 22) & 0x3f;
	r->seq = w & 0x3fffff;
	r->node = rd32(b, 4);
	r->has_node = 1;
	__u32 h = rd32(b, 8);
	__u32 rep_type = h >> 28, in_type = (h >> 24) & 0x0f;
	__u32 rep_len = (h >> 16) & 0xff, md_len = (h >> 8) & 0xff;
	__u32 end = plen;
	// One individual report: Report Length 0xFF, or one that ends the packet.
	if (rep_len != 0xff && 12 + rep_len * 4 != plen)
		return lift_batch + 1;
	r->drop = (h >> 7) & 1;
	__u32 find = (h >> 5) & 1;
	__u32 pos = 12;
	if (rep_type == 1) {
		if (end < pos + 8 + md_len * 4)
			return lift_rep_type + 1;
		__u32 baseline = rd16(b, pos) & 0x7fff; // bit 0 is reserved: the node id is in the group header
		if (bitmap_size(baseline, 0) > md_len * 4)
			return lift_rep_type + 1;
		if (baseline) {
			struct khop *hp = reporter_hop(r, r->node);
			__u32 o = pos + 8;
			plan(pb, baseline, 0);
			hop_items(pb, 0, o, 0);
			if (baseline & 1) { // bit 15: queue id 8 | drop reason 8 | pad 16
				__u32 x = rd32(b, o + item_at(baseline, 15, 0));
				if (x >> 24 != 0xff) {
					hp->qid = x >> 24;
					hp->fields |= F_QUEUE_ID;
				}
				r->reason = x >> 16;
				r->has_reason = 1;
			}
		}
		pos += 8 + md_len * 4;
	} else if (rep_type != 0) {
		return lift_rep_type + 1;
	}
	if (in_type < 3 || in_type > 5)
		return lift_batch + 1;
	if (pos >= end)
		return lift_inner + 1;
	return parse_inner(pb, pos, end, in_type, find);
}

// parse_tr10 reads a TR v1.0 report: the 16+4n byte header (RepMdBits: ports, hop latency,
// queue, egress timestamp, queue id and drop reason, tx utilization), then the packet.
static __always_inline int parse_tr10(struct pbuf *pb, __u32 plen)
{
	__u8 *b = pb->b;
	struct krep *r = &pb->r;
	__u8 b1 = b[1], b2 = b[2], b3 = b[3];
	if ((b2 >> 1) & 0x3f) // reserved bits: a decode error
		return lift_version + 1;
	__u32 md = (b1 & 0x1f) << 1 | b2 >> 7;
	__u32 words = b[0] & 0x0f, nprot = b1 >> 5;
	if (words != 4 + __builtin_popcount(md) || plen < words * 4 || nprot > 2)
		return lift_version + 1;
	r->drop = b2 & 1;
	__u32 find = (b3 >> 6) & 1;
	r->hw_id = b3 & 0x3f;
	r->node = rd32(b, 4);
	r->has_node = 1;
	r->seq = rd32(b, 8);
	r->its = rd32(b, 12);
	r->has_its = 1;
	if (md) {
		struct khop *h = reporter_hop(r, r->node);
		__u32 o = 16;
		// Bit 0 of the 6-bit field is its MSB (md's bit 5).
		if (md & 0x20) {
			set_item(h, b, o, 1, 1); // ports
			o += 4;
		}
		if (md & 0x10) {
			set_item(h, b, o, 2, 1); // hop latency
			o += 4;
		}
		if (md & 0x08) {
			set_item(h, b, o, 3, 1); // queue id | occupancy
			o += 4;
		}
		if (md & 0x04) {
			set_item(h, b, o, 5, 1); // egress timestamp, 4 bytes
			o += 4;
		}
		if (md & 0x02) { // queue id 8 | drop reason 8 | pad 16
			__u32 x = rd32(b, o);
			if (x >> 24 != 0xff) {
				h->qid = x >> 24;
				h->fields |= F_QUEUE_ID;
			}
			r->reason = x >> 16;
			r->has_reason = 1;
			o += 4;
		}
		if (md & 0x01)
			set_item(h, b, o, 7, 1); // tx utilization
	}
	if (words * 4 >= plen)
		return lift_inner + 1;
	return parse_inner(pb, words * 4, plen, 3 + nprot, find);
}

// parse_tr05 reads a TR v0.5 report: the 12-byte fixed header, the drop (NProto 1) or
// local (NProto 2) header, then the Ethernet frame.
static __always_inline int parse_tr05(struct pbuf *pb, __u32 plen)
{
	__u8 *b = pb->b;
	struct krep *r = &pb->r;
	__u32 w = rd32(b, 0);
	if ((w >> 6) & 0x7fff) // reserved bits: a decode error
		return lift_version + 1;
	__u32 nproto = (w >> 24) & 0x0f;
	r->drop = (w >> 23) & 1;
	__u32 find = (w >> 21) & 1;
	r->hw_id = w & 0x3f;
	r->seq = rd32(b, 4);
	r->its = rd32(b, 8);
	r->has_its = 1;
	__u32 off = 12;
	if (nproto == 1) { // switch id 32 | in port 16 | out port 16 | queue id 8 | reason 8 | pad 16
		if (plen < 24 || rd16(b, 22) != 0)
			return lift_version + 1;
		struct khop *h = reporter_hop(r, rd32(b, 12));
		set_item(h, b, 16, 1, 1);
		if (b[20] != 0xff) {
			h->qid = b[20];
			h->fields |= F_QUEUE_ID;
		}
		r->reason = b[21];
		r->has_reason = 1;
		off = 24;
	} else if (nproto == 2) { // switch id 32 | in 16 | out 16 | queue id 8 | occupancy 24 | egress ts 32
		if (plen < 28)
			return lift_version + 1;
		struct khop *h = reporter_hop(r, rd32(b, 12));
		set_item(h, b, 16, 1, 1);
		set_item(h, b, 20, 3, 1);
		set_item(h, b, 24, 5, 1);
		// No hop latency in the header: egress - ingress timestamp mod 2^32, as the spec says.
		if ((h->fields & (F_IN_TS | F_EG_TS)) == (F_IN_TS | F_EG_TS)) {
			h->lat = (__u32)h->eg_ts - (__u32)h->in_ts;
			h->fields |= F_HOP_LAT;
		}
		off = 28;
	} else if (nproto != 0) {
		return lift_version + 1;
	}
	if (off >= plen)
		return lift_inner + 1;
	return parse_inner(pb, off, plen, 3, find);
}

// parse reads the report datagram of plen bytes at offset off of the frame into pb->r (its
// time and queue set by the caller): 0, or a lift reason + 1. A global function: the
// verifier checks it once, apart from its callers.
__attribute__((noinline)) int parse(struct xdp_md *ctx, struct pbuf *pb, __u32 off, __u32 plen)
{
	if (!pb)
		return lift_inner + 1;
	__u8 *b = pb->b;
	struct krep *r = &pb->r;
	if (plen > KBUF)
		return lift_long + 1;
	if (plen < 16)
		return lift_version + 1;
	if (bpf_xdp_load_bytes(ctx, off, b, plen & (KBUF - 1) ? plen & (KBUF - 1) : KBUF) < 0)
		return lift_inner + 1;
	r->nhops = 0;
	r->has_flow = 0;
	r->has_node = 0;
	r->has_its = 0;
	r->its = 0;
	r->node = 0;
	r->drop = 0;
	r->has_reason = 0;
	r->reason = 0;
	switch (b[0] >> 4) {
	case 2:
		return parse_tr20(pb, plen);
	case 1: // under tr05_ver1 and intcollector_gen a Ver 1 may be the v0.5 layout: user space's
		return dec_quirks ? lift_version + 1 : parse_tr10(pb, plen);
	case 0:
		return parse_tr05(pb, plen);
	}
	return lift_version + 1;
}
