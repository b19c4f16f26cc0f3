package dta

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/intake-int/intake/telemetry"
)

func TestParseKey(t *testing.T) {
	flow := func(s string) string {
		k, err := telemetry.ParseFlowKey(s)
		if err != nil {
			t.Fatal(err)
		}
		var b [40]byte
		return hex.EncodeToString(FlowKeyBytes(&b, &k))
	}
	for _, c := range []struct {
		in     string
		keyLen int
		want   string
	}{
		{"123", 4, "0000007b"},
		{"0x7b", 4, "0000007b"},
		{"0xdeadbeef", 4, "deadbeef"},
		{"0x0102030405", 4, "0102030405"},
		{"255", 1, "ff"},
		{"123", 13, "000000000000007b"},
		{"10.0.0.55", 4, "0a000037"},
		{"10.0.0.55", 2, "0037"},
		{"10.0.0.55", 6, "00000a000037"},
		{"::ffff:10.0.0.55", 4, "0a000037"},
		{"2001:db8::55", 16, "20010db8000000000000000000000055"},
		{"2001:db8::55", 4, "00000055"},
		{"10.0.0.1,10.0.0.2,1,2,6", 13, flow("10.0.0.1:1 > 10.0.0.2:2 tcp")},
		{"10.0.0.1:1 > 10.0.0.2:2 tcp", 4, flow("10.0.0.1,10.0.0.2,1,2,6")},
		{"10.0.0.1:1>10.0.0.2:2 udp", 4, flow("10.0.0.1,10.0.0.2,1,2,17")},
	} {
		b, err := ParseKey(c.in, c.keyLen)
		if err != nil || hex.EncodeToString(b) != c.want {
			t.Errorf("ParseKey(%q, %d) = %x %v, want %s", c.in, c.keyLen, b, err, c.want)
		}
	}
	for in, want := range map[string]string{
		"xyz":              KeyForms,
		"4294967296":       "a number that fits the 4-byte key (at most 4294967295)",
		"0xzz":             KeyForms + " (0x is followed by hex digits)",
		"10.0.0.1,x,1,2,6": KeyForms + ` (a 5-tuple is "SRC:SPORT > DST:DPORT PROTO" or src,dst,sport,dport,proto, with addresses of one family)`,
		"fe80::1%eth0":     KeyForms,
		"-1":               KeyForms,
	} {
		if _, err := ParseKey(in, 4); err == nil || err.Error() != want {
			t.Errorf("ParseKey(%q): %v, want %s", in, err, want)
		}
	}
}

// A key parses or is refused, never panics; a parsed key is never empty, and a number or
// an address comes out exactly keyLen bytes.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"123", "0x7b", "0x", "10.0.0.55", "2001:db8::55", "::ffff:1.2.3.4", "10.0.0.1,10.0.0.2,1,2,6",
		"10.0.0.1:1 > 10.0.0.2:2 tcp", "18446744073709551615", "0x000000000000000000000001"} {
		f.Add(s, 4)
		f.Add(s, 1)
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, s string, keyLen int) {
		if keyLen < 1 || keyLen > 64 {
			return
		}
		b, err := ParseKey(s, keyLen)
		if err != nil {
			return
		}
		if len(b) == 0 {
			t.Fatalf("%q: empty key", s)
		}
	})
}

func TestWriteText(t *testing.T) {
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
		if err := WriteText(&b, c.prim, []byte(c.body)); err != nil || b.String() != c.want {
			t.Errorf("%s %s: %q %v, want %q", c.prim, c.body, b.String(), err, c.want)
		}
	}
}
