package main

import (
	"strings"
	"testing"
)

// TestDTAText: the DTA queries' --table text of each primitive's answer.
func TestDTAText(t *testing.T) {
	for _, c := range []struct{ prim, body, want string }{
		{"kw", `{"store":"kw","key":"0xdeadbeef","status":"found","value":"0x01020304","votes":2,"candidates":2,"threshold":1}`,
			"kw key 0xdeadbeef: found 0x01020304 (2 votes, 2 candidates, threshold 1)\n"},
		{"kw", `{"store":"paths","key":"k","status":"found","value":"0x","votes":1,"candidates":1,"threshold":1,"path":[3,1,7]}`,
			"paths key k: found 0x (1 votes, 1 candidates, threshold 1)\npath 3 > 1 > 7\n"},
		{"kw", `{"store":"kw","key":"7","status":"not_found","votes":0,"candidates":0,"threshold":1}`,
			"kw key 7: not found (0 votes, 0 candidates, threshold 1)\n"},
		{"ki", `{"key":"123","count":10,"epoch":0}`, "key 123: count 10 (epoch 0)\n"},
		{"postcard", `{"key":"42","status":"found","hops":[101,null,103],"valid_chunks":2}`, "key 42: found, hops 101 > - > 103 (2 valid chunks)\n"},
		{"list", `{"list":3,"entries":["0x02","0x03"],"next_cursor":6,"overwritten":0,"head":6}`, "0x02\n0x03\nlist 3: 2 entries, next cursor 6, head 6, overwritten 0\n"},
	} {
		var b strings.Builder
		if err := writeDTA(&b, c.prim, []byte(c.body)); err != nil || b.String() != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.prim, c.body, b.String(), err, c.want)
		}
	}
}
