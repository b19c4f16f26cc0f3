package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

func TestNanosFlowPath(t *testing.T) {
	for ns, want := range map[float64]string{0: "0 ns", 850: "850 ns", 1000: "1.00 µs", 20412: "20.4 µs", 123456: "123 µs",
		1.25e6: "1.25 ms", 2e9: "2.00 s", 99.96e3: "100 µs", 10.5: "10.5 ns", 33.25: "33.2 ns", 0.4: "0 ns"} {
		if got := Nanos(ns); got != want {
			t.Errorf("Nanos(%g) = %q, want %q", ns, got, want)
		}
	}
	v := uint64(3100)
	if got := NanosOf(&v) + " " + NanosOf[float64](nil); got != "3.10 µs -" {
		t.Errorf("NanosOf: %q", got)
	}
	if got := Flow("10.0.0.1", 1000, "172.16.0.1", 5201, 17); got != "10.0.0.1:1000 > 172.16.0.1:5201 udp" {
		t.Errorf("Flow: %q", got)
	}
	if got := Flow("2001:db8::1", 1, "2001:db8::2", 2, 47); got != "[2001:db8::1]:1 > [2001:db8::2]:2 proto 47" {
		t.Errorf("Flow v6: %q", got)
	}
	if got := Path([]uint32{14, 2, 10}); got != "14 > 2 > 10" {
		t.Errorf("Path: %q", got)
	}
}

// --pps is a rate with multipliers; --rate, the older name, sets it and warns.
func TestRateAlias(t *testing.T) {
	var warn bytes.Buffer
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pps := Rate(fs, "pps", "rate", 2000, "`PPS` packets per second", &warn)
	if *pps != 2000 {
		t.Errorf("default %g", *pps)
	}
	if err := fs.Parse([]string{"--pps", "5k"}); err != nil || *pps != 5000 || warn.Len() != 0 {
		t.Errorf("--pps 5k: %g %v %q", *pps, err, warn.String())
	}
	if err := fs.Parse([]string{"--rate", "1.5M"}); err != nil || *pps != 1.5e6 || warn.String() != "intake: --rate is deprecated: use --pps, which means the same\n" {
		t.Errorf("--rate 1.5M: %g %v %q", *pps, err, warn.String())
	}
	if err := fs.Parse([]string{"--pps", "fast"}); err == nil || !strings.Contains(err.Error(), "want a number, optionally with k, M or G") {
		t.Errorf("--pps fast: %v", err)
	}
}

func TestQuery(t *testing.T) {
	for _, c := range []struct {
		args        []string
		jsonDefault bool
		want        bool
		err         string
	}{
		{nil, false, false, ""},
		{nil, true, true, ""},
		{[]string{"--json"}, false, true, ""},
		{[]string{"--table"}, true, false, ""},
		{[]string{"--json", "--table"}, false, false, "--json and --table exclude each other"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		q := AddQuery(fs, c.jsonDefault)
		if err := fs.Parse(append(c.args, "--addr", "h:1")); err != nil {
			t.Fatal(err)
		}
		got, err := q.WantJSON()
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err || q.API != "h:1" {
			t.Errorf("%v default json %v: %v %v %q", c.args, c.jsonDefault, got, err, q.API)
		}
	}
}

// A pipe, a file and /dev/null are not terminals: no progress bar goes to them.
func TestNotTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for _, f := range []io.Writer{w, null, &bytes.Buffer{}} {
		if IsTerminal(f) || Progress(f, "x") != nil {
			t.Errorf("%T is a terminal", f)
		}
	}
	var b bytes.Buffer
	bar := Bar(&b, "sim")
	bar(1, 2)
	bar(2, 2)
	if !strings.HasPrefix(b.String(), "\rsim [###############               ]  50.0% 0s\rsim [##############################] 100.0% 0s\n") {
		t.Errorf("bar %q", b.String())
	}
}
