package main

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// The operator's CLI (issue 31): exit codes and warnings a script relies on.

// deadAddr is a loopback TCP address nothing listens on (a port taken and released).
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// TestStatusClusterDown: `status --cluster` prints the table (or the JSON) and exits 1 when
// a member is down, naming it on stderr. Before, it exited 0.
func TestStatusClusterDown(t *testing.T) {
	dead := deadAddr(t)
	coll := collectortest.Start(t, func(c *config.Config) {
		c.Cluster = cluster.Config{Self: "c0", Timeout: time.Second,
			Members: []cluster.Member{{Name: "c0", API: "127.0.0.1:1"}, {Name: "c1", API: dead}}}
	})
	code, out, errs := runVerb("status", "--cluster", "--api", coll.API.Addr())
	if code != 1 || errs != "intake status: 1 of 2 members down: c1\n" || !strings.Contains(out, "c1 is down: ") {
		t.Errorf("table: exit %d, stderr %q, stdout %q", code, errs, out)
	}
	code, out, errs = runVerb("status", "--cluster", "--api", coll.API.Addr(), "--json")
	var st cluster.StatusJSON
	if code != 1 || errs != "intake status: 1 of 2 members down: c1\n" || json.Unmarshal([]byte(out), &st) != nil || len(st.Members) != 2 || st.Members[1].Up {
		t.Errorf("--json: exit %d, stderr %q, stdout %.200q", code, errs, out)
	}
}

// TestConfigErrorExit2: a configuration that does not parse or validate is misuse: exit 2
// with the key and the value, for every verb that reads one. Before, it exited 1.
func TestConfigErrorExit2(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "flowcache: {rows: -1}\n")
	for _, args := range [][]string{
		{"serve", "--config", bad, "--check"},
		{"consume", "--config", bad},
		{"dta", "reset", "--config", bad},
	} {
		code, _, errs := runVerb(args...)
		if code != 2 || !strings.Contains(errs, bad+": flowcache.rows: -1: must be ") {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
	if code, _, errs := runVerb("serve", "--config", "/nonexistent/intake.yaml", "--check"); code != 2 || errs != "intake serve: open /nonexistent/intake.yaml: no such file or directory\n" {
		t.Errorf("missing file: exit %d, %q", code, errs)
	}
}

// TestAddrDeprecated: --addr still works and warns once on stderr that --api replaces it.
// Before, it said nothing.
func TestAddrDeprecated(t *testing.T) {
	coll := collectortest.Start(t, nil)
	code, out, errs := runVerb("status", "--addr", coll.API.Addr(), "--json")
	if code != 0 || errs != "intake: --addr is deprecated: use --api, which means the same\n" || !strings.HasPrefix(out, "{") {
		t.Errorf("exit %d, stderr %q, stdout %.40q", code, errs, out)
	}
}
