package dta

import (
	"encoding/hex"
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
