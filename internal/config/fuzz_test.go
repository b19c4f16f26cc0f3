package config

import (
	"strings"
	"testing"
)

// FuzzParse: any bytes parse to a configuration that validates, or to an error; never a
// panic. A configuration that parses dumps to one that parses again to the same dump.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "listeners: [{format: report, port: 1, allow: [10.0.0.0/8]}]\n",
		"detect: {change: {flow_latency: off, drops: null, queue_occupancy: 18446744073709551615}}\n",
		"export: {period: 0}\nflowcache: {rows: 16384.5}\n", "http: {address: '127.0.0.1:0', token: 0123456789abcdef}\n",
		"a: &x [*x]\n", "detect: {above: [1]}\n", "dta: {seed: 0x10}\n", "listeners:\n  - format: dta\n    decoder: {dta: {key_len: 8}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		d := c.Dump()
		c2, err := Parse(d)
		if err != nil {
			if strings.Contains(err.Error(), "token") || strings.Contains(err.Error(), "tls") {
				return // files read at validation may have changed
			}
			t.Fatalf("the dump of a valid configuration does not parse: %v\n%s", err, d)
		}
		if string(c2.Dump()) != string(d) {
			t.Fatalf("dump does not round-trip:\n%s\n---\n%s", d, c2.Dump())
		}
	})
}
