package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// freeAddrs returns n loopback addresses with ports free now: members must know each
// other's API address before any of them listens.
func freeAddrs(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, testutil.FreeAddr(t))
	}
	return out
}

// testCluster starts three API servers, each a member with a router over endpoints that
// answer with the member's name: GET /api/v1/flow (the key's member), /api/v1/flowcache/top
// (top[i]) and /api/v1/events (events[i]).
func testCluster(t testing.TB, top, events []string) (cfg Config, srvs []*api.Server) {
	t.Helper()
	addrs := freeAddrs(t, 3)
	cfg = DefaultConfig()
	for i, a := range addrs {
		cfg.Members = append(cfg.Members, Member{Name: fmt.Sprintf("m%d", i), API: a})
	}
	for i, a := range addrs {
		c := cfg
		c.Self = fmt.Sprintf("m%d", i)
		s := api.New(a, nil)
		name := c.Self
		s.HandleFunc("GET /api/v1/flow", func(w http.ResponseWriter, r *http.Request) {
			if k, ok := api.FlowParams(w, r); ok {
				api.JSON(w, http.StatusOK, map[string]any{"member": name, "sport": k.SrcPort, "forwarded_by": r.Header.Get(HeaderForwarded)})
			}
		})
		s.HandleFunc("GET /api/v1/flowcache/top", func(w http.ResponseWriter, r *http.Request) {
			if api.CheckParams(w, r, "n", "by") {
				w.Write([]byte(top[i]))
			}
		})
		s.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, r *http.Request) {
			if api.CheckParams(w, r, "limit") {
				w.Write([]byte(events[i]))
			}
		})
		s.HandleFunc("GET /api/v1/status", func(w http.ResponseWriter, r *http.Request) {
			api.JSON(w, http.StatusOK, map[string]any{"packets_received": 10 + i, "reports_decoded": 20 + i, "drops": map[string]any{"total": i}})
		})
		rt, err := NewRouter(c, Deps{EventsLimit: 3})
		if err != nil {
			t.Fatal(err)
		}
		s.Route(rt.Wrap)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Stop(context.Background()) })
		srvs = append(srvs, s)
	}
	return cfg, srvs
}

func get(t *testing.T, addr, path string, hdr ...string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
	return resp.StatusCode, resp.Header, m
}

func TestRouter(t *testing.T) {
	top := []string{
		`{"by":"packets","n":3,"flows":[{"src":"a","packets":9,"last_seen":"2026-01-01T00:00:01Z"},{"src":"b","packets":5,"last_seen":"2026-01-01T00:00:01Z"}]}`,
		`{"by":"packets","n":3,"flows":[{"src":"c","packets":9,"last_seen":"2026-01-01T00:00:02Z"},{"src":"d","packets":1,"last_seen":"2026-01-01T00:00:01Z"}]}`,
		`{"by":"packets","n":3,"flows":[{"src":"e","packets":18446744073709551615,"last_seen":"2026-01-01T00:00:00Z"}]}`,
	}
	events := []string{
		`{"events":[{"seq":1,"time_ns":10},{"seq":2,"time_ns":40}]}`,
		`{"events":[{"seq":1,"time_ns":20},{"seq":2,"time_ns":40}]}`,
		`{"events":[{"seq":7,"time_ns":5},{"seq":8,"time_ns":30}]}`,
	}
	cfg, srvs := testCluster(t, top, events)

	// Every flow's lookup, through every member, is answered by its owner.
	for sport := 1; sport <= 12; sport++ {
		var k telemetry.FlowKey
		k.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
		k.SrcPort, k.DstPort, k.Proto = uint16(sport), 80, 6
		var b partition.KeyBuf
		owner := cfg.Members[partition.Owner(partition.FlowKey(&b, &k), 3)].Name
		q := fmt.Sprintf("/api/v1/flow?src=10.0.0.1&dst=10.0.0.2&sport=%d&dport=80&proto=6", sport)
		for i, s := range srvs {
			code, h, m := get(t, s.Addr(), q)
			wantBy := cfg.Members[i].Name
			if owner == wantBy {
				wantBy = ""
			}
			if code != 200 || m["member"] != owner || h.Get(HeaderMember) != owner || m["forwarded_by"] != wantBy || m["sport"] != float64(sport) {
				t.Errorf("sport %d through m%d: %d %v %s, want owner %s", sport, i, code, m, h.Get(HeaderMember), owner)
			}
		}
		// A forwarded request is answered where it arrives: never forwarded again.
		if _, _, m := get(t, srvs[0].Addr(), q, HeaderForwarded, "m9"); m["member"] != "m0" {
			t.Errorf("forwarded request went on to %v", m["member"])
		}
	}
	// A bad key is the local endpoint's 400.
	if code, _, m := get(t, srvs[1].Addr(), "/api/v1/flow?src=10.0.0.1&dst=10.0.0.2&sport=x&dport=80&proto=6"); code != 400 || !strings.Contains(m["error"].(string), "sport") {
		t.Errorf("bad sport: %d %v", code, m)
	}

	// Top flows: the top 3 of the union, ties by last seen; the largest counter intact.
	wantTop := `[{"last_seen":"2026-01-01T00:00:00Z","member":"m2","packets":18446744073709551615,"src":"e"},` +
		`{"last_seen":"2026-01-01T00:00:02Z","member":"m1","packets":9,"src":"c"},` +
		`{"last_seen":"2026-01-01T00:00:01Z","member":"m0","packets":9,"src":"a"}]`
	for _, s := range srvs {
		body := rawGet(t, s.Addr(), "/api/v1/flowcache/top?n=3")
		var m struct {
			Flows   json.RawMessage `json:"flows"`
			Partial bool            `json:"partial"`
			Missing []string        `json:"missing"`
			N       int             `json:"n"`
		}
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		if compact(t, m.Flows) != wantTop || m.Partial || len(m.Missing) != 0 || m.N != 3 {
			t.Errorf("top through %s: %s", s.Addr(), body)
		}
	}
	// Events: the newest 3 (EventsLimit) over all, oldest first, each with its member.
	body := rawGet(t, srvs[0].Addr(), "/api/v1/events")
	var ev struct {
		Events json.RawMessage `json:"events"`
	}
	json.Unmarshal(body, &ev)
	if got := compact(t, ev.Events); got != `[{"member":"m2","seq":8,"time_ns":30},{"member":"m0","seq":2,"time_ns":40},{"member":"m1","seq":2,"time_ns":40}]` {
		t.Errorf("events: %s", got)
	}
	// A bad parameter is refused as the member alone refuses it.
	if code, _, m := get(t, srvs[0].Addr(), "/api/v1/flowcache/top?bogus=1"); code != 400 || !strings.Contains(m["error"].(string), "bogus") {
		t.Errorf("bad parameter: %d %v", code, m)
	}

	// m2 goes down: its keys are refused with its name, aggregates are partial.
	srvs[2].Stop(context.Background())
	var k telemetry.FlowKey
	for sport := 1; ; sport++ {
		k.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
		k.SrcPort, k.DstPort, k.Proto = uint16(sport), 80, 6
		var b partition.KeyBuf
		if partition.Owner(partition.FlowKey(&b, &k), 3) == 2 {
			break
		}
	}
	code, _, m := get(t, srvs[0].Addr(), fmt.Sprintf("/api/v1/flow?src=10.0.0.1&dst=10.0.0.2&sport=%d&dport=80&proto=6", k.SrcPort))
	if code != 503 || m["owner"] != "m2" || m["partial"] != true || fmt.Sprint(m["missing"]) != "[m2]" || !strings.HasPrefix(m["error"].(string), "member m2, which owns this key, is down: ") {
		t.Errorf("key of a member down: %d %v", code, m)
	}
	_, _, m = get(t, srvs[1].Addr(), "/api/v1/flowcache/top?n=3")
	if m["partial"] != true || fmt.Sprint(m["missing"]) != "[m2]" || len(m["flows"].([]any)) != 3 || m["flows"].([]any)[0].(map[string]any)["src"] != "c" {
		t.Errorf("top with m2 down: %v", m)
	}
	code, _, m = get(t, srvs[0].Addr(), StatusPath)
	ms := m["members"].([]any)
	if code != 200 || m["partial"] != true || fmt.Sprint(m["missing"]) != "[m2]" || len(ms) != 3 ||
		ms[0].(map[string]any)["self"] != true || ms[1].(map[string]any)["up"] != true || ms[2].(map[string]any)["up"] != false {
		t.Errorf("cluster status: %v", m)
	}
	// What `intake status --cluster` prints (cmd/intake's TestClusterStatusText): m0 (self) and m1 up
	// with their counters, m2 down with why, partial.
	var st StatusJSON
	json.Unmarshal(rawGet(t, srvs[0].Addr(), StatusPath), &st)
	if st.Self != "m0" || st.Hash != "crc32c mod members" || len(st.Members) != 3 || !st.Partial || fmt.Sprint(st.Missing) != "[m2]" {
		t.Fatalf("cluster status %+v", st)
	}
	for i, m := range st.Members {
		var c struct {
			PacketsReceived *uint64 `json:"packets_received"`
		}
		if up := i < 2; m.Name != fmt.Sprint("m", i) || m.Self != (i == 0) || m.Up != up ||
			up && (json.Unmarshal(m.Status, &c) != nil || c.PacketsReceived == nil) || !up && m.Error == "" {
			t.Errorf("member %d: %+v", i, m)
		}
	}
}

func rawGet(t *testing.T, addr, path string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s %s", path, resp.Status, b)
	}
	return b
}

func compact(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// BenchmarkForwardedLookup: a key lookup through a member that does not own the key (one
// forwarding hop over loopback HTTP), with its p50 and p99.
func BenchmarkForwardedLookup(b *testing.B) {
	cfg, srvs := testCluster(b, []string{"{}", "{}", "{}"}, []string{"{}", "{}", "{}"})
	var k telemetry.FlowKey
	k.SetIPv4([]byte{10, 0, 0, 1}, []byte{10, 0, 0, 2})
	k.SrcPort, k.DstPort, k.Proto = 1, 80, 6
	var kb partition.KeyBuf
	via := srvs[(partition.Owner(partition.FlowKey(&kb, &k), len(cfg.Members))+1)%3]
	u := "http://" + via.Addr() + "/api/v1/flow?src=10.0.0.1&dst=10.0.0.2&sport=1&dport=80&proto=6"
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		resp, err := http.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
