// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// intake's XDP program (package xdp, docs/xdp.md). It matches UDP datagrams to one port
// (IPv4 or IPv6, at most one VLAN tag) and redirects their frames into the AF_XDP socket of
// the receive queue they arrived on; everything else passes to the kernel untouched. Each
// frame's outcome is counted in a per-CPU array (the outcome_* indices below, mirrored by
// package xdp's Outcome constants).
//
// Built with `go generate ./xdp` (clang -target bpf); the object is committed so that
// `go build` needs no clang.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

enum {
	outcome_redirected = 0,  // to the queue's AF_XDP socket
	outcome_pass_other,      // not UDP to the port (other protocol, port, ether type)
	outcome_pass_fragment,   // an IPv4 fragment: the kernel reassembles it
	outcome_pass_malformed,  // headers cut short or inconsistent: the kernel judges it
	outcome_pass_no_socket,  // the queue has no AF_XDP socket (more queues than workers)
	outcome_ipv6_ext,        // IPv6 with extension headers: passed, the kernel handles them
	num_outcomes,
};

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
				return count(outcome_ipv6_ext, XDP_PASS);
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

	// With XDP_PASS as the fallback, a queue without a socket passes frames to the kernel.
	int act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	if (act == XDP_REDIRECT)
		return count(outcome_redirected, act);
	return count(outcome_pass_no_socket, act);
}

char _license[] SEC("license") = "Dual BSD/GPL";
