// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// intake's XDP program (package xdp, docs/xdp.md). It matches UDP datagrams to one port
// (IPv4 or IPv6, at most one VLAN tag) and redirects their frames into the AF_XDP socket of
// the receive queue they arrived on; everything else passes to the kernel untouched. Each
// frame's outcome is counted in a per-CPU array (enum outcome below; package xdp's Outcome
// constants are checked against it at compile time through bpf2go's intakeOutcome).
//
// Built with `go generate ./xdp` (bpf2go, which runs clang -target bpfel and writes the Go
// bindings intake_bpfel.go); the object is committed so that `go build` needs no clang.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

enum outcome {
	outcome_redirected = 0,  // to the queue's AF_XDP socket
	outcome_pass_other,      // not UDP to the port (other protocol, port, ether type)
	outcome_pass_fragment,   // an IPv4 fragment: the kernel reassembles it
	outcome_pass_malformed,  // headers cut short or inconsistent: the kernel judges it
	outcome_pass_no_socket,  // the queue has no AF_XDP socket (more queues than workers)
	outcome_pass_ipv6_ext,   // IPv6 with extension headers: passed, the kernel handles them
	outcome_dta_key_write,   // a DTA Key-Write report written into kw_store, dropped
	outcome_dta_key_increment, // a DTA Key-Increment report added into ki_store, dropped
	outcome_dta_append,      // a DTA Append report appended to its list in ap_store, dropped
	outcome_kernel,          // a report handled in the kernel (detect.kernel, flowcache.kernel), ended here
	outcome_kernel_lifted,   // a report handled in the kernel and redirected too (marked)
	num_outcomes,
};

// A constant of the enum's type puts the type into the object's BTF, where bpf2go's -type
// reads it (an enum's values alone leave no trace there). Never read.
const enum outcome *const btf_outcome = 0;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, num_outcomes);
	__type(key, __u32);
	__type(value, __u64);
} outcomes SEC(".maps");

// The listener's UDP port, in network byte order; set by the loader before load.
volatile const __u16 listen_port = 0;

// DTA in the kernel (dta.kernel): the wire widths and the stores' geometry, set by the loader
// from the collector's configuration; the stores are BPF_F_MMAPABLE arrays of 8-byte words
// that the collector maps as the data of its Key-Write, Key-Increment and Append regions
// (docs/dta-layout.md), sized by the loader.
volatile const __u8 dta_kernel = 0;
volatile const __u8 dta_hdr_len = 2;
volatile const __u8 dta_key_len = 4;
volatile const __u8 dta_data_len = 4;
volatile const __u64 dta_seed = 0;
volatile const __u32 kw_mask = 0;
volatile const __u32 kw_maxn = 0;
volatile const __u32 kw_cmask = 0;
volatile const __u32 kw_vbytes = 4;
volatile const __u32 ki_mask = 0;
volatile const __u32 ki_maxn = 0;
volatile const __u32 ap_lists = 0; // 0: Append reports go to user space
volatile const __u32 ap_mask = 0;  // entries per list - 1 (entries of 4 bytes)

// A store's data: a BPF_F_MMAPABLE array of 8-byte elements, sized by the loader.
#define STORE(name)                                 \
	struct {                                    \
		__uint(type, BPF_MAP_TYPE_ARRAY);   \
		__uint(map_flags, BPF_F_MMAPABLE);  \
		__uint(max_entries, 1);             \
		__type(key, __u32);                 \
		__type(value, __u64);               \
	} name SEC(".maps")

STORE(kw_store);

STORE(ki_store);

// The Append store's data: lists headers of 64 bytes (head, reserve, done: u64 at 0, 8, 16),
// then each list's ring of 4-byte entries (docs/dta-layout.md, "Append").
STORE(ap_store);

#include "report.h"

// As btf_outcome, for bpf2go -type lift.
const enum lift *const btf_lift = 0;

#include "detect.h"
#include "flowcache.h"

// Detection and the flow cache in the kernel (detect.kernel, flowcache.kernel): parse the
// listener's reports and run the detector and the flow cache on them. With kernel_lift set
// a user-space processor needs every report: a report handled here is redirected too,
// marked with what was done (META_*) so that user space does not do it again.
volatile const __u8 det_kernel = 0;
volatile const __u8 fc_kernel = 0;
volatile const __u8 kernel_lift = 0;

// Why reports went up to user space (per CPU, the lift_* reasons of report.h).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, num_lifts);
	__type(key, __u32);
	__type(value, __u64);
} lifts SEC(".maps");

// The marks on a frame's receive time in its metadata (xdp.MetaDetected, MetaCached): the
// kernel detected it, the kernel's flow cache has it.
#define META_DETECTED (1ULL << 63)
#define META_CACHED (1ULL << 62)

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct ipv4_hdr {
	__u8 vihl;
	__u8 tos;
	__be16 tot_len;
	__be16 id;
	__be16 frag;
	__u8 ttl;
	__u8 proto;
	__be16 csum;
	__be32 src;
	__be32 dst;
};

struct ipv6_hdr {
	__be32 vtcfl;
	__be16 plen;
	__u8 next;
	__u8 hops;
	__u8 src[16];
	__u8 dst[16];
};

struct udp_hdr {
	__be16 sport;
	__be16 dport;
	__be16 len;
	__be16 csum;
};

static __always_inline int count(__u32 o, int action)
{
	__u64 *c = bpf_map_lookup_elem(&outcomes, &o);
	if (c)
		*c += 1;
	return action;
}

// intake's Hash64 (dta/hash.go, docs/dta-layout.md "Hash functions").
#define PHI 0x9E3779B97F4A7C15ULL
#define K1 0xBF58476D1CE4E5B9ULL
#define K2 0x94D049BB133111EBULL
#define CSUM_XOR 0xC2B2AE3D27D4EB4FULL

static __always_inline __u64 rotl31(__u64 x) { return (x << 31) | (x >> 33); }

static __always_inline __u64 fmix64(__u64 x)
{
	x ^= x >> 30;
	x *= K1;
	x ^= x >> 27;
	x *= K2;
	x ^= x >> 31;
	return x;
}

// key_hash is Hash64(dta_seed, key) of the dta_key_len bytes at k: 8-byte little-endian
// words, the tail zero-padded.
static __always_inline __u64 key_hash(__u8 *k)
{
	__u32 n = dta_key_len;
	__u64 h = dta_seed ^ (__u64)n * PHI;
	__u64 w = 0;
	for (__u32 i = 0; i < 64; i++) {
		if (i >= n)
			break;
		w |= (__u64)k[i] << (8 * (i & 7));
		if ((i & 7) == 7) {
			h = rotl31(h ^ w * K1) * K2;
			w = 0;
		}
	}
	if (n & 7)
		h = rotl31(h ^ w * K1) * K2;
	return fmix64(h);
}

// The longest DTA datagram the program reads: a 3-byte header, the redundancy, a 64-byte
// key and 32 bytes of data.
#define DTA_MAX 100

// dta handles the DTA datagram of plen bytes at offset off of the frame if it is a single
// Key-Write, Key-Increment or Append report the stores take as the translator would: 1 when written
// (the frame is then dropped), 0 to hand it to user space (batches, other primitives,
// anything the translator would count as bad, and lengths the decoder reads specially).
// The datagram is copied to the stack first (bpf_xdp_load_bytes): reads at offsets that
// depend on the IP header length are then plain stack reads the verifier can bound.
static __always_inline int dta(struct xdp_md *ctx, __u32 off, __u32 plen, __u32 *outcome)
{
	__u8 b[DTA_MAX + 4] = {};
	__u32 hl = dta_hdr_len, kl = dta_key_len, dl = dta_data_len;
	if (bpf_xdp_load_bytes(ctx, off, b, 3) < 0)
		return 0;
	__u8 op = b[0];
	__u8 flags = hl == 3 ? b[2] : b[1];
	if (flags & 0x01) // a batch
		return 0;
	__u64 h;
	if (op == 1 && kw_maxn > 0) { // Key-Write
		__u32 need = hl + 1 + kl + dl;
		if (plen != need || need > DTA_MAX || dl > kw_vbytes)
			return 0;
		if (bpf_xdp_load_bytes(ctx, off, b, need) < 0)
			return 0;
		__u32 r = b[hl];
		if (r == 0 || r > kw_maxn)
			return 0;
		h = key_hash(b + hl + 1);
		__u8 *v = b + hl + 1 + kl;
		__u64 vw = 0;
		for (__u32 i = 0; i < 4; i++) {
			if (i >= dl)
				break;
			vw |= (__u64)v[i] << (8 * i);
		}
		vw <<= 8 * (kw_vbytes - dl);
		// hashTail(seed ^ CSUM_XOR, vw, vbytes): the value mixed into the checksum.
		__u64 vm = fmix64(rotl31(((dta_seed ^ CSUM_XOR) ^ (__u64)kw_vbytes * PHI) ^ vw * K1) * K2);
		__u32 csum = ((__u32)(fmix64(h ^ CSUM_XOR) >> 32) ^ (__u32)vm) & kw_cmask;
		__u64 word = (__u64)csum | vw << 32;
		for (__u32 i = 0; i < 255; i++) {
			if (i >= r)
				break;
			__u32 slot = fmix64(h + (__u64)(i + 1) * PHI) & kw_mask;
			__u64 *s = bpf_map_lookup_elem(&kw_store, &slot);
			if (s)
				*s = word;
		}
		*outcome = outcome_dta_key_write;
		return 1;
	}
	if (op == 3 && ki_maxn > 0) { // Key-Increment
		__u32 need = hl + 1 + kl + 8;
		if (plen != need || need > DTA_MAX)
			return 0;
		if (bpf_xdp_load_bytes(ctx, off, b, need) < 0)
			return 0;
		__u32 r = b[hl];
		if (r == 0 || r > ki_maxn)
			return 0;
		h = key_hash(b + hl + 1);
		__u8 *c = b + hl + 1 + kl;
		__u64 add = 0;
		for (int i = 0; i < 8; i++)
			add = add << 8 | c[i];
		// The translator adds to the store's N counters, whatever the report's redundancy.
		for (__u32 i = 0; i < 255; i++) {
			if (i >= ki_maxn)
				break;
			__u32 slot = fmix64(h + (__u64)(i + 1) * PHI) & ki_mask;
			__u64 *s = bpf_map_lookup_elem(&ki_store, &slot);
			if (s)
				__sync_fetch_and_add(s, add);
		}
		*outcome = outcome_dta_key_increment;
		return 1;
	}
	if (op == 2 && ap_lists > 0) { // Append
		__u32 need = hl + 4 + dl;
		if (plen != need || need > DTA_MAX || dl > 4)
			return 0;
		if (bpf_xdp_load_bytes(ctx, off, b, need) < 0)
			return 0;
		__u32 list = (__u32)b[hl] << 24 | (__u32)b[hl + 1] << 16 | (__u32)b[hl + 2] << 8 | b[hl + 3];
		if (list >= ap_lists)
			return 0; // user space counts it (bad_list_id)
		// The data right-aligned into the 4-byte entry, in wire order: in memory the entry's
		// bytes are the low bytes of e first (little-endian).
		__u32 e = 0;
		for (__u32 i = 0; i < 4; i++) {
			if (i >= dl)
				break;
			e = e << 8 | b[hl + 4 + i];
		}
		e = __builtin_bswap32(e);
		__u32 hk = list * 8;
		__u64 *head = bpf_map_lookup_elem(&ap_store, &hk);
		hk++;
		__u64 *reserve = bpf_map_lookup_elem(&ap_store, &hk);
		hk++;
		__u64 *done = bpf_map_lookup_elem(&ap_store, &hk);
		if (!head || !reserve || !done)
			return 0;
		// The writers' protocol of dta.Append: claim, write, count done, publish.
		__u64 s = __sync_fetch_and_add(reserve, 1);
		__u64 o = (__u64)ap_lists * 64 + ((__u64)list * ((__u64)ap_mask + 1) + (s & ap_mask)) * 4;
		__u32 ei = o >> 3;
		__u64 *el = bpf_map_lookup_elem(&ap_store, &ei);
		if (el)
			*(__u32 *)((__u8 *)el + (o & 4)) = e;
		__sync_fetch_and_add(done, 1);
		for (int i = 0; i < 8; i++) {
			__u64 d = *(volatile __u64 *)done;
			__u64 r = *(volatile __u64 *)reserve;
			__u64 h = *(volatile __u64 *)head;
			if (d != r || h >= r || __sync_val_compare_and_swap(head, h, r) == h)
				break;
		}
		*outcome = outcome_dta_append;
		return 1;
	}
	return 0;
}

SEC("xdp")
int intake_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *p;
	__be16 proto;

	if ((void *)(eth + 1) > end)
		return count(outcome_pass_malformed, XDP_PASS);
	proto = eth->h_proto;
	p = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *v = p;
		if ((void *)(v + 1) > end)
			return count(outcome_pass_malformed, XDP_PASS);
		proto = v->proto;
		p = v + 1;
	}

	struct udp_hdr *udp;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct ipv4_hdr *ip = p;
		if ((void *)(ip + 1) > end)
			return count(outcome_pass_malformed, XDP_PASS);
		if (ip->proto != IPPROTO_UDP)
			return count(outcome_pass_other, XDP_PASS);
		__u32 ihl = (ip->vihl & 0x0f) * 4;
		if ((ip->vihl >> 4) != 4 || ihl < sizeof(*ip))
			return count(outcome_pass_malformed, XDP_PASS);
		// More fragments, or a fragment offset: only the first fragment has the UDP
		// header, and user space wants whole datagrams.
		if (ip->frag & bpf_htons(0x3fff))
			return count(outcome_pass_fragment, XDP_PASS);
		udp = p + ihl;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6_hdr *ip6 = p;
		if ((void *)(ip6 + 1) > end)
			return count(outcome_pass_malformed, XDP_PASS);
		if (ip6->next != IPPROTO_UDP) {
			// Hop-by-hop, routing, fragment, destination options: the kernel walks them.
			if (ip6->next == 0 || ip6->next == 43 || ip6->next == 44 || ip6->next == 60)
				return count(outcome_pass_ipv6_ext, XDP_PASS);
			return count(outcome_pass_other, XDP_PASS);
		}
		udp = (void *)(ip6 + 1);
	} else {
		return count(outcome_pass_other, XDP_PASS);
	}
	if ((void *)(udp + 1) > end)
		return count(outcome_pass_malformed, XDP_PASS);
	if (udp->dport != listen_port)
		return count(outcome_pass_other, XDP_PASS);
	// A UDP length that does not fit the frame is the kernel's to count (and drop).
	__u16 ulen = bpf_ntohs(udp->len);
	if (ulen < sizeof(*udp) || (void *)udp + ulen > end)
		return count(outcome_pass_malformed, XDP_PASS);

	if (dta_kernel) {
		__u32 o = 0;
		if (dta(ctx, (void *)(udp + 1) - data, ulen - sizeof(*udp), &o))
			return count(o, XDP_DROP);
	}

	__u64 now = bpf_ktime_get_ns();
	__u64 mark = 0;
	if (det_kernel || fc_kernel) {
		__u32 z = 0;
		struct pbuf *pb = bpf_map_lookup_elem(&pbufs, &z);
		if (pb) {
			pb->r.now = now;
			pb->r.queue_rx = ctx->rx_queue_index;
			int why = parse(ctx, pb, (void *)(udp + 1) - data, ulen - sizeof(*udp));
			if (why == 0) {
				if (det_kernel) {
					detect(&pb->r);
					mark |= META_DETECTED;
				}
				if (fc_kernel) {
					fc_update(&pb->r);
					mark |= META_CACHED;
				}
				if (!kernel_lift)
					return count(outcome_kernel, XDP_DROP);
			} else {
				__u32 l = why - 1;
				__u64 *c = bpf_map_lookup_elem(&lifts, &l);
				if (c)
					*c += 1;
			}
		}
	}

	// The frame's receive time for user space, in the 8 bytes of XDP metadata right before
	// the frame: AF_XDP copies them into the UMEM frame with it (docs/xdp.md, "Receive
	// time"). Where the driver has no room for metadata the call fails, and the worker takes
	// the time it read the frame instead (and, for a frame handled here, has no mark: user
	// space handles it again; drivers with XDP have metadata room).
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(__u64)) == 0) {
		__u64 *meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) <= (void *)(long)ctx->data)
			*meta = now | mark;
	}
	// With XDP_PASS as the fallback, a queue without a socket passes frames to the kernel.
	int act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	if (act == XDP_REDIRECT)
		return count(mark ? outcome_kernel_lifted : outcome_redirected, act);
	return count(outcome_pass_no_socket, act);
}

char _license[] SEC("license") = "Dual BSD/GPL";
