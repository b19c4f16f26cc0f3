// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// The flow cache in the kernel (flowcache.kernel, docs/flowcache.md "In the kernel"):
// package flowcache's table H_P, its eviction and its per-switch histograms, applied to a
// parsed report (report.h) with the state in BPF maps. The table is package flowcache's
// layout byte for byte (rows of a header and buckets, table.go), in one BPF_F_MMAPABLE
// array of rows that the collector maps read-only, so that its queries read the kernel's
// table in place; evicted buckets go up through a ring buffer into the cache's record
// sinks. TestKernelFlowCacheSame runs one stream through both and compares.
//
// A row's first word is a sequence count, odd while a writer holds the row: the writers
// (this program, and intake_fc_age, the ager, run by user space through BPF_PROG_TEST_RUN)
// take it with a compare-and-swap and give it back with an atomic add; user space reads a
// row without writing, as a seqlock reader (copy, then check that the count did not move).
// A bpf_spin_lock would cost some 65 ns a report on a VM (it saves and restores the
// interrupt flags) and could not be mapped; no writer can be preempted while it holds a row
// (XDP runs in softirq, a test run with bottom halves off), so the spin is short. It is
// bounded all the same: an update that finds its row held for 2^20 tries is counted
// (fcc_lock_busy), not applied.

#define FC_MAXB 64                   // flowcache.MaxBuckets
#define FC_MAXH 32                   // the most hops flowcache.max_hops keeps
#define FC_HOP_BYTES 56              // flowcache's hopSlot
#define FC_HDR_BYTES 80              // flowcache's bucketHdr
#define FC_BKT_MAX (FC_HDR_BYTES + FC_HOP_BYTES * FC_MAXH)
#define FC_NONE 0xffffffff

// The table's geometry and the histograms' settings, set by the loader (xdp.FlowCache). The
// defaults describe the placeholder maps below (one row of one bucket of one hop), so that
// the object verifies as it is.
volatile const __u32 fc_mask = 0;     // rows - 1
volatile const __u32 fc_buckets = 1;  // buckets per row
volatile const __u32 fc_hops = 1;     // max_hops
volatile const __u32 fc_hdr = 64;     // a row header's bytes: the count and the tags, in 64-byte lines
volatile const __u32 fc_bkt = FC_HDR_BYTES + FC_HOP_BYTES; // a bucket's bytes
volatile const __u32 fc_bins = 64;    // bins per histogram
volatile const __u8 fc_hlog = 1;      // log bins (else linear, fc_width wide)
volatile const __u64 fc_width[4] = {1, 1, 1, 1}; // hop latency, queue occupancy, tx utilization, end to end
volatile const __u32 fc_maxsw = 1;    // histograms.max_switches

// A bucket: flowcache's bucketHdr, then fc_hops hop slots (hopSlot), source first.
struct fcbkt {
	__u8 key[38]; // telemetry.FlowKey: struct fkey without its padding
	__u8 nhops, trunc;
	__u32 packets, latcount;
	__u64 last, first; // CLOCK_MONOTONIC ns; user space adds the offset to Unix time
	__u64 latlatest, latsum;
};

struct fchop {
	__u32 node;
	__u32 latest[3], count[3]; // by flowcache.Metric: hop latency, queue occupancy, tx utilization
	__u32 pad;
	__u64 sum[3];
};

_Static_assert(sizeof(struct fcbkt) == FC_HDR_BYTES, "bucket header is flowcache's bucketHdr");
_Static_assert(sizeof(struct fchop) == FC_HOP_BYTES, "hop slot is flowcache's hopSlot");

// The placeholder of a row (the loader sizes the map: fc_hdr + fc_buckets × fc_bkt bytes).
struct fcrow0 {
	__u8 b[64 + FC_HDR_BYTES + FC_HOP_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fcrow0);
} fc_table SEC(".maps");

// An evicted bucket as the ring carries it: its reason (flowcache.Reason: 1 collision, 2
// idle), then the bucket's fc_bkt bytes.
struct fcrec {
	__u64 reason;
	__u8 b[FC_BKT_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} fc_evict SEC(".maps");

// The histograms: per switch index (per CPU) hop latency, queue occupancy and tx
// utilization, fc_bins counters each; index fc_maxsw is the end-to-end latency's (its
// first fc_bins counters). The loader sizes the value (3 × fc_bins × 8 bytes).
struct fchist0 {
	__u64 c[3 * 64];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fchist0);
} fc_hist SEC(".maps");

// Switch id → its histograms' index + 1 (0: another CPU is assigning it; FC_NONE: past
// max_switches), in the order switches were first seen, as flowcache's Histograms.index.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fc_swidx SEC(".maps");

// The switch indexes handed out.
struct fcglob {
	__u32 nsw;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fcglob);
} fc_glob SEC(".maps");

// Counters (per CPU): xdp.FlowCacheCounts mirrors them.
enum {
	fcc_reports = 0,   // reports the kernel's flow cache processed
	fcc_no_hops,       // of which without hops
	fcc_no_flow,       // of which without a flow
	fcc_trunc,         // paths longer than max_hops
	fcc_updates,       // bucket updates
	fcc_inserts,       // flows new to the table
	fcc_new,           // of which in a free bucket (the table's flows: new - idle)
	fcc_collisions,    // evictions from a full row
	fcc_idle,          // evictions by the ager
	fcc_pushed,        // evicted buckets written to the ring
	fcc_ring_full,     // evicted buckets lost: the ring was full (counted, never silent)
	fcc_hist_overflow, // hop samples of switches past max_switches
	fcc_lock_busy,     // updates not applied: the row stayed held (not expected)
	num_fccounts,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, num_fccounts);
	__type(key, __u32);
	__type(value, __u64);
} fc_counts SEC(".maps");

#define FC_MEMO 256

// A CPU's scratch: loop results kept in memory (where the verifier does not track them:
// in registers, each iteration's branches would double the states it explores), the memo
// of switch indexes (as flowcache's histDelta.memo: indexes are never reused), and the
// evicted bucket in hand.
struct fcscratch {
	__u64 lat;
	__u32 nlat, bi, free, evict;
	__u32 n, kept, had; // fc_row's hop loop's bounds
	struct {
		__u32 sw, si; // si: index + 1, 0 empty
	} memo[FC_MEMO];
	struct fcrec rec;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fcscratch);
} fc_scratch SEC(".maps");

static __always_inline void fccount(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&fc_counts, &i);
	if (c)
		*c += 1;
}

// mulmix is telemetry's mulMix: the high and low halves of the 128-bit product, xored.
static __always_inline __u64 mulmix(__u64 a, __u64 b)
{
	__u64 a0 = (__u32)a, a1 = a >> 32, b0 = (__u32)b, b1 = b >> 32;
	__u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	__u64 mid = (p00 >> 32) + (__u32)p01 + (__u32)p10;
	__u64 hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	return hi ^ (a * b);
}

// flowhash is telemetry.FlowHash (flowcache's row and tag).
static __always_inline __u64 flowhash(struct fkey *k)
{
	__u64 *s = (__u64 *)k->src, *d = (__u64 *)k->dst;
	__u64 a = s[0] ^ d[0] << 1, b = s[1], c = d[1];
	__u64 x = (__u64)k->sport | (__u64)k->dport << 16 | (__u64)k->proto << 32 | (__u64)(k->v6 != 0) << 40;
	__u64 h = mulmix(a ^ 0xa0761d6478bd642fULL, b ^ 0xe7037ed1a0b428dbULL);
	h = mulmix(h ^ c, x ^ 0x8ebc6af09c88c6e3ULL);
	return mulmix(h ^ 0x589965cc75374cc3ULL, h >> 29 ^ 0xe7037ed1a0b428dbULL);
}

// key_eq compares a bucket's key with a report's flow (38 bytes), without a branch per word.
static __always_inline int key_eq(struct fcbkt *b, struct fkey *k)
{
	__u64 *x = (__u64 *)b, *y = (__u64 *)k;
	__u64 d = (x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3]);
	d |= *(__u32 *)&x[4] ^ *(__u32 *)&y[4];
	d |= *(__u16 *)((__u8 *)x + 36) ^ *(__u16 *)((__u8 *)y + 36);
	return d == 0;
}

static __always_inline int fc_trylock(__u32 *seq)
{
	__u32 v = *(volatile __u32 *)seq;
	return !(v & 1) && __sync_val_compare_and_swap(seq, v, v + 1) == v;
}

static __always_inline void fc_unlock(__u32 *seq)
{
	__sync_fetch_and_add(seq, 1);
}

struct fcspin {
	__u32 row, ok;
};

static long fc_spin(__u32 i, void *ctx)
{
	struct fcspin *c = ctx;
	__u32 *seq = bpf_map_lookup_elem(&fc_table, &c->row);
	if (!seq)
		return 1;
	if (fc_trylock(seq)) {
		c->ok = 1;
		return 1;
	}
	return 0;
}

// fc_lock takes row's sequence count (rw is the row): at once, or spinning (bounded).
static __always_inline int fc_lock(__u8 *rw, __u32 row)
{
	if (fc_trylock((__u32 *)rw))
		return 1;
	struct fcspin c = {row, 0};
	bpf_loop(1 << 20, fc_spin, &c, 0);
	return c.ok;
}

// FC_MEM reads a loop's result back from the scratch: from memory, so that the verifier
// takes it for any value (a check then bounds it) instead of following each one the loop
// could leave (clang would otherwise keep it in a register).
#define FC_MEM(x) (*(volatile __u32 *)&(x))

// A bucket of row rw; i must be below fc_buckets.
#define FC_BKT(rw, i) ((struct fcbkt *)((rw) + fc_hdr + (i) * fc_bkt))

// fc_copy copies bucket b into the scratch's record.
static __always_inline void fc_copy(struct fcscratch *s, struct fcbkt *b)
{
	__u64 *src = (__u64 *)b, *dst = (__u64 *)s->rec.b;
	for (__u32 w = 0; w < FC_BKT_MAX / 8; w++) {
		if (w >= fc_bkt / 8)
			break;
		dst[w] = src[w];
	}
}

// fc_push writes the scratch's record to the eviction ring, without waking the reader: the
// drain looks every 5 ms, and a wakeup costs an irq_work.
static __always_inline void fc_push(struct fcscratch *s)
{
	if (bpf_ringbuf_output(&fc_evict, &s->rec, 8 + fc_bkt, BPF_RB_NO_WAKEUP) == 0)
		fccount(fcc_pushed);
	else
		fccount(fcc_ring_full);
}

// fc_row applies report r to its flow's bucket: found, or a free one, or the row's least
// recently updated one evicted into the ring (table.updateHashed). The report's end-to-end
// latency and its count of hop latencies are in s (fc_bin_report).
__attribute__((noinline)) int fc_row(struct krep *r, struct fcscratch *s)
{
	if (!r || !s)
		return 0;
	__u64 h = flowhash(&r->flow);
	__u32 row = h & fc_mask;
	__u32 tag = (__u32)(h >> 32) | 1;
	__u8 *rw = bpf_map_lookup_elem(&fc_table, &row);
	if (!rw)
		return 0;
	if (!fc_lock(rw, row)) {
		fccount(fcc_lock_busy);
		return 0;
	}
	__u32 *tags = (__u32 *)(rw + 4);
	s->bi = FC_NONE;
	s->free = FC_NONE;
	s->evict = 0;
	for (__u32 i = 0; i < FC_MAXB; i++) {
		if (i >= fc_buckets)
			break;
		__u32 g = tags[i];
		if (g == tag) {
			if (key_eq(FC_BKT(rw, i), &r->flow)) {
				FC_MEM(s->bi) = i;
				break;
			}
		} else if (g == 0 && FC_MEM(s->free) == FC_NONE) {
			FC_MEM(s->free) = i;
		}
	}
	__u32 bi = FC_MEM(s->bi);
	int ins = 0, fresh = 0;
	struct fcbkt *b;
	if (bi == FC_NONE) {
		ins = 1;
		if (FC_MEM(s->free) == FC_NONE) {
			// A full row: its least recently updated bucket goes to the ring.
			__s64 oldest = 0x7fffffffffffffffLL;
			for (__u32 i = 0; i < FC_MAXB; i++) {
				if (i >= fc_buckets)
					break;
				__s64 l = FC_BKT(rw, i)->last;
				if (l < oldest) {
					oldest = l;
					FC_MEM(s->free) = i;
				}
			}
			bi = FC_MEM(s->free);
			if (bi >= fc_buckets)
				goto out;
			fc_copy(s, FC_BKT(rw, bi));
			s->rec.reason = 1;
			s->evict = 1;
		} else {
			fresh = 1;
		}
		bi = FC_MEM(s->free);
		if (bi >= fc_buckets)
			goto out;
		tags[bi] = tag;
		b = FC_BKT(rw, bi);
		__u64 *w = (__u64 *)b, *k = (__u64 *)&r->flow;
		w[0] = k[0];
		w[1] = k[1];
		w[2] = k[2];
		w[3] = k[3];
		w[4] = k[4] & 0x0000ffffffffffffULL; // the key's last 6 bytes; nhops and trunc 0
		w[5] = 0;
		w[6] = 0;
		w[7] = r->now; // first
		w[8] = 0;
		w[9] = 0;
	} else {
		if (bi >= fc_buckets)
			goto out;
		b = FC_BKT(rw, bi);
	}
	b->packets++;
	b->last = r->now;
	if (s->nlat > 0) {
		b->latlatest = s->lat;
		b->latsum += s->lat;
		b->latcount++;
	}
	__u32 n = r->nhops;
	__u32 kept = n < fc_hops ? n : fc_hops;
	if (n > fc_hops)
		b->trunc = 1;
	// The loop's bounds in memory: in registers the verifier would follow every count of
	// hops kept and held apart.
	s->n = n;
	s->kept = kept;
	s->had = b->nhops;
	b->nhops = kept;
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		if (i >= FC_MEM(s->kept) || i >= fc_hops)
			break;
		struct khop *hp = &r->hop[HOP(FC_MEM(s->n) - 1 - i)]; // hops are newest first; the path is source first
		struct fchop *sl = (struct fchop *)((__u8 *)b + FC_HDR_BYTES + i * FC_HOP_BYTES);
		if (i >= FC_MEM(s->had) || sl->node != hp->node) {
			// A hop new to the flow's path starts its means afresh.
			__u64 *z = (__u64 *)sl;
			z[0] = hp->node;
			z[1] = 0;
			z[2] = 0;
			z[3] = 0;
			z[4] = 0;
			z[5] = 0;
			z[6] = 0;
		}
		__u16 f = hp->fields;
		if (f & F_HOP_LAT) {
			sl->latest[0] = hp->lat;
			sl->sum[0] += hp->lat;
			sl->count[0]++;
		}
		if (f & F_QUEUE_OCC) {
			sl->latest[1] = hp->qocc;
			sl->sum[1] += hp->qocc;
			sl->count[1]++;
		}
		if (f & F_TX_UTIL) {
			sl->latest[2] = hp->tx;
			sl->sum[2] += hp->tx;
			sl->count[2]++;
		}
	}
out:
	fc_unlock((__u32 *)rw);
	if (ins)
		fccount(fcc_inserts);
	if (fresh)
		fccount(fcc_new);
	if (s->evict) {
		fccount(fcc_collisions);
		fc_push(s);
	}
	return 0;
}

// fc_len8 is the bit length of a byte.
static const __u8 fc_len8[256] = {
	0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
	6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
	8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
};

// fc_binof is flowcache's Histograms.bin: value v's bin in histogram k (a metric, or 3 for
// the end-to-end latency). Log bins: bin 0 holds 0, bin i [2^(i-1), 2^i): the bit length,
// found without a branch (the halves that hold a set bit, then a byte's from a table).
static __always_inline __u32 fc_binof(__u32 k, __u64 v)
{
	__u64 b;
	if (fc_hlog) {
		__u64 n = 0, t;
		if (k == 3) { // the end-to-end latency, a sum of 32-bit values; the metrics are 32-bit
			t = ((v >> 32) + 0xffffffffULL) >> 32 << 5;
			v >>= t;
			n += t;
		}
		t = ((v >> 16) + 0xffff) >> 16 << 4; // v < 2^32 here
		v >>= t;
		n += t;
		t = ((v >> 8) + 0xff) >> 8 << 3; // v < 2^16
		v >>= t;
		b = n + t + fc_len8[v & 0xff];
	} else {
		b = v / fc_width[k & 3];
	}
	__u32 last = fc_bins - 1;
	if (b > last)
		b = last;
	return b;
}

// fc_swnew returns switch sw's histogram index, assigning the next one if there is room
// (Histograms.index); -1 past max_switches.
__attribute__((noinline)) int fc_swnew(__u32 sw)
{
	__u32 z = 0;
	struct fcglob *g = bpf_map_lookup_elem(&fc_glob, &z);
	if (!g)
		return -1;
	__u32 *v = bpf_map_lookup_elem(&fc_swidx, &sw);
	if (!v) {
		if (*(volatile __u32 *)&g->nsw >= fc_maxsw)
			return -1; // full: no insert for every unknown switch
		if (bpf_map_update_elem(&fc_swidx, &sw, &z, BPF_NOEXIST) == 0) {
			__u32 idx = __sync_fetch_and_add(&g->nsw, 1);
			__u32 x = idx < fc_maxsw ? idx + 1 : FC_NONE;
			v = bpf_map_lookup_elem(&fc_swidx, &sw);
			if (!v)
				return -1;
			__sync_lock_test_and_set(v, x);
			return x == FC_NONE ? -1 : (int)idx;
		}
		v = bpf_map_lookup_elem(&fc_swidx, &sw); // another CPU made it, or the map is full
		if (!v)
			return -1;
	}
	__u32 x = 0;
	for (int i = 0; i < 64; i++) { // another CPU may be assigning it: a few instructions
		x = *(volatile __u32 *)v;
		if (x)
			break;
	}
	if (x == 0 || x == FC_NONE)
		return -1;
	return x - 1;
}

// fc_swindex is fc_swnew through the CPU's memo.
static __always_inline int fc_swindex(struct fcscratch *s, __u32 sw)
{
	__u32 m = (sw ^ sw >> 8) & (FC_MEMO - 1);
	if (s->memo[m].si && s->memo[m].sw == sw)
		return s->memo[m].si - 1;
	int si = fc_swnew(sw);
	if (si >= 0) {
		s->memo[m].sw = sw;
		s->memo[m].si = si + 1;
	}
	return si;
}

// fc_bin_report counts report r's values into the histograms (Process's histogram part) and
// leaves its end-to-end latency and its count of hop latencies in s.
__attribute__((noinline)) int fc_bin_report(struct krep *r, struct fcscratch *s)
{
	if (!r || !s)
		return 0;
	__u32 n = r->nhops;
	s->lat = 0;
	s->nlat = 0;
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		if (i >= n)
			break;
		struct khop *h = &r->hop[i];
		__u16 f = h->fields;
		if (f & F_HOP_LAT) {
			s->lat += h->lat;
			s->nlat++;
		}
		if (!(f & F_NODE) || !(f & (F_HOP_LAT | F_QUEUE_OCC | F_TX_UTIL)))
			continue;
		int si = fc_swindex(s, h->node);
		if (si < 0) {
			fccount(fcc_hist_overflow);
			continue;
		}
		__u32 k = si;
		__u64 *c = bpf_map_lookup_elem(&fc_hist, &k);
		if (!c)
			continue;
		if (f & F_HOP_LAT)
			c[fc_binof(0, h->lat)]++;
		if (f & F_QUEUE_OCC)
			c[fc_bins + fc_binof(1, h->qocc)]++;
		if (f & F_TX_UTIL)
			c[2 * fc_bins + fc_binof(2, h->tx)]++;
	}
	if (s->nlat > 0) {
		__u32 k = fc_maxsw;
		__u64 *c = bpf_map_lookup_elem(&fc_hist, &k);
		if (c)
			c[fc_binof(3, s->lat)]++;
	}
	return 0;
}

// fc_update runs the flow cache on report r: the histograms, then the flow's bucket, as
// flowcache's Process.
__attribute__((noinline)) int fc_update(struct krep *r)
{
	__u32 z = 0;
	struct fcscratch *s = bpf_map_lookup_elem(&fc_scratch, &z);
	if (!r || !s)
		return 0;
	fccount(fcc_reports);
	__u32 n = r->nhops;
	if (n == 0) {
		fccount(fcc_no_hops);
		return 0;
	}
	fc_bin_report(r, s);
	if (!r->has_flow) {
		fccount(fcc_no_flow);
		return 0;
	}
	if (n > fc_hops)
		fccount(fcc_trunc);
	fccount(fcc_updates);
	fc_row(r, s);
	return 0;
}

// fc_age_one evicts the first bucket of row `row` not updated since cut into the ring
// (reason idle): 1, or 0 when the row has none left, -1 when the row stayed held.
__attribute__((noinline)) int fc_age_one(__u32 row, __u64 cut)
{
	__u32 z = 0;
	struct fcscratch *s = bpf_map_lookup_elem(&fc_scratch, &z);
	__u8 *rw = bpf_map_lookup_elem(&fc_table, &row);
	if (!s || !rw)
		return -1;
	if (!fc_lock(rw, row)) {
		fccount(fcc_lock_busy);
		return -1;
	}
	__u32 *tags = (__u32 *)(rw + 4);
	s->bi = FC_NONE;
	for (__u32 i = 0; i < FC_MAXB; i++) {
		if (i >= fc_buckets)
			break;
		if (tags[i] != 0 && (__s64)FC_BKT(rw, i)->last < (__s64)cut) {
			FC_MEM(s->bi) = i;
			break;
		}
	}
	__u32 bi = FC_MEM(s->bi);
	if (bi >= fc_buckets) {
		fc_unlock((__u32 *)rw);
		return 0;
	}
	fc_copy(s, FC_BKT(rw, bi));
	tags[bi] = 0;
	fc_unlock((__u32 *)rw);
	s->rec.reason = 2;
	fccount(fcc_idle);
	fc_push(s);
	return 1;
}

// The ager's arguments, at the start of its test frame; it writes the evictions to done.
struct fcage {
	__u64 cut;         // evict flows last updated before this (CLOCK_MONOTONIC ns)
	__u32 first, rows; // the rows to sweep
	__u32 done;
};

static long fc_age_row(__u32 i, void *ctx)
{
	struct fcage *a = ctx;
	for (__u32 k = 0; k < FC_MAXB; k++) {
		if (k >= fc_buckets || fc_age_one(a->first + i, a->cut) <= 0)
			break;
		a->done++;
	}
	return 0;
}

// intake_fc_age is the ager (flowcache's Age) on the kernel's table: user space runs it
// through BPF_PROG_TEST_RUN with a struct fcage at the start of the frame, a slice of rows
// at a time, and reads the evictions back from the frame.
SEC("xdp")
int intake_fc_age(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fcage *in = data;
	if ((void *)(in + 1) > end)
		return XDP_ABORTED;
	struct fcage a = {in->cut, in->first, in->rows, 0};
	if (a.first > fc_mask || a.rows > fc_mask + 1 - a.first)
		return XDP_ABORTED;
	bpf_loop(a.rows, fc_age_row, &a, 0);
	in->done = a.done;
	return XDP_DROP;
}
