package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/budget"
)

// TestIntegers: an integer key takes an integer only; before, yaml.v3 cut 16384.5 to 16384.
func TestIntegers(t *testing.T) {
	for doc, want := range map[string]string{
		"flowcache: {rows: 16384.5}\n":                  "flowcache.rows: 16384.5: must be an integer",
		"flowcache: {rows: 1e3}\n":                      "flowcache.rows: 1e3: must be an integer",
		"listeners: [{format: report, port: 80.0}]\n":   "listeners[0].port: 80.0: must be an integer",
		"detect: {change: {flow_latency: 1.5}}\n":       "detect.change.flow_latency: 1.5: must be a non-negative integer, or null or off (no such rule)",
		"dta: {key_write: {slots: '1024'}}\n":           "dta.key_write.slots: 1024: must be an integer",
		"decoder: {dta: {key_len: 4.0}}\n":              "decoder.dta.key_len: 4.0: must be an integer",
		"label: {max_shift: true}\n":                    "label.max_shift: true: must be an integer",
		"detect: {change: {flow_latency: [1]}}\n":       "detect.change.flow_latency: [1]: must be a non-negative integer, or null or off (no such rule)",
		"detect: {change: {flow_latency: on}}\n":        "detect.change.flow_latency: on: must be a non-negative integer, or null or off (no such rule)",
		"dta: {seed: 0x10, key_write: {slots: 2048}}\n": "",
	} {
		_, err := Parse([]byte(doc))
		if got := errString(err); got != want {
			t.Errorf("%q: %q, want %q", doc, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestZeroDurations: a bare 0 is accepted for every duration (docs/config.md documents 0 as
// off for many); before, `export.period: 0` was "must be a duration". A duration whose
// minimum is above 0 says so.
func TestZeroDurations(t *testing.T) {
	c, err := Parse([]byte(`
listeners: [{format: report, port: 1, coalesce: 0}]
detect: {expire: 0}
flowcache: {idle_timeout: 0}
dta: {epochs: {period: 0}, key_increment: {reset_period: 0}}
export: {period: 0, redis: {hash_period: 0}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if *c.Listeners[0].Coalesce != 0 || c.Detect.Expire != 0 || c.FlowCache.IdleTimeout != 0 || c.DTA.Epochs.Period != 0 ||
		c.DTA.KeyIncrement.ResetPeriod != 0 || c.Export.Period != 0 || c.Export.Redis.HashPeriod != 0 {
		t.Errorf("not 0: %+v", c)
	}
	for doc, want := range map[string]string{
		"flowcache: {age_interval: 0}\n": "flowcache.age_interval: 0s: must be at least 10ms",
		"export: {period: 1}\n":          "export.period: 1: must be a duration such as 1ms",
		"export: {period: -0}\n":         "export.period: -0: must be a duration such as 1ms",
	} {
		if _, err := Parse([]byte(doc)); errString(err) != want {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
}

// TestSizeCap: the file is read up to MaxFileSize; before, /dev/zero grew without bound.
// /dev/zero, not a regular file, is now refused before a byte is read.
func TestSizeCap(t *testing.T) {
	start := time.Now()
	_, err := Load("/dev/zero")
	if err == nil || err.Error() != "open /dev/zero: a character device, not a regular file" {
		t.Errorf("/dev/zero: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("/dev/zero took %s", d)
	}
	p := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(p, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.HasSuffix(err.Error(), ": larger than 1048576 bytes: not a configuration file") {
		t.Errorf("large file: %v", err)
	}
}

// TestLevels: null and off turn a rule off, defaults included; the largest integer is a
// level in force; a dump says off for every rule off, so that it reads back the same.
func TestLevels(t *testing.T) {
	c, err := Parse([]byte("detect:\n  change: {flow_latency: off, drops: null, queue_occupancy: 18446744073709551615}\n  above: {tx_utilization: 90}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Detect.Change["flow_latency"]; ok {
		t.Error("flow_latency: off is still on")
	}
	if _, ok := c.Detect.Change["drops"]; ok {
		t.Error("drops: null is still on")
	}
	if c.Detect.Change["queue_occupancy"] != 1<<64-1 || c.Detect.Change["flow_hop_latency"] != 50 || c.Detect.Above["tx_utilization"] != 90 || len(c.Detect.Above) != 1 {
		t.Errorf("change %v above %v", c.Detect.Change, c.Detect.Above)
	}
	d := c.Dump()
	if !strings.Contains(string(d), "        flow_latency: \"off\"\n") || !strings.Contains(string(d), "        queue_occupancy: 18446744073709551615\n") {
		t.Errorf("dump:\n%s", d)
	}
	c2, err := Parse(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(c2.Dump()) != string(d) {
		t.Errorf("dump does not round-trip:\n%s", c2.Dump())
	}
	if _, err := Parse([]byte("detect: {change: {latency: off}}\n")); err == nil || !strings.HasPrefix(err.Error(), "detect.change.latency: unknown measurement") {
		t.Errorf("unknown measurement turned off: %v", err)
	}
}

// TestHTTPSection: the http section's keys, validated by the api package, named under http.
func TestHTTPSection(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600)
	c, err := Parse([]byte("http: {address: '127.0.0.1:0', token_file: " + tok + ", token_reads: false, allowed_hosts: [intake.example.net]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.TokenFile != tok || c.HTTP.TokenReads || c.HTTP.AllowedHosts[0] != "intake.example.net" {
		t.Errorf("http %+v", c.HTTP)
	}
	if d := Default(); !d.HTTP.TokenReads || d.HTTP.Token != "" || d.HTTP.TLS.Cert != "" {
		t.Errorf("defaults %+v", d.HTTP)
	}
	for doc, want := range map[string]string{
		"http: {token: short}\n":                     "http.token: must be at least 16 characters",
		"http: {tls: {cert: " + tok + "}}\n":         "http.tls: cert and key must be given together",
		"http: {token_file: " + dir + "/missing}\n":  "http.token_file: " + dir + "/missing: open " + dir + "/missing: no such file or directory",
		"http: {address: 'localhost:99999'}\n":       "http.address: localhost:99999: port must be 0-65535",
		"http: {tls: {cert: " + tok + ", key: x}}\n": "http.tls.cert: " + tok + ": open x: no such file or directory",
	} {
		if _, err := Parse([]byte(doc)); errString(err) != want {
			t.Errorf("%q: %v, want %s", doc, err, want)
		}
	}
}

// TestBudget: the components' budgets, summed; a configuration that does not fit is refused
// with the breakdown. These are the configurations that blew up at start before.
func TestBudget(t *testing.T) {
	d := Default()
	b := d.Budget()
	parts := map[string]bool{}
	for _, it := range b {
		parts[it.Component+"/"+it.Part] = true
	}
	for _, p := range []string{"ingest/report:32766 buffers", "ingest/report:32766 rcvbuf", "detect/flow table", "detect/switch-key table",
		"detect/event log", "event bus/rings", "flowcache/table", "flowcache/rings", "flowcache/histograms", "dta/key-write store",
		"dta/paths store", "dta/key-increment store", "dta/postcard store", "dta/append store", "dta/postcard cache",
		"dta/postcard lookup", "process/runtime and code", "process/garbage headroom"} {
		if !parts[p] {
			t.Errorf("no %s in the budget", p)
		}
	}
	if err := d.CheckBudget(budget.Local()); err != nil {
		t.Errorf("the defaults do not fit this machine: %v", err)
	}
	machine := budget.Machine{MemAvailable: 4 << 30, Free: func(string) int64 { return 1 << 30 }}
	if err := d.CheckBudget(machine); err != nil {
		t.Errorf("the defaults do not fit 4 GiB: %v", err)
	}
	dir := t.TempDir()
	for doc, want := range map[string]string{
		"flowcache: {rings: 64, ring_entries: 1048576, max_hops: 32}\n":                                 "configuration needs 148.", // 118 GiB of rings in the Go heap, and a quarter more of headroom
		"flowcache: {rows: 16777216, buckets: 64}\n":                                                    "configuration needs 365.",
		"dta: {data_dir: " + dir + ", key_write: {slots: 17179869184}}\n":                               "configuration needs 128.",
		"dta: {data_dir: " + dir + ", append: {lists: 131072, entries: 1073741824, value_bytes: 32}}\n": "configuration needs 4.0 PiB",
	} {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		err = c.CheckBudget(machine)
		var be *budget.Error
		if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "(--force starts anyway)\nCOMPONENT") {
			t.Errorf("%q: %v", doc, err)
		}
	}
	// Files already there at their size need no new space.
	c, _ := Parse([]byte("dta: {data_dir: " + dir + "}\n"))
	small := budget.Machine{MemAvailable: 4 << 30, Free: func(string) int64 { return 1 << 20 }}
	if err := c.CheckBudget(small); err == nil || !strings.Contains(err.Error(), "of new files in "+dir) {
		t.Errorf("stores not there yet, 1 MiB free: %v", err)
	}
	for _, it := range c.Budget() {
		if it.Disk > 0 && it.Part != "epochs" {
			f, _ := os.Create(filepath.Join(dir, strings.SplitN(it.Note, ":", 2)[0]))
			f.Truncate(it.Disk)
			f.Close()
		}
	}
	if err := c.CheckBudget(small); err != nil {
		t.Errorf("stores present: %v", err)
	}
}

// TestAliasBomb: aliases that expand a small file into a huge tree are refused quickly.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("listeners:\n  - {format: report, port: 1, allow: &a [")
	for i := range 20000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("'::'")
	}
	b.WriteString("]}\n")
	for i := range 2000 {
		b.WriteString("  - {format: report, port: " + strconv.Itoa(i+2) + ", allow: *a}\n")
	}
	start := time.Now()
	_, err := Parse([]byte(b.String()))
	if err == nil || err.Error() != "(top level): more than 1048576 values with aliases expanded" {
		t.Errorf("%v", err)
	}
	// Walked whole, the tree is 40 million values: minutes. (The bound is loose: the
	// machine running the tests may be busy.)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s", d)
	}
}
