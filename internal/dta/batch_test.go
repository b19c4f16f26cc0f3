package dta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

// translatorStream is a mixed stream: INT-MD traces of 1 to 7 hops (past B = 5 too, some
// hops without a node id) over 300 flows, a reporter hop in front now and then, INT-XD
// postcards (one hop, the hop number from the remaining hop count), drop and queue reports,
// reports without a flow, and DTA primitives of every kind, some of them bad. The postcard
// cache is small: entries are taken over (early writes).
func translatorStream(n int) []telemetry.Report {
	rng := rand.New(rand.NewPCG(5, 6))
	rs := make([]telemetry.Report, n)
	for i := range rs {
		r := &rs[i]
		if rng.IntN(8) == 0 {
			*r = dtaRep([]telemetry.DTAOp{telemetry.DTAKeyWrite, telemetry.DTAKeyIncrement, telemetry.DTAAppend, telemetry.DTAPostcard}[rng.IntN(4)],
				rng.Uint32N(50), 4, 4)
			r.DTA.Redundancy, r.DTA.Counter, r.DTA.ListID, r.DTA.Hop = uint8(1+rng.IntN(3)), uint64(rng.IntN(9)), uint32(rng.IntN(18)), uint8(rng.IntN(7))
			continue
		}
		r.Format = telemetry.FormatTR20
		if rng.IntN(5) == 0 {
			r.Has |= telemetry.HasNodeID
			r.NodeID = uint32(100 + rng.IntN(5))
			r.Flags = telemetry.Flags(rng.IntN(4)) // drop and queue flags
		}
		if rng.IntN(20) != 0 {
			f := rng.IntN(300)
			r.Has |= telemetry.HasFlow
			if f%10 == 0 {
				r.Flow.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.AddrFrom16([16]byte{0x20, 1, 0xd, 0xb8, 15: byte(f)}))
			} else {
				r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, byte(f >> 8), byte(f)}), netip.MustParseAddr("10.9.0.1"))
			}
			r.Flow.SrcPort, r.Flow.DstPort, r.Flow.Proto = uint16(f), 443, 6
		}
		if rng.IntN(6) == 0 { // a postcard: the reporter's hop only
			h := r.AddHop()
			h.Fields, h.NodeID = telemetry.FNodeID, uint32(1+rng.IntN(40))
			r.INT.RemHops = uint8(rng.IntN(9))
			continue
		}
		if rng.IntN(4) == 0 {
			r.ReporterHop = true
			h := r.AddHop()
			h.Fields, h.NodeID = telemetry.FNodeID, uint32(1+rng.IntN(40))
		}
		nh := 1 + rng.IntN(7)
		for j := 0; j < nh; j++ {
			h := r.AddHop()
			h.NodeID = uint32(1 + rng.IntN(40))
			if rng.IntN(12) != 0 {
				h.Fields = telemetry.FNodeID
			}
		}
	}
	return rs
}

// translatorState is what a translator leaves: every region's bytes, the counters.
type translatorState struct {
	regions                  [][]byte
	bad                      [numBad]uint64
	written                  [numWritten]uint64
	complete, early, flushed uint64
}

func runTranslator(t *testing.T, rs []telemetry.Report, size, workers int) translatorState {
	t.Helper()
	dir := t.TempDir()
	cfg := smallConfig(dir)
	tr := NewTranslator(cfg, Deps{Workers: workers})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if size == 0 {
		for i := range rs {
			tr.Process(0, &rs[i])
			if i%64 == 63 {
				tr.Flush(0)
			}
		}
	} else {
		for i := 0; i < len(rs); i += size {
			tr.ProcessBatch(0, rs[i:min(i+size, len(rs))])
			if i/64 != (i+size)/64 || size > 64 {
				tr.Flush(0)
			}
		}
	}
	tr.Flush(0)
	var st translatorState
	for i := range st.bad {
		st.bad[i] = tr.Bad(i)
	}
	for i := range st.written {
		st.written[i] = tr.Written(i)
	}
	if err := tr.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.complete, st.early, st.flushed = tr.Cache.Complete.Load(), tr.Cache.Early.Load(), tr.Cache.Flushed.Load()
	ro, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, r := range ro.Regions() {
		st.regions = append(st.regions, bytes.Clone(r.Data))
	}
	return st
}

// appendBeforeDone checks that each of an Append region's lists is at rest (head, reserve and
// done equal) and returns the region as a store without the done count had it (done, a
// later field of the list header, zeroed), for the golden hashes of before it.
func appendBeforeDone(t *testing.T, data []byte, lists int) []byte {
	t.Helper()
	data = bytes.Clone(data)
	for l := range lists {
		h := data[l*listHdrBytes:]
		head, reserve, done := binary.LittleEndian.Uint64(h), binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:])
		if head != reserve || done != head {
			t.Errorf("list %d: head %d, reserve %d, done %d: want all equal at rest", l, head, reserve, done)
		}
		clear(h[16:24])
	}
	return data
}

// TestProcessBatchSame: ProcessBatch writes exactly what Process writes, byte for byte in
// every store, with the same counts, for any batch size, Append batches flushed at the same
// points (every 64 reports).
func TestProcessBatchSame(t *testing.T) {
	rs := translatorStream(4000)
	want := runTranslator(t, rs, 0, 1)
	// Process itself writes what it wrote before the batch path (one key hash and one cache
	// lock per report): the regions' SHA-256 from the translator of then, on this stream.
	golden := []string{
		"53216ec9acd540de3b066806599173a0bbcd5c5f7e3bd9d60b0c7306fb7b9694",
		"0fca9e0161879d5b50835a1df472421d771e67e2f6bf454e326b03421c697a07",
		"a058fa4ee9e0d1f52639f0640ad204ff920ad4044752f32c23318b78ab394d3f",
		"6c00a1aa8976cfe2114417e13072c9ea002aa0d0f59d0d0abbd6443a836aa396",
		"93077d9b7eec8b94bef5293a19f4ce02ad251fa2b4a94fd544bd9b1ea9cd5807",
	}
	for i, r := range want.regions {
		if i == 4 {
			r = appendBeforeDone(t, r, smallConfig(t.TempDir()).Append.Lists)
		}
		if sum := fmt.Sprintf("%x", sha256.Sum256(r)); i >= len(golden) || sum != golden[i] {
			t.Errorf("region %d: sha256 %s, the translator before the batch path wrote %v", i, sum, golden[i:min(i+1, len(golden))])
		}
	}
	if fmt.Sprint(want.bad, want.written, want.complete, want.early, want.flushed) != "[0 46 17 0 0 43 0] [134 88 115 102 3281 9447 676 3281 0] 2584 729 4" {
		t.Errorf("counts %v %v %d %d %d differ from the translator's before the batch path", want.bad, want.written, want.complete, want.early, want.flushed)
	}
	if want.complete == 0 || want.early == 0 || want.flushed == 0 || want.written[WINTPostcard] == 0 || want.written[WINTAppend] == 0 ||
		want.written[WKeyWrite] == 0 || want.written[WPostcard] == 0 || want.bad[BadHop] == 0 || want.bad[BadListID] == 0 {
		t.Fatalf("the stream does not exercise every path: %+v", want)
	}
	for _, size := range []int{1, 7, 16, 64} {
		got := runTranslator(t, rs, size, 1)
		if got.bad != want.bad || got.written != want.written || got.complete != want.complete || got.early != want.early || got.flushed != want.flushed {
			t.Errorf("batch %d: counts differ:\ngot  bad %v written %v chunks %d/%d/%d\nwant bad %v written %v chunks %d/%d/%d", size,
				got.bad, got.written, got.complete, got.early, got.flushed, want.bad, want.written, want.complete, want.early, want.flushed)
		}
		for i := range want.regions {
			if !bytes.Equal(got.regions[i], want.regions[i]) {
				t.Errorf("batch %d: region %d differs", size, i)
			}
		}
	}
}

// TestProcessBatchConcurrent: workers batch reports of shared flows at once (run with
// -race); the counts are exact and every flow's counter is its number of reports.
func TestProcessBatchConcurrent(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.KeyIncrement.Slots = 1 << 16 // no collisions among 16 flows: exact counts
	const workers, per = 4, 2000
	tr := NewTranslator(cfg, Deps{Workers: workers})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := make([]telemetry.Report, 50)
			for i := 0; i < per; i += len(rs) {
				for j := range rs {
					r := &rs[j]
					*r = telemetry.Report{Format: telemetry.FormatTR20, Has: telemetry.HasFlow}
					r.Flow.SetAddrs(netip.AddrFrom4([4]byte{10, 0, 0, byte((i + j) % 16)}), netip.MustParseAddr("10.9.0.1"))
					for k := 0; k < 5; k++ {
						h := r.AddHop()
						h.Fields, h.NodeID = telemetry.FNodeID, uint32(k+1)
					}
				}
				tr.ProcessBatch(w, rs)
				tr.Flush(w)
			}
		}()
	}
	wg.Wait()
	if got := tr.Written(WINTCounter); got != workers*per {
		t.Errorf("counters written %d, want %d", got, workers*per)
	}
	if got := tr.Written(WINTPostcard); got != 5*workers*per {
		t.Errorf("postcards written %d, want %d", got, 5*workers*per)
	}
	var kb [40]byte
	for f := 0; f < 16; f++ {
		var k telemetry.FlowKey
		k.SetAddrs(netip.AddrFrom4([4]byte{10, 0, 0, byte(f)}), netip.MustParseAddr("10.9.0.1"))
		if n, _ := tr.St.KI.Count(FlowKeyBytes(&kb, &k), 0); n != workers*per/16 {
			t.Errorf("flow %d counted %d, want %d", f, n, workers*per/16)
		}
	}
	if err := tr.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := tr.Cache.Complete.Load(); c != workers*per {
		t.Errorf("%d complete chunks, want %d", c, workers*per)
	}
}

func TestProcessBatchNoAlloc(t *testing.T) {
	tr := NewTranslator(smallConfig(t.TempDir()), Deps{Workers: 1})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer tr.Stop(context.Background())
	rs := translatorStream(64)
	tr.ProcessBatch(0, rs)
	if a := testing.AllocsPerRun(200, func() {
		tr.ProcessBatch(0, rs)
		tr.Flush(0)
	}); a != 0 {
		t.Fatalf("ProcessBatch: %v allocs per batch", a)
	}
}
