package main

import (
	"encoding/json"
	"testing"

	"github.com/intake-int/intake/internal/testutil/xdptest"
)

// TestGenData: intake gen --data sends the counted data packets out of a veth and says so,
// with the interface in the JSON summary (package gen's TestSendData checks the frames).
func TestGenData(t *testing.T) {
	v := xdptest.New(t)
	code, out, errb := runVerb("gen", "--data", v.Dev, "--data-to", v.Peer+":7001", "--count", "7", "--hops", "3", "--json", "--quiet")
	if code != 0 || errb != "" {
		t.Fatalf("exit %d, stderr %q", code, errb)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %q (%v)", out, err)
	}
	if m["datagrams"] != 7.0 || m["send_errors"] != 0.0 || m["data"] != v.Dev || m["to"] != v.Peer+":7001" || m["hops"] != 3.0 {
		t.Fatalf("summary %v", m)
	}
}
