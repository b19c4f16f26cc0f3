package dta

import (
	"context"
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

// startImmediate starts a translator over small stores in a temporary directory, on bus.
func startImmediate(tb testing.TB, bus *event.Bus) *Translator {
	tb.Helper()
	tr := NewTranslator(smallConfig(tb.TempDir()), Deps{Workers: 1, Bus: bus})
	if err := tr.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { tr.Stop(context.Background()) })
	return tr
}

// A written DTA report with the immediate flag raises exactly one immediate event (opcode in
// Prev, the key's Hash64 under dta.seed or an Append's list id in Value, the receive time),
// one without the flag none, and a flagged report that is not written (bad input) none.
func TestTranslatorImmediate(t *testing.T) {
	var bus event.Bus
	c := bus.Subscribe("test", 64)
	tr := startImmediate(t, &bus)
	kw := dtaRep(telemetry.DTAKeyWrite, 0xdeadbeef, 4, 4)
	kw.DTA.Redundancy, kw.RecvTime = 2, 1_000
	ap := dtaRep(telemetry.DTAAppend, 0, 0, 4)
	ap.DTA.ListID, ap.RecvTime = 3, 2_000
	ki := dtaRep(telemetry.DTAKeyIncrement, 7, 4, 0)
	ki.DTA.Redundancy, ki.DTA.Counter, ki.RecvTime = 1, 5, 3_000
	bad := dtaRep(telemetry.DTAKeyWrite, 9, 4, 4) // redundancy 0: counted bad, not written
	bad.RecvTime = 4_000
	plain := kw
	plain.RecvTime = 5_000
	for _, r := range []*telemetry.Report{&kw, &ap, &ki, &bad} {
		r.DTA.Immediate = true
	}
	tr.ProcessBatch(0, []telemetry.Report{kw, plain, ap, bad, ki})
	var got [8]event.Event
	n := c.Poll(got[:])
	want := []event.Event{
		{Time: 1_000, Kind: event.KindImmediate, Scope: event.ScopeFlow, Prev: uint64(telemetry.DTAKeyWrite),
			Value: Hash64(DefaultSeed, []byte{0xde, 0xad, 0xbe, 0xef})},
		{Time: 2_000, Kind: event.KindImmediate, Scope: event.ScopeFlow, Prev: uint64(telemetry.DTAAppend), Value: 3},
		{Time: 3_000, Kind: event.KindImmediate, Scope: event.ScopeFlow, Prev: uint64(telemetry.DTAKeyIncrement),
			Value: Hash64(DefaultSeed, []byte{0, 0, 0, 7})},
	}
	if n != len(want) {
		t.Fatalf("%d events, want %d: %+v", n, len(want), got[:n])
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The flagged Append's entry is in its list when its event is out (flushed at once).
	if h := tr.St.AP.Head(3); h != 1 {
		t.Errorf("list 3 head %d after the flagged Append, want 1", h)
	}
	// The counter: the three flagged reports written, not the bad one nor the plain one.
	if n := tr.Stats().Immediate; n != 3 {
		t.Errorf("stats immediate %d, want 3", n)
	}
}

// BenchmarkTranslatorDTA is the translator's cost per DTA Key-Write report, with a consumer
// on the bus: plain reports, and reports with the immediate flag (one event each). Neither
// allocates.
func BenchmarkTranslatorDTA(b *testing.B) {
	for _, imm := range []bool{false, true} {
		name := "plain"
		if imm {
			name = "immediate"
		}
		b.Run(name, func(b *testing.B) {
			var bus event.Bus
			c := bus.Subscribe("bench", 1<<10)
			tr := startImmediate(b, &bus)
			rs := make([]telemetry.Report, 16)
			for i := range rs {
				rs[i] = dtaRep(telemetry.DTAKeyWrite, uint32(i), 4, 4)
				rs[i].DTA.Redundancy, rs[i].DTA.Immediate = 2, imm
			}
			var sink [64]event.Event
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += len(rs) {
				tr.ProcessBatch(0, rs)
				c.Poll(sink[:])
			}
		})
	}
}
