package collector

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/dta"
	"github.com/intake-int/intake/gen"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/xdp/xdptest"
)

func dtaStream(t *testing.T, op string, batch, n int, seed uint64) ([][]byte, []telemetry.Report) {
	t.Helper()
	cfg := gen.DefaultConfig()
	cfg.Format, cfg.DTA.Op, cfg.DTA.Redundancy, cfg.Batch, cfg.Seed, cfg.Flows = "dta", op, 2, batch, seed, 500
	g, err := gen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var bs [][]byte
	var rs []telemetry.Report
	if err := g.Walk(uint64(n), func(_ uint64, b []byte, r []telemetry.Report) error {
		bs = append(bs, append([]byte(nil), b...))
		rs = append(rs, r...)
		return nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	return bs, rs
}

// TestKernelDTA runs the collector with dta.kernel on an xdp dta listener: single Key-Write
// and Key-Increment reports are written by the XDP program, batches by the translator, into
// the same memory; the stores equal user-space stores fed the same stream byte for byte,
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
	upb, upr := dtaStream(t, "key-write", 4, 20, 3) // batches: the translator's
	dst := net.JoinHostPort(v.Host, "40040")
	v.Send(t, "udp4", dst, kwb...)
	v.Send(t, "udp4", dst, kib...)
	// After the singles have been written: a Key-Write slot keeps its last writer, so the
	// reference must see the writes in the same order.
	waitFrames(t, c, "dta_key_write", uint64(len(kwb)))
	waitFrames(t, c, "dta_key_increment", uint64(len(kib)))
	v.Send(t, "udp4", dst, upb...)
	c.Receiver.Settle()

	refKW, refKI := reference(t, cfg.DTA, append(append(kwr, kir...), upr...))
	if !bytes.Equal(c.Translator.St.KW.R.Data, refKW) || !bytes.Equal(c.Translator.St.KI.R.Data, refKI) {
		t.Fatal("the stores written by the kernel and the translator differ from the user-space reference")
	}
	if w := c.Translator.Written(dta.WKeyWrite); w != uint64(len(upr)) {
		t.Errorf("the translator wrote %d Key-Write reports, want the %d of the batches", w, len(upr))
	}
	l := c.Receiver.Status().Listeners[0]
	if l.ReportsDecoded != uint64(len(upr)) || l.PacketsReceived != uint64(len(upb)) {
		t.Errorf("user space decoded %d reports of %d datagrams, want %d of %d", l.ReportsDecoded, l.PacketsReceived, len(upr), len(upb))
	}
	// A reader (intake query --store) while the collector runs: the headers name the
	// arrays, which it maps.
	checkReader(t, cfg.DTA.DataDir, true, refKW, refKI)
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	checkReader(t, cfg.DTA.DataDir, false, refKW, refKI)

	// A restart puts the files' data back into new arrays: nothing is lost.
	c2, err := New(cfg, Options{NoHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c2.Stop(ctx)
	if !bytes.Equal(c2.Translator.St.KW.R.Data, refKW) || !bytes.Equal(c2.Translator.St.KI.R.Data, refKI) {
		t.Error("after a restart the kernel stores do not hold the files' data")
	}
}

func waitFrames(t *testing.T, c *Collector, outcome string, want uint64) {
	t.Helper()
	var got uint64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = c.Receiver.Status().Listeners[0].XDPFrames[outcome]; got >= want {
			break
		}
	}
	if got != want {
		t.Fatalf("xdp %s %d, want %d", outcome, got, want)
	}
}

// reference applies reports to user-space stores of cfg's geometry, as the translator does.
func reference(t *testing.T, cfg dta.Config, rs []telemetry.Report) (kw, ki []byte) {
	kwr, err := dta.AnonRegion(dta.KWHeader(cfg.KeyWrite, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	kir, err := dta.AnonRegion(dta.KIHeader(cfg.KeyIncrement, cfg.Seed))
	if err != nil {
		t.Fatal(err)
	}
	kws, _ := dta.NewKeyWrite(kwr)
	kis, _ := dta.NewKeyIncrement(kir)
	for i := range rs {
		d := &rs[i].DTA
		switch d.Op {
		case telemetry.DTAKeyWrite:
			kws.Insert(d.KeyBytes(), d.DataBytes(), int(d.Redundancy))
		case telemetry.DTAKeyIncrement:
			kis.Add(d.KeyBytes(), d.Counter, kis.MaxN())
		}
	}
	return kwr.Data, kir.Data
}

func checkReader(t *testing.T, dir string, running bool, kw, ki []byte) {
	t.Helper()
	s, err := dta.OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.KW.R.KernelMap() != 0; got != running {
		t.Errorf("running %v: the Key-Write header names a kernel array: %v", running, got)
	}
	if !bytes.Equal(s.KW.R.Data, kw) || !bytes.Equal(s.KI.R.Data, ki) {
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
