package config

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/intake-int/intake/internal/ingest"
)

func TestDefault(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		format string
		port   int
	}{{"report", 32766}, {"report", 54321}, {"dta", 40040}, {"int-label", 40050}}
	if len(c.Listeners) != len(want) {
		t.Fatalf("%d listeners, want %d", len(c.Listeners), len(want))
	}
	for i, w := range want {
		l := c.Listeners[i]
		if l.Format != w.format || l.Port != w.port || l.Address != "" || l.Sockets != runtime.NumCPU() ||
			l.Batch != 64 || l.RcvBuf != 8<<20 || l.MaxDatagram != 9216 {
			t.Errorf("listener %d = %+v", i, l)
		}
	}
	if c.HTTP.Address != "127.0.0.1:8040" {
		t.Errorf("http.address = %q", c.HTTP.Address)
	}
}

func TestParseEmptyAndRoundTrip(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if string(c.Dump()) != string(d.Dump()) {
		t.Errorf("empty file differs from defaults:\n%s", c.Dump())
	}
	c2, err := Parse(d.Dump())
	if err != nil {
		t.Fatal(err)
	}
	if string(c2.Dump()) != string(d.Dump()) {
		t.Errorf("dump does not round-trip:\n%s", c2.Dump())
	}
}

// A map-valued key (detect.change.<measurement>) merges over its defaults name by name.
func TestParseThresholdMaps(t *testing.T) {
	c, err := Parse([]byte("detect:\n  change: {flow_latency: 100}\n  above: {queue_occupancy: 7}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Detect.Change["flow_latency"] != 100 || c.Detect.Change["flow_hop_latency"] != 50 || c.Detect.Above["queue_occupancy"] != 7 {
		t.Errorf("change %v above %v", c.Detect.Change, c.Detect.Above)
	}
	if d := Default(); d.Detect.Change["flow_latency"] != 50 {
		t.Errorf("defaults changed by a parse: %v", d.Detect.Change)
	}
}

func TestParseOverrides(t *testing.T) {
	c, err := Parse([]byte(`
listeners:
  - format: report
    port: 9000
    sockets: 3
    decoder:
      quirks: {intcollector: true}
      dta: {key_len: 8}
  - format: dta
    address: "::1"
    port: 9001
    coalesce: 0s
decoder:
  int_port: 5000
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 {
		t.Fatalf("%d listeners", len(c.Listeners))
	}
	l := c.Listeners[0]
	if l.Name != "report:9000" || l.Sockets != 3 || l.Batch != ingest.DefaultBatch {
		t.Errorf("listener 0 = %+v", l)
	}
	d := c.DecoderFor(0)
	// The override applies key by key over the top-level decoder.
	if !d.Quirks.INTCollector || d.DTA.KeyLen != 8 || d.DTA.DataLen != 4 || d.INTPort != 5000 || d.GPEPort != 4790 {
		t.Errorf("listener 0 decoder = %+v", d)
	}
	if *c.Listeners[0].Coalesce != ingest.DefaultCoalesce {
		t.Errorf("listener 0 coalesce %v, want the default %v", *c.Listeners[0].Coalesce, ingest.DefaultCoalesce)
	}
	if d := c.DecoderFor(1); d.Quirks.INTCollector || d.INTPort != 5000 {
		t.Errorf("listener 1 decoder = %+v", d)
	}
	if *c.Listeners[1].Coalesce != 0 {
		t.Errorf("listener 1 coalesce %v: an explicit 0 (off) must stay", *c.Listeners[1].Coalesce)
	}
}

// The messages are documented in docs/config.md: key, value, what is allowed.
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"listeners:\n  - {format: report, port: 1}\n  - {format: report, port: 70000}\n",
			"listeners[1].port: 70000: must be 0-65535 (0: a free port the kernel picks)"},
		{"listeners:\n  - {format: tr9, port: 1}\n",
			`listeners[0].format: "tr9": must be one of report, int-md, dta, int-label`},
		{"listeners:\n  - {format: report, prot: 1}\n",
			"listeners[0].prot: unknown key (allowed: name, format, address, port, mode, interface, sockets, batch, rcvbuf, max_datagram, coalesce, spread, gro, allow, decoder)"},
		{"listeners:\n  - {format: report, coalesce: 1s}\n",
			"listeners[0].coalesce: 1s: must be 0 (off) to 100ms (unset: 1ms)"},
		{"listeners:\n  - {format: report, gro: maybe}\n",
			"listeners[0].gro: maybe: must be true or false"},
		{"listeners:\n  - {format: report, coalesce: soon}\n",
			"listeners[0].coalesce: soon: must be a duration such as 1ms"},
		{"cluster: {self: c9, members: [{name: c0, api: '127.0.0.1:8041'}]}\n",
			"cluster.self: c9: not a member (one of c0)"},
		{"cluster: {self: c0, members: [{name: c0, api: '127.0.0.1:8041', report: x}]}\n",
			"cluster.members[0].report: unknown key (allowed: name, api, reports)"},
		{"cluster: {self: c0, timeout: 0, members: [{name: c0, api: '127.0.0.1:8041'}]}\n",
			"cluster.timeout: 0s: must be positive, e.g. 2s"},
		{"http: {address: ''}\ncluster: {self: c0, members: [{name: c0, api: '127.0.0.1:8041'}]}\n",
			"cluster.members: a cluster needs http.address: the other members query this one through it"},
		{"listner: []\n",
			"listner: unknown key (allowed: listeners, sinks, http, decoder, detect, flowcache, dta, label, export, cluster, group, history)"},
		{"listeners:\n  - {format: report, port: x}\n",
			"listeners[0].port: x: must be an integer"},
		{"listeners:\n  - {format: report, sockets: 2000}\n",
			"listeners[0].sockets: 2000: must be 1-1024 (0: one per core)"},
		{"listeners:\n  - {format: report, batch: -1}\n",
			"listeners[0].batch: -1: must be 1-1024"},
		{"listeners:\n  - {format: report, rcvbuf: 100}\n",
			"listeners[0].rcvbuf: 100: must be 4096-1073741824 bytes (0: 8388608)"},
		{"listeners:\n  - {format: report, max_datagram: 70000}\n",
			"listeners[0].max_datagram: 70000: must be 512-65535 bytes (0: 9216)"},
		{"listeners:\n  - {format: report, address: 10.0.0.300}\n",
			`listeners[0].address: "10.0.0.300": must be an IPv4 or IPv6 address, or empty for all addresses of both families`},
		{"listeners:\n  - {format: report, port: 5}\n  - {format: dta, port: 5}\n",
			"listeners[1].port: 5: already used by listeners[0]"},
		{"listeners:\n  - {format: report, name: a}\n  - {format: dta, name: a}\n",
			"listeners[1].name: a: already used by listeners[0]"},
		{"listeners: []\n", "listeners: at least one listener (or sink) is required"},
		{"listeners: {format: report}\n", "listeners: a mapping: must be a list"},
		{"http: {address: 8040}\n", "http.address: 8040: must be host:port, e.g. 127.0.0.1:8040"},
		{"http: {address: 'example.com:80'}\n", "http.address: example.com:80: host must be an IP address, localhost or empty"},
		{"decoder: {dta: {key_len: 100}}\n", "decoder.dta.key_len: 100: allowed is 1 to 64 bytes"},
		{"decoder: {probe_shim: maybe}\n", "decoder.probe_shim: maybe: must be true or false"},
		{"decoder: {gpe_port: 70000}\n", "decoder.gpe_port: 70000: must be an integer 0-65535"},
		{"listeners:\n  - {format: dta, decoder: {dta: {header_len: 4}}}\n",
			"listeners[0].decoder.dta.header_len: 4: allowed are 2 (default translator) and 3 (NACK tracking)"},
		{"detect: {change: {flow_latency: -1}}\n", "detect.change.flow_latency: -1: must be a non-negative integer, or null or off (no such rule)"},
		{"detect: {above: [1]}\n", "detect.above: a list: must be a mapping of names to a non-negative integer"},
		{"detect: {change: {latency: 5}}\n",
			"detect.change.latency: unknown measurement (allowed: flow_latency, flow_hop_latency, queue_occupancy, queue_congestion, tx_utilization, buffer_occupancy, drops, seq_gaps)"},
		{"listeners:\n  - {format: dta, decoder: {dta: {hdr: 4}}}\n",
			"listeners[0].decoder.dta.hdr: unknown key (allowed: header_len, key_len, data_len)"},
	} {
		_, err := Parse([]byte(tc.yaml))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "intake.yaml")
	os.WriteFile(p, []byte("http: {address: ':0'}\nbogus: 1\n"), 0o644)
	_, err := Load(p)
	if want := p + ": bogus: unknown key (allowed: listeners, sinks, http, decoder, detect, flowcache, dta, label, export, cluster, group, history)"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("missing file: no error")
	}
}
