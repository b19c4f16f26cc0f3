package xdp

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/telemetry"
)

// dtaStream returns a gen DTA stream's datagrams and reports.
func dtaStream(t *testing.T, op string, redundancy, batch, n int, seed uint64) ([][]byte, [][]telemetry.Report) {
	t.Helper()
	cfg := gen.DefaultConfig()
	cfg.Format, cfg.DTA.Op, cfg.DTA.Redundancy, cfg.Batch, cfg.Seed, cfg.Flows = "dta", op, redundancy, batch, seed, 500
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bs [][]byte
	var rs [][]telemetry.Report
	if err := g.Walk(uint64(n), func(_ uint64, b []byte, r []telemetry.Report) error {
		bs = append(bs, append([]byte(nil), b...))
		rs = append(rs, append([]telemetry.Report(nil), r...))
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	return bs, rs
}

// TestKernelDTAStores: the program writes single Key-Write, Key-Increment and Append reports
// into its arrays exactly as the user-space stores write them: after the same stream, the
// kernel's memory equals a user-space store's byte for byte (Append: lists that wrap, head,
// reserve and done), and queries through package dta answer the same. Batches and reports
// the translator would refuse (redundancy, list id) go to user space.
func TestKernelDTAStores(t *testing.T) {
	v := xdptest.New(t)
	dc := dta.DefaultConfig()
	dc.KeyWrite.Slots, dc.KeyIncrement.Slots = 1<<12, 1<<10
	// 8 lists of 64 entries: the generator appends to lists 1-16 (its switch ids), so that
	// half are the kernel's and wrap, the rest refused (bad list id) and go to user space.
	dc.Append.Lists, dc.Append.Entries = 8, 64
	d := DTA{HeaderLen: 2, KeyLen: 4, DataLen: 4, Seed: dc.Seed, KWSlots: dc.KeyWrite.Slots, KWMaxN: dc.KeyWrite.MaxRedundancy,
		KWCheckBits: dc.KeyWrite.ChecksumBits, KWValueBytes: dc.KeyWrite.ValueBytes, KISlots: dc.KeyIncrement.Slots, KIMaxN: dc.KeyIncrement.MaxRedundancy,
		APLists: dc.Append.Lists, APEntries: dc.Append.Entries}
	st, err := NewDTAStores(d)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := attachOrSkip(t, v, 40040, Options{Stores: st})
	s, err := Open(p.Ifindex(), 0, 1<<22) // 1024 frames: what goes to user space waits in the ring
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := p.Register(0, s); err != nil {
		t.Fatal(err)
	}

	// The reference: user-space stores of the same geometry, fed what the kernel takes.
	kwr, err := dta.AnonRegion(dta.KWHeader(dc.KeyWrite, dc.Seed))
	if err != nil {
		t.Fatal(err)
	}
	kw, _ := dta.NewKeyWrite(kwr)
	kir, err := dta.AnonRegion(dta.KIHeader(dc.KeyIncrement, dc.Seed))
	if err != nil {
		t.Fatal(err)
	}
	ki, _ := dta.NewKeyIncrement(kir)
	apr, err := dta.AnonRegion(dta.AppendHeader(dc.Append))
	if err != nil {
		t.Fatal(err)
	}
	ap, err := dta.NewAppend(apr)
	if err != nil {
		t.Fatal(err)
	}
	apb := ap.NewBatcher(1)

	kwb, kwr2 := dtaStream(t, "key-write", 2, 1, 400, 1)
	kib, kir2 := dtaStream(t, "key-increment", 1, 1, 400, 2)
	up1, _ := dtaStream(t, "key-write", 2, 4, 10, 3)         // batches
	up2, _ := dtaStream(t, "key-write", d.KWMaxN+1, 1, 7, 4) // redundancy above the store's
	apAll, apr2 := dtaStream(t, "append", 1, 1, 1500, 5)
	var apk, up3 [][]byte // the kernel's appends; those to a list beyond the store's
	for i, b := range apAll {
		r := &apr2[i][0].DTA
		if int(r.ListID) >= dc.Append.Lists {
			up3 = append(up3, b)
			continue
		}
		apk = append(apk, b)
		apb.Add(int(r.ListID), r.DataBytes())
	}
	for i := range kwb {
		r := &kwr2[i][0].DTA
		kw.Insert(r.KeyBytes(), r.DataBytes(), int(r.Redundancy))
	}
	for i := range kib {
		r := &kir2[i][0].DTA
		ki.Add(r.KeyBytes(), r.Counter, ki.MaxN())
	}
	dst := net.JoinHostPort(v.Host, "40040")
	v.Send(t, "udp4", dst, kwb...)
	v.Send(t, "udp4", dst, kib...)
	v.Send(t, "udp4", dst, apk...)
	up := append(append(append([][]byte(nil), up1...), up2...), up3...)
	v.Send(t, "udp4", dst, up...)
	got := receive(t, s, len(up))
	if len(got) != len(up) {
		t.Fatalf("user space received %d datagrams, want %d", len(got), len(up))
	}
	for i := range up {
		if !bytes.Equal(got[i], up[i]) {
			t.Errorf("datagram %d to user space: %x, want %x", i, got[i], up[i])
		}
	}
	var c [NumOutcomes]uint64
	testutil.Eventually(t, 2*time.Second, "every DTA report counted", func() bool {
		p.Counts(&c)
		return c[DTAKeyWrite]+c[DTAKeyIncrement]+c[DTAAppend] >= uint64(len(kwb)+len(kib)+len(apk))
	})
	if c[DTAKeyWrite] != uint64(len(kwb)) || c[DTAKeyIncrement] != uint64(len(kib)) || c[DTAAppend] != uint64(len(apk)) ||
		c[Redirected] != uint64(len(up)) {
		t.Fatalf("outcomes %v: want %d key-write, %d key-increment, %d append, %d redirected", c, len(kwb), len(kib), len(apk), len(up))
	}
	if len(apk) < 100 || len(up3) == 0 {
		t.Fatalf("%d appends for the kernel, %d refused: the stream does not exercise both", len(apk), len(up3))
	}
	if !bytes.Equal(st.KW, kwr.Data) {
		t.Errorf("the kernel's Key-Write store differs from user space's (%d of %d slots)", diffSlots(st.KW, kwr.Data), len(st.KW)/8)
	}
	if !bytes.Equal(st.KI, kir.Data) {
		t.Errorf("the kernel's Key-Increment store differs from user space's (%d of %d slots)", diffSlots(st.KI, kir.Data), len(st.KI)/8)
	}
	if !bytes.Equal(st.AP, apr.Data) {
		t.Errorf("the kernel's Append store differs from user space's (%d of %d words)", diffSlots(st.AP, apr.Data), len(st.AP)/8)
	}
	kap, _ := dta.NewAppend(must(dta.RegionOver(dta.AppendHeader(dc.Append), st.AP)))
	for l := range dc.Append.Lists {
		if kap.Head(l) != ap.Head(l) {
			t.Errorf("list %d: head %d in the kernel's store, %d in user space's", l, kap.Head(l), ap.Head(l))
		}
	}
	// Queried through package dta, over the kernel's memory.
	kreg, err := dta.RegionOver(dta.KWHeader(dc.KeyWrite, dc.Seed), st.KW)
	if err != nil {
		t.Fatal(err)
	}
	kkw, _ := dta.NewKeyWrite(kreg)
	found := 0
	for i := range kwb {
		r := &kwr2[i][0].DTA
		a, _ := kkw.Query(r.KeyBytes(), kkw.MaxN(), 1)
		b, _ := kw.Query(r.KeyBytes(), kw.MaxN(), 1)
		if a != b {
			t.Fatalf("key %x: kernel store answers %+v, user space %+v", r.KeyBytes(), a, b)
		}
		if a.Status == dta.Found {
			found++
		}
	}
	if found == 0 {
		t.Error("no key found")
	}
	t.Logf("%d key-write queries answered alike (%d found)", len(kwb), found)
	_ = fmt.Sprint
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func diffSlots(a, b []byte) int {
	n := 0
	for i := 0; i+8 <= len(a) && i+8 <= len(b); i += 8 {
		if !bytes.Equal(a[i:i+8], b[i:i+8]) {
			n++
		}
	}
	return n
}
