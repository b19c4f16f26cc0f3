package cli

import (
	"bytes"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

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
		var warn bytes.Buffer
		q := AddQuery(fs, c.jsonDefault, &warn)
		if err := fs.Parse(append(c.args, "--addr", "h:1")); err != nil {
			t.Fatal(err)
		}
		if w := "intake: --addr is deprecated: use --api, which means the same\n"; warn.String() != w {
			t.Errorf("--addr warns %q, want %q", warn.String(), w)
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
	// The end draws 100 % and clears the line (issue 31: it stayed, ending in a newline).
	if b.String() != "\rsim [###############               ]  50.0% 0s\rsim [##############################] 100.0% 0s\r\033[K" {
		t.Errorf("bar %q", b.String())
	}
}
