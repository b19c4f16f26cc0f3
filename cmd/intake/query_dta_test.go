package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// queryJSON runs `intake query args...` in-process and decodes its JSON output.
func queryJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out, errs := runVerb(append([]string{"query"}, args...)...)
	if code != 0 {
		t.Fatalf("query %v: %d %s", args, code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("query %v: %v: %s", args, err, out)
	}
	return m
}

// intake query kw|ki|postcard|list against a collector (internal/collector/dta_api_test.go holds the
// API's contract): the key as an address, the answer as text with --table or JSON, and the
// collector's refusal of a parameter (400) as the user's misuse, exit 2.
func TestQueryDTA(t *testing.T) {
	c := collectortest.Start(t, nil)
	srv := c.API
	collectortest.DTAFixture(c.Translator)
	// intake query: the key as an address, the answer as text with --table.
	for _, c := range []struct{ args, want string }{
		{"kw --table 222.173.190.239", "kw key 222.173.190.239: found 0x01020304 (2 votes, 2 candidates, threshold 1)\n"},
		{"ki --table 0x7b", "key 0x7b: count 10 (epoch 0)\n"},
		{"postcard --table 42", "key 42: found, hops 101 > 102 > 103 > 104 > 105 (2 valid chunks)\n"},
		{"kw 9", "{\n  \"store\": \"kw\",\n  \"key\": \"9\",\n  \"status\": \"ambiguous\",\n  \"votes\": 2,\n  \"candidates\": 4,\n  \"threshold\": 1\n}\n"}, // JSON by default
	} {
		args := append([]string{"query", "--api", srv.Addr()}, strings.Fields(c.args)...)
		args[1], args[2], args[3] = args[3], args[1], args[2] // query SUB --api ADDR ...
		code, out, errs := runVerb(args...)
		if code != 0 || out != c.want {
			t.Errorf("%v: %d %q %s, want %q", args, code, out, errs, c.want)
		}
	}
	if code, _, errs := runVerb("query", "list", "--api", srv.Addr(), "--cursor", "7", "3"); code != 2 || !strings.Contains(errs, "cursor") {
		t.Errorf("cursor past head: %d %s", code, errs)
	}
}

// intake query kw|ki|postcard|list: flag limits (as the API's, so that --store answers the
// same), and a collector that is not there.
func TestQueryDTAUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"kw", "--threshold", "9", "1"}, 2, "--threshold 9: allowed is 0 (the store's threshold) to 8"},
		{[]string{"kw", "--t", "9", "1"}, 2, "intake: --t is deprecated: use --threshold, which means the same\nintake query kw: --threshold 9: allowed"},
		{[]string{"kw", "--name", "ki", "1"}, 2, `--name "ki": kw or paths`},
		{[]string{"list", "--limit", "0", "1"}, 2, "--limit 0: allowed is 1 to 100000"},
		{[]string{"ki"}, 2, "one KEY is required"},
		{[]string{"kw", "--json", "--table", "1"}, 2, "--json and --table exclude each other"},
		{[]string{"list", "--store", t.TempDir(), "1"}, 1, "no DTA region files"},
		{[]string{"postcard", "--api", "127.0.0.1:1", "1"}, 1, "--store DIR reads a store directory without a collector"},
	} {
		code, out, errs := runVerb(append([]string{"query"}, c.args...)...)
		if code != c.code || out != "" || !strings.Contains(errs, c.err) {
			t.Errorf("%v: %d %q %q, want %d and %q", c.args, code, out, errs, c.code, c.err)
		}
	}
}
