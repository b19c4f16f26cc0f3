package collector_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/intake-int/intake/internal/testutil/collectortest"
)

// The HTTP API's contract (docs/dta.md): every path, every JSON key and value
// form, whole bodies compared, answers and errors alike.
func TestDTAAPIContract(t *testing.T) {
	c := collectortest.Start(t, nil)
	srv := c.API
	collectortest.DTAFixture(c.Translator)

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
		return resp.StatusCode, c.String()
	}
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/dta/kw/0xdeadbeef", 200, `{"store":"kw","key":"0xdeadbeef","status":"found","value":"0x01020304","votes":2,"candidates":2,"threshold":1}`},
		// The same key as a dotted IPv4 address (gen keys DTA reports by source address).
		{"/api/v1/dta/kw/222.173.190.239", 200, `{"store":"kw","key":"222.173.190.239","status":"found","value":"0x01020304","votes":2,"candidates":2,"threshold":1}`},
		{"/api/v1/dta/kw/3735928559", 200, `{"store":"kw","key":"3735928559","status":"found","value":"0x01020304","votes":2,"candidates":2,"threshold":1}`},
		{"/api/v1/dta/kw/0xdeadbeef?t=3", 200, `{"store":"kw","key":"0xdeadbeef","status":"ambiguous","votes":2,"candidates":2,"threshold":3}`},
		{"/api/v1/dta/kw/9", 200, `{"store":"kw","key":"9","status":"ambiguous","votes":2,"candidates":4,"threshold":1}`},
		{"/api/v1/dta/kw/7", 200, `{"store":"kw","key":"7","status":"not_found","votes":0,"candidates":0,"threshold":1}`},
		{"/api/v1/dta/kw/10.0.0.1,10.0.0.2,1,2,6?store=paths", 200, `{"store":"paths","key":"10.0.0.1,10.0.0.2,1,2,6","status":"not_found","votes":0,"candidates":0,"threshold":1}`},
		{"/api/v1/dta/ki/123", 200, `{"key":"123","count":10,"epoch":0}`},
		{"/api/v1/dta/ki/0x7b", 200, `{"key":"0x7b","count":10,"epoch":0}`},
		{"/api/v1/dta/list/3?cursor=2", 200, `{"list":3,"entries":["0x00000002","0x00000003","0x00000004","0x00000005"],"next_cursor":6,"overwritten":0,"head":6}`},
		{"/api/v1/dta/list/3?cursor=6", 200, `{"list":3,"entries":[],"next_cursor":6,"overwritten":0,"head":6}`},
		{"/api/v1/dta/list/0", 200, `{"list":0,"entries":[],"next_cursor":0,"overwritten":0,"head":0}`},
		{"/api/v1/dta/postcard/42", 200, `{"key":"42","status":"found","hops":[101,102,103,104,105],"valid_chunks":2}`},
		{"/api/v1/dta/postcard/43", 200, `{"key":"43","status":"not_found","hops":[],"valid_chunks":0}`},
		// errors
		{"/api/v1/dta/kw/xyz", 400, `{"error":"parameter key: \"xyz\": must be decimal, 0x-hex, an IPv4 or IPv6 address, or a 5-tuple (\"SRC:SPORT \u003e DST:DPORT PROTO\" or src,dst,sport,dport,proto)","param":"key","value":"xyz"}`},
		{"/api/v1/dta/kw/4294967296", 400, `{"error":"parameter key: \"4294967296\": must be a number that fits the 4-byte key (at most 4294967295)","param":"key","value":"4294967296"}`},
		{"/api/v1/dta/kw/1?store=ki", 400, `{"error":"parameter store: \"ki\": must be kw or paths","param":"store","value":"ki"}`},
		{"/api/v1/dta/kw/1?t=9", 400, `{"error":"parameter t: \"9\": must be 1 to 8","param":"t","value":"9"}`},
		{"/api/v1/dta/list/16", 400, `{"error":"parameter id: \"16\": must be a list id from 0 to 15","param":"id","value":"16"}`},
		{"/api/v1/dta/list/3?cursor=7", 400, `{"error":"parameter cursor: \"7\": must be at most the list's head (6)","param":"cursor","value":"7"}`},
		{"/api/v1/dta/list/3?limit=0", 400, `{"error":"parameter limit: \"0\": must be 1 to 100000","param":"limit","value":"0"}`},
	} {
		if code, body := get(c.path); code != c.code || body != c.want {
			t.Errorf("GET %s: %d %s\nwant %d %s", c.path, code, body, c.code, c.want)
		}
	}
	// /stats: the counters by name, the regions by file.
	_, body := get("/api/v1/dta/stats")
	var st struct {
		DataDir string            `json:"data_dir"`
		Regions []json.RawMessage `json:"regions"`
		Written map[string]uint64 `json:"written"`
		Bad     map[string]uint64 `json:"bad"`
		PCE     map[string]uint64 `json:"postcard_emissions"`
		Known   uint64            `json:"known_values"`
		Heads   []uint64          `json:"list_heads"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	if w := fmt.Sprint(st.Written); w != "map[append:6 int-append:0 int-counter:0 int-event:0 int-path:0 int-postcard:0 key-increment:2 key-write:3 postcard:5]" {
		t.Errorf("written %s", w)
	}
	if b := fmt.Sprint(st.Bad); b != "map[data_length:0 hop:0 key_length:0 list_id:0 opcode:0 redundancy:0 store_offline:0]" {
		t.Errorf("bad %s", b)
	}
	if e := fmt.Sprint(st.PCE); e != "map[complete:1 early:0 flushed:0]" || st.Known != 5 || len(st.Regions) != 5 || len(st.Heads) != 16 || st.Heads[3] != 6 {
		t.Errorf("stats: %s", body)
	}
}
