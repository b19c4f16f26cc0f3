package collector

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/xdptest"
	"github.com/intake-int/intake/telemetry"
)

func dtaStream(t *testing.T, op string, batch, n int, seed uint64) ([][]byte, []telemetry.Report) {
	t.Helper()
	cfg := gen.DefaultConfig()
	cfg.Format, cfg.DTA.Op, cfg.DTA.Redundancy, cfg.Batch, cfg.Seed, cfg.Flows = "dta", op, 2, batch, seed, 500
	return genStream(t, cfg, n)
}

// TestKernelDTA runs the collector with dta.kernel on an xdp dta listener: single Key-Write,
// Key-Increment and Append reports are written by the XDP program, batches by the
// translator, into the same memory (Append: the same lists); the stores equal user-space stores fed the same stream byte for byte,
// while the collector runs (through the translator and through a reader, which maps the
// BPF arrays the headers name) and after it stops (the files took the data back).
func TestKernelDTA(t *testing.T) {
	v := xdptest.New(t)
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.Detect.Enabled, cfg.FlowCache.Enabled, cfg.Label.Enabled = false, false, false
	cfg.Listeners = []ingest.Listener{{Format: "dta", Mode: ingest.ModeXDP, Interface: v.Dev, Port: 40040, Sockets: 1, RcvBuf: 1 << 20}}
	cfg.DTA.Kernel = true
	cfg.DTA.DataDir = t.TempDir()
	cfg.DTA.KeyWrite.Slots, cfg.DTA.KeyIncrement.Slots = 1<<12, 1<<10
	c, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)

	kwb, kwr := dtaStream(t, "key-write", 1, 400, 1)
	kib, kir := dtaStream(t, "key-increment", 1, 300, 2)
	apb, apr := dtaStream(t, "append", 1, 300, 4)
	upb, upr := dtaStream(t, "key-write", 4, 20, 3) // batches: the translator's
	upa, upar := dtaStream(t, "append", 4, 20, 5)   // the same lists, the translator's
	// The generator appends to lists 1-16, its switch ids: list 16 is beyond the store's 16
	// lists, which the program leaves to the translator (bad_list_id).
	var apk [][]byte
	badList := 0
	for i, b := range apb {
		if int(apr[i].DTA.ListID) < cfg.DTA.Append.Lists {
			apk = append(apk, b)
		} else {
			badList++
		}
	}
	for _, r := range upar {
		if int(r.DTA.ListID) >= cfg.DTA.Append.Lists {
			badList++
		}
	}
	dst := net.JoinHostPort(v.Host, "40040")
	v.Send(t, "udp4", dst, kwb...)
	v.Send(t, "udp4", dst, kib...)
	v.Send(t, "udp4", dst, apb...)
	// After the singles have been written: a Key-Write slot keeps its last writer, and a
	// list its order, so the reference must see the writes in the same order.
	waitFrames(t, c, "dta_key_write", uint64(len(kwb)))
	waitFrames(t, c, "dta_key_increment", uint64(len(kib)))
	waitFrames(t, c, "dta_append", uint64(len(apk)))
	c.Receiver.Settle()
	v.Send(t, "udp4", dst, upb...)
	v.Send(t, "udp4", dst, upa...)
	c.Receiver.Settle()
	c.Translator.Flush(0)

	ref := reference(t, cfg.DTA, append(append(append(append(kwr, kir...), apr...), upr...), upar...))
	st := c.Translator.St
	if !bytes.Equal(st.KW.R.Data, ref.kw) || !bytes.Equal(st.KI.R.Data, ref.ki) || !bytes.Equal(st.AP.R.Data, ref.ap) {
		t.Fatal("the stores written by the kernel and the translator differ from the user-space reference")
	}
	if w := c.Translator.Written(dta.WKeyWrite); w != uint64(len(upr)) {
		t.Errorf("the translator wrote %d Key-Write reports, want the %d of the batches", w, len(upr))
	}
	if w, bad := c.Translator.Written(dta.WAppend), c.Translator.Bad(dta.BadListID); w+bad != uint64(len(upar)+len(apr)-len(apk)) || bad != uint64(badList) {
		t.Errorf("the translator wrote %d Append reports and refused %d, want %d written and %d refused", w, bad, len(upar)+len(apr)-len(apk)-badList, badList)
	}
	if badList == 0 || len(apk) < 200 {
		t.Fatalf("%d appends for the kernel, %d to a list beyond the store's: the stream does not exercise both", len(apk), badList)
	}
	l := c.Receiver.Status().Listeners[0]
	userDgrams, userReports := len(upb)+len(upa)+len(apb)-len(apk), len(upr)+len(upar)+len(apr)-len(apk)
	if l.ReportsDecoded != uint64(userReports) || l.PacketsReceived != uint64(userDgrams) {
		t.Errorf("user space decoded %d reports of %d datagrams, want %d of %d", l.ReportsDecoded, l.PacketsReceived, userReports, userDgrams)
	}
	// A reader (intake query --store) while the collector runs: the headers name the
	// arrays, which it maps.
	checkReader(t, cfg.DTA.DataDir, true, ref)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	checkReader(t, cfg.DTA.DataDir, false, ref)

	// A restart puts the files' data back into new arrays: nothing is lost.
	c2, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c2.Stop(ctx)
	if st := c2.Translator.St; !bytes.Equal(st.KW.R.Data, ref.kw) || !bytes.Equal(st.KI.R.Data, ref.ki) || !bytes.Equal(st.AP.R.Data, ref.ap) {
		t.Error("after a restart the kernel stores do not hold the files' data")
	}
}

func waitFrames(t *testing.T, c *Collector, outcome string, want uint64) {
	t.Helper()
	var got uint64
	testutil.Eventually(t, 3*time.Second, fmt.Sprintf("%d frames of outcome %s", want, outcome), func() bool {
		got = c.Receiver.Status().Listeners[0].XDPFrames[outcome]
		return got >= want
	})
	if got != want {
		t.Fatalf("xdp %s %d, want %d", outcome, got, want)
	}
}

// stores is the data of a Key-Write, a Key-Increment and an Append region.
type stores struct{ kw, ki, ap []byte }

// reference applies reports to user-space stores of cfg's geometry, as the translator does.
func reference(t *testing.T, cfg dta.Config, rs []telemetry.Report) stores {
	kwr, err := dta.AnonRegion(dta.KWHeader(cfg.KeyWrite, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	kir, err := dta.AnonRegion(dta.KIHeader(cfg.KeyIncrement, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	apr, err := dta.AnonRegion(dta.AppendHeader(cfg.Append))
	if err != nil {
		t.Fatal(err)
	}
	kws, _ := dta.NewKeyWrite(kwr)
	kis, _ := dta.NewKeyIncrement(kir)
	aps, _ := dta.NewAppend(apr)
	apb := aps.NewBatcher(1)
	for i := range rs {
		d := &rs[i].DTA
		switch d.Op {
		case telemetry.DTAKeyWrite:
			kws.Insert(d.KeyBytes(), d.DataBytes(), int(d.Redundancy))
		case telemetry.DTAKeyIncrement:
			kis.Add(d.KeyBytes(), d.Counter, kis.MaxN())
		case telemetry.DTAAppend:
			if int(d.ListID) < aps.Lists() {
				apb.Add(int(d.ListID), d.DataBytes())
			}
		}
	}
	return stores{kwr.Data, kir.Data, apr.Data}
}

func checkReader(t *testing.T, dir string, running bool, want stores) {
	t.Helper()
	s, err := dta.OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.KW.R.KernelMap() != 0 && s.AP.R.KernelMap() != 0; got != running {
		t.Errorf("running %v: the Key-Write and Append headers name kernel arrays: %v", running, got)
	}
	if !bytes.Equal(s.KW.R.Data, want.kw) || !bytes.Equal(s.KI.R.Data, want.ki) || !bytes.Equal(s.AP.R.Data, want.ap) {
		t.Errorf("running %v: a reader sees stores that differ from the reference", running)
	}
}

func TestKernelDTANeedsXDPListener(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP.Address = ""
	cfg.DTA.Kernel = true
	_, err := New(cfg, Options{NoHTTP: true})
	if err == nil || err.Error() != "dta.kernel: true: needs a listener with format dta and mode xdp (its XDP program writes the stores)" {
		t.Errorf("error %v", err)
	}
	cfg.DTA.KeyWrite.ValueBytes = 8
	if _, err := New(cfg, Options{NoHTTP: true}); err == nil || !strings.Contains(err.Error(), "kernel: true: key_write.value_bytes 8: at most 4") {
		t.Errorf("error %v", err)
	}
}
