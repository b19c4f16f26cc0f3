// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// Event detection in the kernel (detect.kernel, docs/xdp.md "Detection in the kernel"):
// package detect's rules applied to a parsed report (report.h) with the detector's state in
// BPF maps. A flow keeps its path, flow latency and per-hop latencies; a switch key (switch
// and queue, egress port, buffer, drop reason; node and hw_id) its values. A switch value
// that raises nothing (the common case) is written without a lock; anything else is updated
// under its entry's lock, so that workers on several CPUs never lose an update, and the
// events it raises are gathered under the lock and written to the event ring after it. The
// rules, the values and the event fields are detect.go's, line for line:
// TestKernelDetectSame runs one stream through both.

// Measurements and kinds: package event's numbering.
enum { m_flow_latency = 1, m_flow_hop_latency, m_flow_path, m_queue_occupancy, m_queue_congestion,
       m_tx_utilization, m_buffer_occupancy, m_drops, m_seq_gaps, num_meas };
enum { k_new_key = 1, k_path_change, k_change, k_above, k_below };
enum { scope_switch = 0, scope_e2e = 1 };
// Switch key kinds: detect's kQueue ...
enum { kq_queue = 0, kq_port, kq_buffer, kq_drop, kq_seq };

// The rules in force: written by user space (the configuration, PUT /api/v1/thresholds).
// An off rule's level is 2^64-1, which nothing exceeds (detect's never).
struct rules {
	__u64 change[num_meas];
	__u64 above[num_meas];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rules);
} d_rules SEC(".maps");

struct val {
	__u64 ref, cur;
};

// The tables: open addressing over BPF_F_MMAPABLE arrays of entries, which user space maps
// (the periodic push, expiry and queries read them without a system call per entry). A key's
// home slot is its hash's low bits; a lookup probes onwards until it finds the key or an
// empty slot. An entry's state word says what the slot holds; a CPU makes an entry by
// claiming a free slot (empty, or deleted by expiry) with a compare-and-swap, so that two
// CPUs never make the same key twice; user space deletes (ST_DELETED, a tombstone probes
// go past) and turns tombstones back into empty slots where no probe sequence runs through
// them (xdp's DetectState). The lock word is a lock both sides take with compare-and-swap
// for an entry's updates; readers on the quiet path take none, and check a sequence count
// (ver: odd while an update is in progress) instead.
#define ST_EMPTY 0
#define ST_BUSY 1 // being made
#define ST_READY 2
#define ST_DELETED 3
#define PROBES 32 // the longest probe sequence: beyond it a table counts as full

// The tables' slots less one (powers of two), set by the loader.
volatile const __u32 flow_mask = 0;
volatile const __u32 key_mask = 0;

// A flow's entry: detect's flowEntry.
struct fent {
	__u32 state, lock;
	struct fkey key;
	__u8 npath, has_lat, hop_ok, pad;
	__u32 pad1;
	__u64 first, last, dev, reports, path_hash;
	__u32 path[KMAX_HOPS];
	__u16 above, pad2[3];
	struct val lat;
	struct val hop[KMAX_HOPS];
	// The slots of the switch keys the flow's last report updated, by the report's hop
	// index (newest first), plus one (0: none): a cache, never the truth (det_sw checks the
	// slot holds the key), which saves most switch updates their hash and probe.
	__u32 memo[KMAX_HOPS][2];
};

struct swkey {
	__u32 sw, id;
	__u8 kind, pad[3];
};

// A switch key's entry: detect's swEntry. A seq key keeps its last sequence number in
// v[1].ref and the receive queue that gave it in v[1].cur.
struct swent {
	__u32 state, lock;
	struct swkey key;
	__u8 has, above, seq_ok, pad;
	__u32 ver, pad1;
	__u64 last, dev;
	struct val v[2];
};

// The tables' sizes are set by the loader (MapSpec.MaxEntries: detect.max_flows and
// max_keys with detect's headroom, at most three quarters full).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fent);
} d_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct swent);
} d_keys SEC(".maps");

// An event as the ring carries it (xdp.KernelEvent mirrors it).
struct kev {
	__u64 time, dev, prev, value, thr;
	__u32 sw, id; // the switch; the key's queue, port, buffer, reason or hw_id
	__u8 kind, scope, meas, key_kind; // key_kind: a kq_* switch key, 0xff a flow's
	__u8 npath, pad[3];
	struct fkey flow;
	__u32 path[KMAX_HOPS];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} d_events SEC(".maps");

// Counters (per CPU): xdp.KernelCounts mirrors them.
enum {
	dc_reports = 0, // reports detected in the kernel
	dc_values,      // metric values seen (M_all)
	dc_events,      // events written to the ring
	dc_ring_full,   // events lost: the ring was full (counted, never silent)
	dc_table_full,  // key updates lost: the flow or switch table was full (or an entry's lock stayed taken)
	dc_new_flows,   // flow entries made (user space counts those it deletes: the table's size)
	dc_new_keys,    // switch-key entries made
	dc_kind0,       // events by kind: dc_kind0 + kind
	num_dcounts = dc_kind0 + 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, num_dcounts);
	__type(key, __u32);
	__type(value, __u64);
} d_counts SEC(".maps");

// The most events one key's update raises: a flow with a path event, its latency's two and
// two per tracked hop.
#define MAX_KEV (1 + 2 + 2 * KMAX_HOPS)

// A CPU's scratch: the events of the update in hand.
struct dscratch {
	struct rules thr;
	__u32 n;
	struct kev t;   // the template of a flow's events
	struct kev swt; // of a switch key's: its flow and path stay zero, it is never cleared
	struct kev ev[MAX_KEV];
	__u32 path[KMAX_HOPS], old_path[KMAX_HOPS];
	struct val old_hop[KMAX_HOPS];
	// A switch op's key and values (det_sw's arguments), and loop accumulators kept in
	// memory, where the verifier does not track them: in registers, each loop iteration's
	// branches would double the states it explores.
	struct swkey k;
	__u64 dev, x0;
	__u32 m0, ok, vals, same, nlat, fresh;
	__s32 free;     // a probe's first free slot (-1: none yet)
	__u32 free_st;  // and its state
	__u32 probing;  // the probe goes on
	__u32 busy;     // it met an entry another CPU is making: look again
	__s32 fslot;    // the report's flow's slot (-1: none)
	__u32 hint;     // a switch update's memo slot plus one (0: none); det_sw leaves the slot used in it
	__u64 lat, ph;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dscratch);
} d_scratch SEC(".maps");

static __always_inline void dcount(__u32 i, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&d_counts, &i);
	if (c)
		*c += n;
}

// new_ev appends an event to the scratch from template t (key, scope, measurement, times)
// and returns it, or 0 when the scratch is full (it cannot be: MAX_KEV).
static __always_inline struct kev *new_ev(struct dscratch *s, struct kev *t, __u8 kind, __u64 prev, __u64 value, __u64 thr)
{
	__u32 n = s->n;
	if (n >= MAX_KEV)
		return 0;
	struct kev *e = &s->ev[n];
	__builtin_memcpy(e, t, sizeof(*e));
	e->kind = kind;
	e->prev = prev;
	e->value = value;
	e->thr = thr;
	s->n = n + 1;
	return e;
}

static __always_inline __u64 absdiff(__u64 a, __u64 b) { return a > b ? a - b : b - a; }

// check is detect's check: value x of one key (v its state, was_above its above bit) against
// measurement m's rules; the events go to the scratch from template t. It returns the new
// above bit.
static __always_inline int check(struct dscratch *s, struct kev *t, struct val *v, int was_above, __u64 x, int is_new, __u32 m)
{
	__u64 prev_cur = v->cur;
	m &= 15;
	if (m >= num_meas)
		return 0;
	if (is_new) {
		v->ref = x;
		v->cur = x;
		was_above = 0;
		prev_cur = 0;
		new_ev(s, t, k_new_key, 0, x, 0);
	} else {
		v->cur = x;
		__u64 th = s->thr.change[m];
		if (absdiff(x, v->ref) > th) {
			new_ev(s, t, k_change, v->ref, x, th);
			v->ref = x;
		}
	}
	__u64 a = s->thr.above[m];
	int above = x > a;
	if (above != was_above)
		new_ev(s, t, above ? k_above : k_below, prev_cur, x, a);
	return above;
}

// flush writes the scratch's events to the ring and counts them.
__attribute__((noinline)) int flush(struct dscratch *s)
{
	if (!s)
		return 0;
	__u32 n = s->n;
	for (__u32 i = 0; i < MAX_KEV; i++) {
		if (i >= n)
			break;
		struct kev *e = &s->ev[i];
		// No wakeup: user space polls the ring (xdp.DetectState.Read); a wakeup per event
		// would cost the program an irq_work and the reader a context switch.
		if (bpf_ringbuf_output(&d_events, e, sizeof(*e), BPF_RB_NO_WAKEUP) == 0) {
			dcount(dc_events, 1);
			dcount(dc_kind0 + (e->kind & 7), 1);
		} else {
			dcount(dc_ring_full, 1);
		}
	}
	s->n = 0;
	return 0;
}

// hash64 is the tables' hash (fmix64 of murmur3 over words; report.h has no other use for
// one): a key's home slot is its low bits.
static __always_inline __u64 mix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

// take takes an entry's lock word; 0 when it stayed taken (counted by the caller).
static __always_inline int take(__u32 *l)
{
	for (int i = 0; i < 4096; i++)
		if (__sync_val_compare_and_swap(l, 0, 1) == 0)
			return 1;
	return 0;
}

static __always_inline void release(__u32 *l) { __sync_lock_test_and_set(l, 0); }

static __always_inline __u32 state_of(__u32 *st) { return *(volatile __u32 *)st; }

// key_slot returns the slot of switch key s->k in d_keys, made if need be (s->fresh then
// says so), or -1 when the table has no room within PROBES slots of the key's home, or
// another CPU is making an entry on the way (counted by the caller as a lost update). The
// probe's state lives in the scratch, not in registers: the verifier walks each iteration
// once.
__attribute__((noinline)) int key_slot(struct dscratch *s)
{
	if (!s)
		return -1;
	__u64 h = mix64(((__u64)s->k.sw << 32 | s->k.id) ^ ((__u64)s->k.kind << 56) ^ 0x9E3779B97F4A7C15ULL);
	s->fresh = 0;
	for (int attempt = 0; attempt < 8; attempt++) {
		s->free = -1;
		s->probing = 1;
		s->busy = 0;
		for (__u32 p = 0; p < PROBES; p++) {
			if (!s->probing)
				break;
			__u32 i = (h + p) & key_mask;
			struct swent *e = bpf_map_lookup_elem(&d_keys, &i);
			if (!e)
				return -1;
			__u32 st = state_of(&e->state);
			if (st == ST_READY) {
				if (e->key.sw == s->k.sw && e->key.id == s->k.id && e->key.kind == s->k.kind)
					return i;
				continue;
			}
			if (st == ST_BUSY) { // another CPU is making it, perhaps this key: look again
				s->busy = 1;
				s->probing = 0;
				continue;
			}
			if (s->free < 0) {
				s->free = i;
				s->free_st = st;
			}
			if (st == ST_EMPTY) // the key is not in the table
				s->probing = 0;
		}
		if (s->busy)
			continue;
		if (s->free < 0)
			return -1;
		__u32 f = s->free;
		struct swent *e = bpf_map_lookup_elem(&d_keys, &f);
		if (!e)
			return -1;
		if (__sync_val_compare_and_swap(&e->state, s->free_st, ST_BUSY) == s->free_st) {
			e->key = s->k;
			e->has = 0;
			e->above = 0;
			e->seq_ok = 0;
			e->last = 0;
			e->dev = 0;
			e->v[0].ref = e->v[0].cur = e->v[1].ref = e->v[1].cur = 0;
			e->lock = 0;
			__sync_lock_test_and_set(&e->state, ST_READY);
			s->fresh = 1;
			return f;
		}
		// Another CPU claimed the slot first: look again (it may have made this key).
	}
	return -1;
}

// flow_slot is key_slot for flow r->flow in d_flows.
__attribute__((noinline)) int flow_slot(struct krep *r, struct dscratch *s)
{
	if (!r || !s)
		return -1;
	__u64 *w = (__u64 *)&r->flow;
	__u64 h = 0x9E3779B97F4A7C15ULL;
	for (int i = 0; i < 5; i++)
		h = mix64(h ^ w[i]);
	s->fresh = 0;
	for (int attempt = 0; attempt < 8; attempt++) {
		s->free = -1;
		s->probing = 1;
		s->busy = 0;
		for (__u32 p = 0; p < PROBES; p++) {
			if (!s->probing)
				break;
			__u32 i = (h + p) & flow_mask;
			struct fent *e = bpf_map_lookup_elem(&d_flows, &i);
			if (!e)
				return -1;
			__u32 st = state_of(&e->state);
			if (st == ST_READY) {
				__u64 *k = (__u64 *)&e->key;
				if (k[0] == w[0] && k[1] == w[1] && k[2] == w[2] && k[3] == w[3] && k[4] == w[4])
					return i;
				continue;
			}
			if (st == ST_BUSY) { // another CPU is making it, perhaps this key: look again
				s->busy = 1;
				s->probing = 0;
				continue;
			}
			if (s->free < 0) {
				s->free = i;
				s->free_st = st;
			}
			if (st == ST_EMPTY)
				s->probing = 0;
		}
		if (s->busy)
			continue;
		if (s->free < 0)
			return -1;
		__u32 f = s->free;
		struct fent *e = bpf_map_lookup_elem(&d_flows, &f);
		if (!e)
			return -1;
		if (__sync_val_compare_and_swap(&e->state, s->free_st, ST_BUSY) == s->free_st) {
			__builtin_memcpy(&e->key, &r->flow, sizeof(e->key));
			e->npath = 0;
			e->has_lat = 0;
			e->hop_ok = 0;
			e->reports = 0;
			e->above = 0;
			e->path_hash = 0;
			__builtin_memset(e->path, 0, sizeof(e->path));
			e->lock = 0;
			__sync_lock_test_and_set(&e->state, ST_READY);
			s->fresh = 1;
			return f;
		}
	}
	return -1;
}

// sw_value is detect's swValue/swCheck for value i of en (its lock held).
static __always_inline void sw_value(struct dscratch *s, struct kev *t, struct swent *en, __u32 i, __u32 m, __u64 x)
{
	__u8 bit = 1 << i;
	t->meas = m;
	struct val *v = &en->v[i & 1];
	int a = check(s, t, v, (en->above & bit) != 0, x, (en->has & bit) == 0, m);
	en->above = a ? en->above | bit : en->above & ~bit;
	en->has |= bit;
}

static __always_inline __u64 hop_dev(struct khop *h)
{
	if (h->fields & F_EG_TS)
		return h->eg_ts;
	if (h->fields & F_IN_TS)
		return h->in_ts;
	return 0;
}

// det_sw updates switch key s->k with value s->x0 of measurement s->m0 (device time
// s->dev). For a seq key, x0 is the sequence number and the gaps are counted here; for a
// drop key the count is incremented. A value that raises nothing is written without the
// entry's lock: its rule state (has, above, ref) is read under the entry's sequence count,
// and only the latest value and times are written.
__attribute__((noinline)) int det_sw(struct krep *r, struct dscratch *s)
{
	if (!r || !s)
		return 0;
	__u64 dev = s->dev, x0 = s->x0;
	__u32 m0 = s->m0 & 15, kind = s->k.kind;
	struct swent *en = 0;
	s->fresh = 0;
	if (s->hint) {
		__u32 h = s->hint - 1;
		en = bpf_map_lookup_elem(&d_keys, &h);
		if (en && !(state_of(&en->state) == ST_READY && en->key.sw == s->k.sw && en->key.id == s->k.id && en->key.kind == kind))
			en = 0;
	}
	if (!en) {
		int slot = key_slot(s);
		if (slot < 0) {
			s->hint = 0;
			dcount(dc_table_full, 1);
			return 0;
		}
		__u32 sl = slot;
		en = bpf_map_lookup_elem(&d_keys, &sl);
		if (!en)
			return 0;
		s->hint = sl + 1;
		if (s->fresh)
			dcount(dc_new_keys, 1);
	}
	if (kind <= kq_buffer && m0 < num_meas) {
		__u32 v1 = *(volatile __u32 *)&en->ver;
		asm volatile("" ::: "memory");
		__u8 has = en->has, above = en->above;
		__u64 ref = en->v[0].ref;
		asm volatile("" ::: "memory");
		__u32 v2 = *(volatile __u32 *)&en->ver;
		if (!(v1 & 1) && v1 == v2 && (has & 1) && absdiff(x0, ref) <= s->thr.change[m0] &&
		    (x0 > s->thr.above[m0]) == (above & 1)) {
			en->v[0].cur = x0;
			en->last = r->now;
			en->dev = dev;
			return 0;
		}
	}
	if (!take(&en->lock)) {
		dcount(dc_table_full, 1);
		return 0;
	}
	en->ver++;
	struct kev *t = &s->swt;
	t->time = r->now;
	t->dev = dev;
	t->sw = s->k.sw;
	t->id = s->k.id;
	t->scope = scope_switch;
	t->key_kind = kind;
	en->last = r->now;
	en->dev = dev;
	if (kind == kq_seq) {
		// detect's seq with one worker per receive queue: the queue's frames come in order.
		__u64 gaps = en->v[0].cur;
		__u32 seq = x0;
		if (en->seq_ok) {
			__u32 step = seq - (__u32)en->v[1].ref;
			if (step > 1 && step < (1U << 31))
				gaps += step - 1;
		}
		en->v[1].ref = seq;
		en->v[1].cur = r->queue_rx;
		en->seq_ok = 1;
		sw_value(s, t, en, 0, m_seq_gaps, gaps);
	} else if (kind == kq_drop) {
		sw_value(s, t, en, 0, m_drops, en->v[0].cur + 1);
	} else {
		sw_value(s, t, en, 0, m0, x0);
	}
	en->ver++;
	release(&en->lock);
	if (s->n)
		flush(s);
	return 0;
}

// sw_op_memo runs det_sw for key (sw, id, kind), trying memo slot m first (0: none) and
// leaving the slot it used in m.
static __always_inline void sw_op_memo(struct dscratch *s, struct krep *r, __u32 sw, __u32 id, __u8 kind, __u64 dev, __u32 m0, __u64 x0, __u32 *m)
{
	s->k.sw = sw;
	s->k.id = id;
	s->k.kind = kind;
	s->dev = dev;
	s->m0 = m0;
	s->x0 = x0;
	s->hint = m ? *m : 0;
	det_sw(r, s);
	if (m)
		*m = s->hint;
}

// sw_op runs det_sw for key (sw, id, kind).
static __always_inline void sw_op(struct dscratch *s, struct krep *r, __u32 sw, __u32 id, __u8 kind, __u64 dev, __u32 m0, __u64 x0)
{
	sw_op_memo(s, r, sw, id, kind, dev, m0, x0, 0);
}

// hop_op is detect's hop: the switch metrics of hop h; memo is the flow's memo of the
// hop's queue and port slots (0: no flow).
static __always_inline void hop_op(struct dscratch *s, struct krep *r, struct khop *h, __u32 *memo)
{
	__u16 f = h->fields;
	__u64 dev = hop_dev(h);
	if (f & F_QUEUE_OCC) // the parser reads no congestion (v0.5 only)
		sw_op_memo(s, r, h->node, h->qid, kq_queue, dev, m_queue_occupancy, h->qocc, memo);
	if (f & F_TX_UTIL)
		sw_op_memo(s, r, h->node, f & F_EG_PORT ? h->eg_port : 0, kq_port, dev, m_tx_utilization, h->tx, memo ? memo + 1 : 0);
	if (f & F_BUF_OCC)
		sw_op(s, r, h->node, h->bid, kq_buffer, dev, m_buffer_occupancy, h->bocc);
}

#define PATH_BASIS 14695981039346656037ULL
#define PATH_PRIME 1099511628211ULL

// det_flow is detect's flow: path, flow latency and per-hop latencies of r's flow, under
// the flow entry's lock (a flow's reports come from its sink, to one receive queue: the
// lock is all but never contended).
__attribute__((noinline)) int det_flow(struct krep *r, struct dscratch *s)
{
	if (!r || !s)
		return 0;
	__u32 n = r->nhops;
	if (n > KMAX_HOPS || n == 0)
		return 0;
	if (s->fslot < 0)
		return 0;
	__u32 sl = s->fslot;
	struct fent *en = bpf_map_lookup_elem(&d_flows, &sl);
	if (!en)
		return 0;
	// The path source to sink, its hash, the flow latency.
	s->ph = PATH_BASIS;
	s->lat = 0;
	s->nlat = 0;
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		s->path[i] = 0;
		if (i >= n)
			continue;
		struct khop *h = &r->hop[HOP(n - 1 - i)];
		s->path[i] = h->node;
		s->ph = (s->ph ^ h->node) * PATH_PRIME;
		if (h->fields & F_HOP_LAT) {
			s->lat += h->lat;
			s->nlat++;
		}
	}
	__u64 ph = s->ph;
	__u64 dev = r->has_its ? r->its : hop_dev(&r->hop[0]);
	struct kev *t = &s->t;
	__builtin_memset(t, 0, sizeof(*t));
	t->time = r->now;
	t->dev = dev;
	t->key_kind = 0xff;
	t->scope = scope_e2e;
	t->npath = n;
	__builtin_memcpy(&t->flow, &r->flow, sizeof(t->flow));
	__builtin_memcpy(t->path, s->path, sizeof(s->path));
	s->vals = 1;

	if (!take(&en->lock)) {
		dcount(dc_table_full, 1);
		return 0;
	}
	// New: made by this update, or by another CPU's that has not updated it yet.
	int fresh = en->reports == 0;
	if (fresh)
		en->first = r->now;
	en->last = r->now;
	en->dev = dev;
	en->reports++;
	s->same = n == en->npath;
	for (__u32 i = 0; i < KMAX_HOPS; i++)
		if (en->path[i] != s->path[i])
			s->same = 0;
	if (fresh || !s->same) {
		t->meas = m_flow_path;
		if (fresh) {
			new_ev(s, t, k_new_key, 0, ph, 0);
		} else if (ph != en->path_hash) {
			new_ev(s, t, k_path_change, en->path_hash, ph, 0);
			// rehop: a switch on both paths keeps its state at its new position.
			__builtin_memcpy(s->old_path, en->path, sizeof(s->old_path));
			__builtin_memcpy(s->old_hop, en->hop, sizeof(s->old_hop));
			__u32 old_ok = en->hop_ok;
			__u32 old_above = en->above;
			__u32 old_n = en->npath;
			s->ok = 0;
			s->vals = old_above & (1 << KMAX_HOPS); // the new above bits
			for (__u32 i = 0; i < KMAX_HOPS; i++) {
				for (__u32 k = 0; k < KMAX_HOPS; k++) {
					if (i < n && k < old_n && s->old_path[k] == s->path[i] && (old_ok & (1 << k)) &&
					    !(s->ok & (1 << i))) {
						en->hop[i] = s->old_hop[k];
						s->ok |= 1 << i;
						s->vals |= ((old_above >> k) & 1) << i;
					}
				}
			}
			en->hop_ok = s->ok;
			en->above = s->vals;
			s->vals = 1;
		}
		en->path_hash = ph;
		en->npath = n;
		__builtin_memcpy(en->path, s->path, sizeof(s->path));
	}
	if (s->nlat > 0) {
		t->meas = m_flow_latency;
		int a = check(s, t, &en->lat, (en->above >> KMAX_HOPS) & 1, s->lat, !en->has_lat, m_flow_latency);
		en->above = a ? en->above | (1 << KMAX_HOPS) : en->above & ~(1 << KMAX_HOPS);
		en->has_lat = 1;
		s->vals++;
	}
	s->ok = 0;
	t->scope = scope_switch;
	t->meas = m_flow_hop_latency;
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		if (i >= n)
			break;
		struct khop *h = &r->hop[HOP(n - 1 - i)];
		if (!(h->fields & F_HOP_LAT))
			continue;
		__u32 bit = 1 << i;
		t->sw = h->node;
		t->dev = hop_dev(h);
		int a = check(s, t, &en->hop[i], (en->above >> i) & 1, h->lat, !(en->hop_ok & bit), m_flow_hop_latency);
		en->above = a ? en->above | bit : en->above & ~bit;
		s->ok |= bit;
		s->vals++;
	}
	en->hop_ok = s->ok;
	release(&en->lock);
	dcount(dc_values, s->vals);
	if (s->n)
		flush(s);
	return 0;
}

// detect runs the detector on report r: seq, drop, hops, flow, in detect's order.
__attribute__((noinline)) int detect(struct krep *r)
{
	__u32 z = 0;
	struct dscratch *s = bpf_map_lookup_elem(&d_scratch, &z);
	struct rules *thr = bpf_map_lookup_elem(&d_rules, &z);
	if (!r || !s || !thr)
		return 0;
	__builtin_memcpy(&s->thr, thr, sizeof(*thr));
	s->n = 0;
	// The flow's slot first (its entry is updated last, in detect's order): its memo names
	// the slots of the hops' switch keys.
	s->fslot = -1;
	struct fent *fe = 0;
	if (r->has_flow && r->nhops > 0 && r->nhops <= KMAX_HOPS) {
		int fs = flow_slot(r, s);
		if (fs < 0) {
			dcount(dc_table_full, 1);
		} else {
			if (s->fresh)
				dcount(dc_new_flows, 1);
			s->fslot = fs;
			__u32 f = fs;
			fe = bpf_map_lookup_elem(&d_flows, &f);
		}
	}
	// Seq and drops: per reporting node (a TR v0.5 report without a drop or local header
	// names none); every Telemetry Report has a sequence number.
	__u32 vals = 0;
	if (r->has_node) {
		sw_op(s, r, r->node, r->hw_id, kq_seq, r->its, m_seq_gaps, r->seq);
		vals++;
		if (r->drop) {
			sw_op(s, r, r->node, r->has_reason ? r->reason : 0, kq_drop, r->its, m_drops, 0);
			vals++;
		}
	}
	for (__u32 i = 0; i < KMAX_HOPS; i++) {
		if (i >= r->nhops)
			break;
		struct khop *h = &r->hop[i];
		__u16 f = h->fields;
		if (!(f & F_NODE) || !(f & (F_QUEUE_OCC | F_TX_UTIL | F_BUF_OCC)))
			continue;
		vals += ((f & F_QUEUE_OCC) != 0) + ((f & F_TX_UTIL) != 0) + ((f & F_BUF_OCC) != 0);
		hop_op(s, r, h, fe ? fe->memo[HOP(i)] : 0);
	}
	dcount(dc_values, vals);
	if (r->has_flow)
		det_flow(r, s);
	dcount(dc_reports, 1);
	return 0;
}
