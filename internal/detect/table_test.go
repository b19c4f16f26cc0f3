package detect

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"
	"unsafe"

	"github.com/intake-int/intake/telemetry"
)

// TestIndexChurn drives one shard's flow table with random inserts, lookups, LRU evictions
// and removals, each in an LRU tick of its own, checked step by step against a map and a
// model LRU list. Hashes are forced
// into a few home positions now and then, so that long probe runs, wrap-around at the end
// of the slot array and backward-shift deletion inside a run are all exercised.
func TestIndexChurn(t *testing.T) {
	const capacity = 37
	s := newShard(capacity, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[telemetry.FlowKey]bool{}
	var order []telemetry.FlowKey // most recently updated first
	touch := func(k telemetry.FlowKey) {
		for i, o := range order {
			if o == k {
				order = append(order[:i], order[i+1:]...)
				break
			}
		}
		order = append([]telemetry.FlowKey{k}, order...)
	}
	key := func(n int) (telemetry.FlowKey, uint64) {
		var k telemetry.FlowKey
		k.SetAddrs(netip.AddrFrom4([4]byte{10, 0, byte(n >> 8), byte(n)}), netip.MustParseAddr("10.9.9.9"))
		k.SrcPort, k.Proto = uint16(n), 17
		h := telemetry.FlowHash(&k)
		if n%3 == 0 { // collide: one of three home positions near the end of the array
			h = h&^0xffffffff | uint64(s.fidx.mask-uint64(n%9/3))
		}
		return k, h
	}
	for step := 0; step < 20000; step++ {
		n := rng.IntN(120)
		k, h := key(n)
		switch op := rng.IntN(10); {
		case op < 7: // update: lookup or create (evicting the oldest when full), a tick apart
			now := int64(step+1) << lruTick
			e, isNew := s.flow(h, &k, now)
			e.last = now // as the detector does after flow
			if isNew == model[k] {
				t.Fatalf("step %d: key %d: isNew %v, model has it %v", step, n, isNew, model[k])
			}
			if isNew && len(model) == capacity {
				old := order[len(order)-1]
				delete(model, old)
				order = order[:len(order)-1]
			}
			model[k] = true
			touch(k)
		default: // remove (as expiry does)
			i := s.lookupFlow(h, &k)
			if (i >= 0) != model[k] {
				t.Fatalf("step %d: key %d: found %v, model %v", step, n, i >= 0, model[k])
			}
			if i >= 0 {
				s.removeFlow(i)
				delete(model, k)
				for j, o := range order {
					if o == k {
						order = append(order[:j], order[j+1:]...)
						break
					}
				}
			}
		}
		if s.fl.n != len(model) {
			t.Fatalf("step %d: %d entries, model %d", step, s.fl.n, len(model))
		}
		j := 0
		for i := s.fl.head; i >= 0; i = s.fl.l[i].next {
			if s.fe[i].key != order[j] {
				t.Fatalf("step %d: LRU position %d differs from the model", step, j)
			}
			j++
		}
	}
	for n := 0; n < 120; n++ {
		k, h := key(n)
		if (s.lookupFlow(h, &k) >= 0) != model[k] {
			t.Fatalf("final: key %d: found %v, model %v", n, !model[k], model[k])
		}
	}
	if s.evictedFlows == 0 {
		t.Fatal("no eviction happened: the test does not cover it")
	}
}

// TestSwitchEntryLine: a switch key's entry is one cache line and the table starts a line,
// so that updating a key touches one line.
func TestSwitchEntryLine(t *testing.T) {
	if n := unsafe.Sizeof(swEntry{}); n != 64 {
		t.Fatalf("swEntry is %d bytes, want 64", n)
	}
	for _, n := range []int{1, 7, 648} {
		s := newShard(1, n)
		if p := uintptr(unsafe.Pointer(&s.se[0])); p%64 != 0 || len(s.se) != n || cap(s.se) != n {
			t.Fatalf("%d entries: table at %#x, len %d cap %d", n, p, len(s.se), cap(s.se))
		}
	}
}

// TestLRUTick: an update in the LRU tick of a key's last update leaves the key in its place,
// an update in a later tick moves it to the front; the least recently updated to the tick
// is evicted.
func TestLRUTick(t *testing.T) {
	s := newShard(3, 1)
	var keys [4]telemetry.FlowKey
	for i := range keys {
		keys[i].SetAddrs(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), netip.MustParseAddr("10.9.9.9"))
	}
	const tick = int64(1) << lruTick
	update := func(i int, now int64) {
		e, _ := s.flow(telemetry.FlowHash(&keys[i]), &keys[i], now)
		e.last = now
	}
	order := func() (o []int) {
		for i := s.fl.head; i >= 0; i = s.fl.l[i].next {
			for j := range keys {
				if s.fe[i].key == keys[j] {
					o = append(o, j)
				}
			}
		}
		return o
	}
	update(0, 10*tick)
	update(1, 10*tick+1)
	update(2, 10*tick+2)
	update(0, 11*tick-1) // key 0 again, same tick: stays last
	if o := order(); !reflect.DeepEqual(o, []int{2, 1, 0}) {
		t.Fatalf("after an update in the same tick: %v, want [2 1 0]", o)
	}
	update(1, 11*tick) // key 1 in the next tick: to the front
	if o := order(); !reflect.DeepEqual(o, []int{1, 2, 0}) {
		t.Fatalf("after an update in the next tick: %v, want [1 2 0]", o)
	}
	update(3, 11*tick+5) // full: evicts key 0, the least recently updated to the tick
	if o := order(); !reflect.DeepEqual(o, []int{3, 1, 2}) || s.evictedFlows != 1 {
		t.Fatalf("after an eviction: %v (%d evicted), want [3 1 2]", o, s.evictedFlows)
	}
}

// TestHopMemo: a hop is found through the hop memo, one slot for its queue and port keys,
// once the general path has filled the slot; a slot of which either entry was evicted and
// reused by another key is not believed (the hop takes the general path, which leaves the
// other key's value alone, and refills the slot).
func TestHopMemo(t *testing.T) {
	const qp = telemetry.FNodeID | telemetry.FQueueID | telemetry.FQueueOccupancy | telemetry.FEgressPort | telemetry.FTxUtil | telemetry.FEgressTS
	hop := func(f telemetry.Field, sw uint32, q uint16, port, occ, tx uint32) telemetry.Report {
		var r telemetry.Report
		r.RecvTime = 1 << 30
		*r.AddHop() = telemetry.Hop{Fields: f, NodeID: sw, QueueID: q, EgressPort: port, QueueOccupancy: occ, TxUtil: tx, EgressTS: 99}
		return r
	}
	a := hop(qp, 1, 3, 7, 10, 20)
	// other's value is a's: only the keys tell its entry from a's
	other := hop(telemetry.FNodeID|telemetry.FQueueID|telemetry.FQueueOccupancy, 2, 0, 0, 12, 0)
	for _, tc := range []struct {
		name    string
		pre     []telemetry.Report // before hop a
		evicted swKey              // the key of a's that other evicts
	}{
		// a's queue key is made first: the least recently used of the two
		{"queue", nil, swKey{sw: 1, id: 3, kind: kQueue}},
		// a's port key was made before, in the same LRU tick: a's update leaves it last
		{"port", []telemetry.Report{hop(telemetry.FNodeID|telemetry.FEgressPort|telemetry.FTxUtil, 1, 0, 7, 0, 20)}, swKey{sw: 1, id: 7, kind: kPort}},
	} {
		cfg := DefaultConfig()
		cfg.Shards, cfg.MaxKeys = 1, 2
		d := New(cfg, Deps{})
		s, b := d.shards[0], d.workers[0].b
		value := func(k swKey) (uint64, bool) {
			for i := range s.se {
				if s.se[i].key == k {
					return s.se[i].v[0].cur, true
				}
			}
			return 0, false
		}
		fast := func(occ, tx uint32) bool {
			h := a.Hops[0]
			h.QueueOccupancy, h.TxUtil = occ, tx
			return hopFast(s, switchHash(h.NodeID), &b.thr, a.RecvTime, &h)
		}
		d.ProcessBatch(0, append(tc.pre, a))
		if !fast(11, 21) {
			t.Fatalf("%s: a known hop whose values raise nothing is not done through the memo", tc.name)
		}
		if q, _ := value(swKey{sw: 1, id: 3, kind: kQueue}); q != 11 {
			t.Fatalf("%s: queue occupancy %d after the memo's path, want 11", tc.name, q)
		}
		if p, _ := value(swKey{sw: 1, id: 7, kind: kPort}); p != 21 {
			t.Fatalf("%s: tx utilization %d after the memo's path, want 21", tc.name, p)
		}
		d.ProcessBatch(0, []telemetry.Report{other})
		if _, ok := value(tc.evicted); ok {
			t.Fatalf("%s: %+v was not evicted: the test does not cover a stale slot", tc.name, tc.evicted)
		}
		if fast(12, 22) {
			t.Fatalf("%s: a slot naming an entry that now holds another key was believed", tc.name)
		}
		if q, _ := value(swKey{sw: 2, id: 0, kind: kQueue}); q != 12 {
			t.Fatalf("%s: the other hop's queue occupancy is %d, want 12", tc.name, q)
		}
		if e := s.se[s.sl.head]; e.key.sw != 2 || e.dev != 0 { // a's hop would leave its EgressTS
			t.Fatalf("%s: the other hop's entry was updated: %+v", tc.name, e)
		}
		later := a
		later.RecvTime += 2 << lruTick // a's keys move to the front: other's is evicted
		d.ProcessBatch(0, []telemetry.Report{later})
		if !fast(13, 23) {
			t.Fatalf("%s: the general path did not refill the slot", tc.name)
		}
	}
}
