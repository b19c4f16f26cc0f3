package collector_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
)

// dtaSource is where a DTA query is answered: the collector's API at addr, or the store
// directory store read in process through the same handlers, as `intake query --store` does.
type dtaSource struct{ addr, store string }

func (s dtaSource) String() string {
	if s.store != "" {
		return "store " + s.store
	}
	return "api " + s.addr
}

// dtaGet answers GET path?q from src: the JSON body, or the API's error.
func dtaGet(t *testing.T, src dtaSource, path string, q url.Values) ([]byte, error) {
	t.Helper()
	if src.store == "" {
		c, err := api.NewClient(src.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c.Get(path, q)
	}
	st, err := dta.OpenStoresReadOnly(src.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return api.Serve(dta.NewAPI(st, 4), path, q) // key length 4: dta.key_len's default
}

// dtaQuery is dtaGet's answer decoded; an error fails the test.
func dtaQuery(t *testing.T, src dtaSource, path string, q url.Values) map[string]any {
	t.Helper()
	body, err := dtaGet(t, src, path, q)
	if err != nil {
		t.Fatalf("%v %s?%s: %v", src, path, q.Encode(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v %s: %v: %s", src, path, err, body)
	}
	return m
}

// DTA datagrams over loopback into a collector with the translator, then queries through
// HTTP and through the store directory (what `intake query --api` and `--store` read).
func TestDTAEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse([]byte("listeners:\n  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '127.0.0.1:0'}\ndta:\n  data_dir: " + dir + "\n  key_write: {layout: compat}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := collectortest.Run(t, cfg)
	srv, coll := c.API, c.Receiver

	send := collectortest.ReportSender(t, coll.ListenerAddr(0), cfg.Decoder)
	kw := collectortest.DTAReport(telemetry.DTAKeyWrite)
	kw.DTA.Redundancy, kw.DTA.KeyLen, kw.DTA.DataLen = 2, 4, 4
	binary.BigEndian.PutUint32(kw.DTA.Key[:], 0xdeadbeef)
	binary.BigEndian.PutUint32(kw.DTA.Data[:], 0x01020304)
	bad := kw
	bad.DTA.Redundancy = 9 // above max_redundancy 4: counted, not written
	binary.BigEndian.PutUint32(bad.DTA.Key[:], 7)
	send(kw, bad)
	ki := collectortest.DTAReport(telemetry.DTAKeyIncrement)
	ki.DTA.Redundancy, ki.DTA.KeyLen, ki.DTA.Counter = 2, 4, 5
	binary.BigEndian.PutUint32(ki.DTA.Key[:], 123)
	send(ki, ki)
	var aps []telemetry.Report
	for i := range 6 {
		a := collectortest.DTAReport(telemetry.DTAAppend)
		a.DTA.ListID, a.DTA.DataLen = 3, 4
		binary.BigEndian.PutUint32(a.DTA.Data[:], uint32(i))
		aps = append(aps, a)
	}
	badList := aps[0]
	badList.DTA.ListID = 99
	send(append(aps, badList)...)
	var pcs []telemetry.Report
	for hop := 1; hop <= 5; hop++ {
		pc := collectortest.DTAReport(telemetry.DTAPostcard)
		pc.DTA.KeyLen, pc.DTA.DataLen, pc.DTA.Hop = 4, 4, uint8(hop)
		binary.BigEndian.PutUint32(pc.DTA.Key[:], 42)
		binary.BigEndian.PutUint32(pc.DTA.Data[:], uint32(100+hop))
		pcs = append(pcs, pc)
	}
	send(pcs...)

	addr := srv.Addr()
	tr := c.Translator
	testutil.Eventually(t, 5*time.Second, "5 postcards written and a bad list id counted", func() bool {
		return tr.Written(dta.WPostcard) >= 5 && tr.Bad(dta.BadListID) >= 1
	})
	for _, src := range []dtaSource{{addr: addr}, {store: dir}} {
		if m := dtaQuery(t, src, "/api/v1/dta/kw/0xdeadbeef", nil); m["status"] != "found" || m["value"] != "0x01020304" || m["votes"] != 4.0 {
			// compat layout, max_redundancy 4 gathered; redundancy 2 wrote copies 0 and 1
			if m["status"] != "found" || m["value"] != "0x01020304" || m["votes"] != 2.0 {
				t.Errorf("%v kw: %v", src, m)
			}
		}
		if m := dtaQuery(t, src, "/api/v1/dta/kw/7", nil); m["status"] != "not_found" {
			t.Errorf("%v kw of a bad report: %v", src, m)
		}
		if m := dtaQuery(t, src, "/api/v1/dta/ki/123", nil); m["count"] != 10.0 {
			t.Errorf("%v ki: %v", src, m)
		}
		if m := dtaQuery(t, src, "/api/v1/dta/list/3", url.Values{"cursor": {"2"}, "limit": {"1000"}}); m["next_cursor"] != 6.0 || m["overwritten"] != 0.0 ||
			len(m["entries"].([]any)) != 4 || m["entries"].([]any)[0] != "0x00000002" {
			t.Errorf("%v list: %v", src, m)
		}
		m := dtaQuery(t, src, "/api/v1/dta/postcard/42", nil)
		if h, _ := m["hops"].([]any); m["status"] != "found" || len(h) != 5 || h[0] != 101.0 || h[4] != 105.0 {
			t.Errorf("%v postcard: %v", src, m)
		}
	}
	// The collector refuses the parameter (400; intake query makes it exit 2: TestQueryDTA).
	var se *api.StatusError
	if _, err := dtaGet(t, dtaSource{addr: addr}, "/api/v1/dta/list/3", url.Values{"cursor": {"7"}, "limit": {"1000"}}); !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Msg, "cursor") {
		t.Errorf("cursor past head: %v", err)
	}
	st := tr.Stats()
	if st.Bad["redundancy"] != 1 || st.Bad["list_id"] != 1 || st.Written["append"] != 6 {
		t.Errorf("stats: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dir, dta.FileKW)); err != nil {
		t.Error(err)
	}
}
