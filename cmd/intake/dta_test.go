package main

import (
	"encoding/binary"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/config"
	"github.com/intake-int/intake/dta"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// reportSender dials addr over UDP and returns a function that sends reports encoded with
// dc: one report per datagram, or several as one batch (DTA).
func reportSender(t *testing.T, addr string, dc wire.Config) func(rs ...telemetry.Report) {
	t.Helper()
	enc, err := wire.NewEncoder(dc)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return func(rs ...telemetry.Report) {
		t.Helper()
		b, err := enc.Append(nil, &rs[0])
		if len(rs) > 1 {
			b, err = enc.AppendBatch(nil, rs)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

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

func dtaReport(op telemetry.DTAOp) telemetry.Report {
	r := telemetry.Report{Format: telemetry.FormatDTA}
	r.DTA.Op = op
	return r
}

// DTA datagrams over loopback into a collector with the translator, then queries through
// HTTP and through --store.
func TestDTAEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse([]byte("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '127.0.0.1:0'}\ndta:\n  data_dir: " + dir + "\n  key_write: {layout: compat}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := runCollector(t, cfg)
	srv, coll := c.API, c.Receiver

	send := reportSender(t, coll.ListenerAddr(0), cfg.Decoder)
	kw := dtaReport(telemetry.DTAKeyWrite)
	kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = 2, 4, 4
	binary.BigEndian.PutUint32(kw.DTA.Key[:], 0xdeadbeef)
	binary.BigEndian.PutUint32(kw.DTA.Data[:], 0x01020304)
	bad := kw
	bad.DTA.Redundancy = 9 // above max_redundancy 4: counted, not written
	binary.BigEndian.PutUint32(bad.DTA.Key[:], 7)
	send(kw, bad)
	ki := dtaReport(telemetry.DTAKeyIncrement)
	ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 2, 4, 5
	binary.BigEndian.PutUint32(ki.DTA.Key[:], 123)
	send(ki, ki)
	var aps []telemetry.Report
	for i := range 6 {
		a := dtaReport(telemetry.DTAAppend)
		a.DTA.ListID, a.DTA.DataLen = 3, 4
		binary.BigEndian.PutUint32(a.DTA.Data[:], uint32(i))
		aps = append(aps, a)
	}
	badList := aps[0]
	badList.DTA.ListID = 99
	send(append(aps, badList)...)
	var pcs []telemetry.Report
	for hop := 1; hop <= 5; hop++ {
		pc := dtaReport(telemetry.DTAPostcard)
		pc.DTA.KeyLen, pc.DTA.DataLen, pc.DTA.Hop = 4, 4, uint8(hop)
		binary.BigEndian.PutUint32(pc.DTA.Key[:], 42)
		binary.BigEndian.PutUint32(pc.DTA.Data[:], uint32(100+hop))
		pcs = append(pcs, pc)
	}
	send(pcs...)

	addr := srv.Addr()
	tr := c.Translator
	deadline := time.Now().Add(5 * time.Second)
	for tr.Written(dta.WPostcard) < 5 || tr.Bad(dta.BadListID) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("reports not processed: %+v", tr.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, src := range [][]string{{"--addr", addr}, {"--store", dir}} {
		if m := queryJSON(t, append([]string{"kw"}, append(src, "0xdeadbeef")...)...); m["status"] != "found" || m["value"] != "0x01020304" || m["votes"] != 4.0 {
			// compat layout, max_redundancy 4 gathered; redundancy 2 wrote copies 0 and 1
			if m["status"] != "found" || m["value"] != "0x01020304" || m["votes"] != 2.0 {
				t.Errorf("%v kw: %v", src, m)
			}
		}
		if m := queryJSON(t, append([]string{"kw"}, append(src, "7")...)...); m["status"] != "not_found" {
			t.Errorf("%v kw of a bad report: %v", src, m)
		}
		if m := queryJSON(t, append([]string{"ki"}, append(src, "123")...)...); m["count"] != 10.0 {
			t.Errorf("%v ki: %v", src, m)
		}
		if m := queryJSON(t, append([]string{"list"}, append(src, "--cursor", "2", "3")...)...); m["next_cursor"] != 6.0 || m["overwritten"] != 0.0 ||
			len(m["entries"].([]any)) != 4 || m["entries"].([]any)[0] != "0x00000002" {
			t.Errorf("%v list: %v", src, m)
		}
		m := queryJSON(t, append([]string{"postcard"}, append(src, "42")...)...)
		if h, _ := m["hops"].([]any); m["status"] != "found" || len(h) != 5 || h[0] != 101.0 || h[4] != 105.0 {
			t.Errorf("%v postcard: %v", src, m)
		}
	}
	// The collector refuses the parameter (400): the user's misuse, exit 2.
	if code, _, errs := runVerb("query", "list", "--addr", addr, "--cursor", "7", "3"); code != 2 || !strings.Contains(errs, "cursor") {
		t.Errorf("cursor past head: %d %s", code, errs)
	}
	st := tr.Stats()
	if st.Bad["redundancy"] != 1 || st.Bad["list_id"] != 1 || st.Written["append"] != 6 {
		t.Errorf("stats: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, dta.FileKW)); err != nil {
		t.Error(err)
	}
}
