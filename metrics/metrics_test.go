package metrics

import (
	"bytes"
	"math"
	"testing"
)

func TestWriteText(t *testing.T) {
	r := NewRegistry()
	pk := r.Counter("intake_packets_received_total", "Datagrams received, by listener.", "listener", "format")
	pk.With("report:32766", "report").Add(12)
	pk.With("dta:40040", "dta").Inc()
	r.Gauge("intake_uptime_seconds", "Seconds since start.").Func(func() float64 { return 1.5 })
	r.Gauge("intake_rcvbuf_bytes", "Receive buffer.\nSecond line with \\ backslash.", "listener").With(`we"ird\name` + "\n").SetInt(8388608)
	e := r.Counter("intake_decode_errors_total", "Decode errors by reason.", "reason")
	e.Func(func() float64 { return 3 }, "truncated")
	e.With("bad_value")
	r.Gauge("intake_special", "Special values.", "v").With("nan").Set(math.NaN())
	r.Gauge("intake_special", "Special values.", "v").With("inf").Set(math.Inf(1))
	r.Gauge("intake_special", "Special values.", "v").With("frac").Set(0.25)
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := `# HELP intake_decode_errors_total Decode errors by reason.
# TYPE intake_decode_errors_total counter
intake_decode_errors_total{reason="bad_value"} 0
intake_decode_errors_total{reason="truncated"} 3
# HELP intake_packets_received_total Datagrams received, by listener.
# TYPE intake_packets_received_total counter
intake_packets_received_total{listener="dta:40040",format="dta"} 1
intake_packets_received_total{listener="report:32766",format="report"} 12
# HELP intake_rcvbuf_bytes Receive buffer.\nSecond line with \\ backslash.
# TYPE intake_rcvbuf_bytes gauge
intake_rcvbuf_bytes{listener="we\"ird\\name\n"} 8388608
# HELP intake_special Special values.
# TYPE intake_special gauge
intake_special{v="frac"} 0.25
intake_special{v="inf"} +Inf
intake_special{v="nan"} NaN
# HELP intake_uptime_seconds Seconds since start.
# TYPE intake_uptime_seconds gauge
intake_uptime_seconds 1.5
`
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"prefix":    func() { NewRegistry().Counter("packets_total", "x") },
		"badname":   func() { NewRegistry().Counter("intake_a-b", "x") },
		"badlabel":  func() { NewRegistry().Counter("intake_a", "x", "1l") },
		"mismatch":  func() { r := NewRegistry(); r.Counter("intake_a", "x"); r.Gauge("intake_a", "x") },
		"numvalues": func() { NewRegistry().Counter("intake_a", "x", "l").With() },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// The hot path counts in plain fields and publishes once per batch of 64; these measure that
// against an atomic add per event.
func BenchmarkBatchedInc(b *testing.B) {
	var v Value
	var n uint64
	for i := 0; b.Loop(); i++ {
		n++
		if i&63 == 63 {
			v.Add(n)
			n = 0
		}
	}
	v.Add(n)
}

func BenchmarkAtomicInc(b *testing.B) {
	var v Value
	for b.Loop() {
		v.Inc()
	}
}
