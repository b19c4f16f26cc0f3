//go:build linux

package collector_test

import (
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// Bad DTA input over the wire: what the decoder rejects (unknown opcodes, redundancy 0, hop
// 0, truncated sub-headers) is counted by ingest as decode errors by reason, exactly, and
// reaches no store; what it passes but the stores cannot take is the translator's (its
// reasons one by one: internal/dta/translator_test.go). A good report last shows the rest was seen.
func TestDTABadInputOverTheWire(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse(fmt.Appendf(nil, "listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: ''}\ndta: {data_dir: %s}\n", dir))
	if err != nil {
		t.Fatal(err)
	}
	c := collectortest.Run(t, cfg)
	coll, tr := c.Receiver, c.Translator
	conn, err := net.Dial("udp", coll.ListenerAddr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, d := range []string{
		"05 00 | 01 | 00000001 | 00000001",         // opcode 5: bad_value
		"00 00 | 01 | 00000001 | 00000001",         // opcode 0: bad_value
		"01 00 | 00 | deadbeef | 11223344",         // key-write redundancy 0: bad_value
		"03 00 | 00 | 00000001 | 0000000000000001", // key-increment redundancy 0: bad_value
		"04 00 | 00000001 | 00 | 00000001",         // postcard hop 0: bad_value
		"01 00 | 01 | dead",                        // key-write key cut: truncated
		"01 00",                                    // no sub-header: truncated
		"02 00 | 000000",                           // append list id cut: truncated
		"03 00 | 01 | 00000001 | 00000000000000",   // key-increment counter cut: truncated
		"04 00 | 00000001 | 01 | 0000",             // postcard data cut: truncated
		"01 00 | 01 | 00000077 | 0000abcd",         // good: key-write 0x77 → 0xabcd
	} {
		b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(d))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 5*time.Second, "the good report written", func() bool { return tr.Written(dta.WKeyWrite) >= 1 })
	de := coll.Status().DecodeErrors
	for reason, n := range de.ByReason {
		want := map[string]uint64{"bad_value": 5, "truncated": 5}[reason]
		if n != want {
			t.Errorf("decode errors %s = %d, want %d", reason, n, want)
		}
	}
	if de.Total != 10 {
		t.Errorf("decode errors %d, want 10", de.Total)
	}
	for i, n := range dta.BadReasons {
		if got := tr.Bad(i); got != 0 {
			t.Errorf("translator bad %s = %d, want 0 (the decoder's)", n, got)
		}
	}
	for i, n := range dta.WrittenNames {
		if want := map[string]uint64{"key-write": 1}[n]; tr.Written(i) != want {
			t.Errorf("written %s = %d, want %d", n, tr.Written(i), want)
		}
	}
	st := tr.St
	if a, _ := st.QueryKW("kw", []byte{0, 0, 0, 0x77}, "0x77", 0); a.Status != dta.Found || a.Value != "0x0000abcd" {
		t.Errorf("the good report: %+v", a)
	}
	for _, k := range [][]byte{{0xde, 0xad, 0xbe, 0xef}, {0, 0, 0, 1}} {
		if a, _ := st.QueryKW("kw", k, "", 0); a.Status != dta.NotFound || a.Candidates != 0 {
			t.Errorf("kw %x: %+v", k, a)
		}
		if a, _ := st.QueryKI(k, ""); a.Count != 0 {
			t.Errorf("ki %x: %+v", k, a)
		}
		if a, _ := st.QueryPostcard(k, ""); a.Status != dta.NotFound {
			t.Errorf("postcard %x: %+v", k, a)
		}
	}
	for l := range st.AP.Lists() {
		if h := st.AP.Head(l); h != 0 {
			t.Errorf("list %d: head %d", l, h)
		}
	}
}
