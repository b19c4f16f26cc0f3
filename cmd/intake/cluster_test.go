//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/partition"
)

// member is one `intake serve` process of the test's cluster.
type member struct {
	name, api  string
	report, dt string // its UDP listeners
	cmd        *exec.Cmd
}

// startCluster runs n `intake serve` processes (the test binary as intake) on loopback,
// members c0..c(n-1) of one cluster, each with a telemetry report and a DTA listener.
func startCluster(t *testing.T, n int) []*member {
	t.Helper()
	ms := make([]*member, n)
	yaml := "cluster:\n  timeout: 2s\n  members:\n"
	for i := range ms {
		ms[i] = &member{name: fmt.Sprintf("c%d", i), api: testutil.FreeAddr(t)}
		yaml += fmt.Sprintf("    - {name: %s, api: '%s'}\n", ms[i].name, ms[i].api)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reUDP := regexp.MustCompile(`listening for (report|dta) on udp (\S+) `)
	for i, m := range ms {
		cfg := fmt.Sprintf("listeners:\n  - {format: report, address: 127.0.0.1, port: 0, sockets: 1}\n"+
			"  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\nhttp: {address: '%s'}\n"+
			"label: {enabled: false}\ndta: {data_dir: %s}\n%s  self: %s\n", m.api, t.TempDir(), yaml, m.name)
		path := filepath.Join(t.TempDir(), "intake.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		m.cmd = exec.Command(exe, "serve", "--config", path)
		m.cmd.Env = append(os.Environ(), childEnv+"=1")
		stderr, err := m.cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.cmd.Process.Kill(); m.cmd.Wait() })
		lines := bufio.NewScanner(stderr)
		up := false
		for !up && lines.Scan() {
			if s := reUDP.FindStringSubmatch(lines.Text()); s != nil && s[1] == "report" {
				m.report = s[2]
			} else if s != nil {
				m.dt = s[2]
			}
			up = strings.Contains(lines.Text(), "http on ")
		}
		if !up || m.report == "" || m.dt == "" {
			t.Fatalf("member %d did not start (report %q, dta %q)", i, m.report, m.dt)
		}
		go io.Copy(io.Discard, stderr)
	}
	return ms
}

// runCollectorsGen runs `intake gen --collectors` with args and returns what the in-process
// generators of the same options hold for each member: the truth of what it sent.
func runCollectorsGen(t testing.TB, addrs []string, args ...string) []gen.Truth {
	t.Helper()
	code, out, errs := runVerb(append([]string{"gen", "--collectors", strings.Join(addrs, ","), "--json", "--quiet"}, args...)...)
	if code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	var sum struct {
		Collectors []gen.Summary `json:"collectors"`
		Reports    uint64        `json:"reports"`
		SendErrors uint64        `json:"send_errors"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Collectors) != len(addrs) || sum.SendErrors != 0 {
		t.Fatalf("gen: %v %s", err, out)
	}
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	gf := gen.AddFlags(fs, gen.DefaultConfig())
	fs.Uint64("count", 0, "")
	fs.Float64("rate", 0, "")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := gf.Config()
	if err != nil {
		t.Fatal(err)
	}
	var truths []gen.Truth
	for i, s := range sum.Collectors {
		c := cfg
		c.Part, c.Parts = i, len(addrs)
		g, err := gen.New(c)
		if err != nil {
			t.Fatal(err)
		}
		tr := g.Truth(s.Datagrams)
		if tr.Reports != s.Reports || s.To != addrs[i] {
			t.Fatalf("member %d: truth %d reports, gen sent %d to %s", i, tr.Reports, s.Reports, s.To)
		}
		truths = append(truths, tr)
	}
	return truths
}

// call GETs path from a member; hdr are header name, value pairs.
func call(t testing.TB, addr, path string, hdr ...string) (int, http.Header, []byte) {
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
	return resp.StatusCode, resp.Header, b
}

func flowQuery(f int) (string, []byte) {
	n := f + 1
	src, dst := fmt.Sprintf("10.%d.%d.%d", byte(n>>16), byte(n>>8), byte(n)), fmt.Sprintf("172.%d.%d.%d", 16+byte(n>>20)&15, byte(n>>8), byte(n))
	proto, dport := 17, 5201
	if f%2 == 1 {
		proto, dport = 6, 443
	}
	key := []byte{10, byte(n >> 16), byte(n >> 8), byte(n), 172, 16 + byte(n>>20)&15, byte(n >> 8), byte(n),
		byte((1024 + f) >> 8), byte(1024 + f), byte(dport >> 8), byte(dport), byte(proto)}
	return fmt.Sprintf("src=%s&dst=%s&sport=%d&dport=%d&proto=%d", src, dst, 1024+f, dport, proto), key
}

// TestCluster: three collectors partitioned by key, a generator sending every report to
// its owner, every key queried through every member with exact answers, the aggregates
// merged exactly, and one member killed: the others answer, partial results marked.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three collectors")
	}
	ms := startCluster(t, 3)
	var reps, dtas []string
	for _, m := range ms {
		reps, dtas = append(reps, m.report), append(dtas, m.dt)
	}
	const flows = 48
	trTruth := runCollectorsGen(t, reps, "--format", "tr2.0", "--flows", fmt.Sprint(flows), "--count", "2400", "--rate", "40000", "--latency", "const:1000")
	kiTruth := runCollectorsGen(t, dtas, "--format", "dta", "--dta-op", "key-increment", "--flows", fmt.Sprint(flows), "--count", "1500", "--rate", "40000")
	apTruth := runCollectorsGen(t, dtas, "--format", "dta", "--dta-op", "append", "--flows", fmt.Sprint(flows), "--count", "600", "--rate", "40000")
	for i, m := range ms {
		want := trTruth[i].Reports + kiTruth[i].Reports + apTruth[i].Reports
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("%s to decode the %d reports sent to it", m.name, want), func() bool {
			var st struct {
				Reports uint64 `json:"reports_decoded"`
			}
			collectortest.GetJSON(t, "http://"+m.api+"/api/v1/status", &st)
			return st.Reports == want
		})
	}

	// Every flow and every DTA key through every member: the owner's exact answer.
	pc := gen.DefaultConfig()
	pc.Flows = flows
	paths, err := gen.New(pc) // the flows' paths: the same in every member's stream
	if err != nil {
		t.Fatal(err)
	}
	packets := func(f int) (uint64, int) { // a flow's reports and its owner
		for i := range ms {
			if n := trTruth[i].ByFlow[f]; n > 0 {
				return n, i
			}
		}
		return 0, -1
	}
	for f := range flows {
		q, key := flowQuery(f)
		n, owner := packets(f)
		if n == 0 {
			t.Fatalf("flow %d: no reports sent", f)
		}
		if o := partition.Owner(key, 3); o != owner {
			t.Fatalf("flow %d: sent to %d, the hash says %d", f, owner, o)
		}
		dkey := fmt.Sprintf("0x%02x%02x%02x%02x", key[0], key[1], key[2], key[3])
		kiOwner := partition.Owner(key[:4], 3)
		for _, m := range ms {
			code, h, b := call(t, m.api, "/api/v1/flowcache/flow?"+q)
			var rec struct {
				Packets uint64 `json:"packets"`
			}
			json.Unmarshal(b, &rec)
			if code != 200 || rec.Packets != n || h.Get(cluster.HeaderMember) != ms[owner].name {
				t.Errorf("flowcache flow %d through %s: %d %s (member %s), want %d packets from %s", f, m.name, code, b, h.Get(cluster.HeaderMember), n, ms[owner].name)
			}
			code, h, b = call(t, m.api, "/api/v1/flow?"+q)
			var st struct {
				Reports uint64   `json:"reports"`
				Path    []uint32 `json:"path"`
			}
			json.Unmarshal(b, &st)
			if _, path := paths.Flow(f); code != 200 || st.Reports != n || !slices.Equal(st.Path, path) || h.Get(cluster.HeaderMember) != ms[owner].name {
				t.Errorf("detect flow %d through %s: %d %s, want %d reports over %v from %s", f, m.name, code, b, n, path, ms[owner].name)
			}
			code, h, b = call(t, m.api, "/api/v1/dta/ki/"+dkey)
			var ki struct {
				Count uint64 `json:"count"`
			}
			json.Unmarshal(b, &ki)
			if code != 200 || ki.Count != kiTruth[kiOwner].ByFlow[f] || h.Get(cluster.HeaderMember) != ms[kiOwner].name {
				t.Errorf("dta ki %s through %s: %d %s (member %s), want count %d from %s", dkey, m.name, code, b, h.Get(cluster.HeaderMember), kiTruth[kiOwner].ByFlow[f], ms[kiOwner].name)
			}
		}
	}

	// Every DTA list (a switch's, keyed by its id) through every member: the owner's list.
	lists := 0
	for sw := uint32(1); sw <= 16; sw++ {
		var kb partition.KeyBuf
		owner := partition.Owner(partition.IDKey(&kb, sw), 3)
		for i := range ms {
			if i != owner && apTruth[i].ByNode[sw] != 0 {
				t.Fatalf("list %d appended on c%d, owner c%d", sw, i, owner)
			}
		}
		want := apTruth[owner].ByNode[sw]
		if want == 0 {
			continue
		}
		lists++
		for _, m := range ms {
			code, h, b := call(t, m.api, fmt.Sprintf("/api/v1/dta/list/%d?limit=100000", sw))
			var l struct {
				Head    uint64   `json:"head"`
				Entries []string `json:"entries"`
			}
			json.Unmarshal(b, &l)
			if code != 200 || l.Head != want || uint64(len(l.Entries)) != want || h.Get(cluster.HeaderMember) != ms[owner].name {
				t.Errorf("list %d through %s: %d head %d, %d entries (member %s), want %d from %s", sw, m.name, code, l.Head, len(l.Entries), h.Get(cluster.HeaderMember), want, ms[owner].name)
			}
		}
	}
	if lists < 3 {
		t.Errorf("only %d lists appended", lists)
	}

	// Top flows through every member: every flow, exact, the same answer everywhere.
	var first []byte
	for _, m := range ms {
		code, _, b := call(t, m.api, "/api/v1/flowcache/top?n=1000")
		var top struct {
			Flows []struct {
				Sport   int    `json:"sport"`
				Packets uint64 `json:"packets"`
				Member  string `json:"member"`
			} `json:"flows"`
			Partial bool     `json:"partial"`
			Missing []string `json:"missing"`
		}
		if err := json.Unmarshal(b, &top); err != nil || code != 200 || len(top.Flows) != flows || top.Partial || len(top.Missing) != 0 {
			t.Fatalf("top through %s: %d %v %.300s", m.name, code, err, b)
		}
		for i, fl := range top.Flows {
			n, owner := packets(fl.Sport - 1024)
			if fl.Packets != n || fl.Member != ms[owner].name || i > 0 && fl.Packets > top.Flows[i-1].Packets {
				t.Errorf("top through %s: flow %d: %d packets from %s, want %d from %s", m.name, fl.Sport-1024, fl.Packets, fl.Member, n, ms[owner].name)
			}
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Errorf("top through %s differs from through c0", m.name)
		}
	}

	// Events and histograms: the merge equals what the members hold, summed.
	var local []int
	for _, m := range ms {
		_, _, b := call(t, m.api, "/api/v1/events?limit=1000000", cluster.HeaderForwarded, "test")
		var ev struct{ Events []any }
		json.Unmarshal(b, &ev)
		local = append(local, len(ev.Events))
	}
	_, _, b := call(t, ms[1].api, "/api/v1/events?limit=1000000")
	var ev struct {
		Events []struct {
			TimeNS int64  `json:"time_ns"`
			Member string `json:"member"`
		}
	}
	json.Unmarshal(b, &ev)
	byMember := map[string]int{}
	for i, e := range ev.Events {
		byMember[e.Member]++
		if i > 0 && e.TimeNS < ev.Events[i-1].TimeNS {
			t.Fatalf("merged events out of time order at %d", i)
		}
	}
	if byMember["c0"] != local[0] || byMember["c1"] != local[1] || byMember["c2"] != local[2] || local[0]+local[1]+local[2] == 0 {
		t.Errorf("merged events by member %v, the members hold %v", byMember, local)
	}
	var hl struct{ Switches []uint32 }
	collectortest.GetJSON(t, "http://"+ms[2].api+"/api/v1/histograms", &hl)
	if len(hl.Switches) == 0 {
		t.Fatal("no histograms")
	}
	for _, sw := range hl.Switches {
		path := fmt.Sprintf("/api/v1/histograms/%d/hop_latency", sw)
		var sum uint64
		for _, m := range ms {
			code, _, b := call(t, m.api, path, cluster.HeaderForwarded, "test")
			var h struct{ Total uint64 }
			json.Unmarshal(b, &h)
			if code == 200 {
				sum += h.Total
			}
		}
		for _, m := range ms {
			var h struct{ Total uint64 }
			collectortest.GetJSON(t, "http://"+m.api+path, &h)
			if h.Total != sum || sum == 0 {
				t.Errorf("switch %d through %s: merged histogram total %d, members hold %d", sw, m.name, h.Total, sum)
			}
		}
	}

	// A key lookup through its owner and through a non-owner: the forwarding hop's cost
	// on loopback (docs/scale-out.md).
	q, key := flowQuery(0)
	for _, hop := range []int{0, 1} {
		via := ms[(partition.Owner(key, 3)+hop)%3]
		var lat []time.Duration
		for range 500 {
			t0 := time.Now()
			if code, _, _ := call(t, via.api, "/api/v1/flowcache/flow?"+q); code != 200 {
				t.Fatal(code)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		t.Logf("key lookup through %s (%d forwarding hops): p50 %v, p99 %v (%d lookups)", via.name, hop, p50, p99, len(lat))
		if p99 > 50*time.Millisecond {
			t.Errorf("p99 %v through %s", p99, via.name)
		}
	}

	// c2 killed: its keys are refused with its name, the rest is answered, aggregates
	// are marked partial.
	ms[2].cmd.Process.Kill()
	ms[2].cmd.Wait()
	for f := range flows {
		q, _ := flowQuery(f)
		n, owner := packets(f)
		for _, m := range ms[:2] {
			code, _, b := call(t, m.api, "/api/v1/flowcache/flow?"+q)
			var rec struct {
				Packets uint64   `json:"packets"`
				Partial bool     `json:"partial"`
				Missing []string `json:"missing"`
				Owner   string   `json:"owner"`
			}
			json.Unmarshal(b, &rec)
			switch {
			case owner == 2 && (code != 503 || !rec.Partial || fmt.Sprint(rec.Missing) != "[c2]" || rec.Owner != "c2"):
				t.Errorf("flow %d of c2 through %s: %d %s", f, m.name, code, b)
			case owner != 2 && (code != 200 || rec.Packets != n):
				t.Errorf("flow %d of c%d through %s with c2 down: %d %s", f, owner, m.name, code, b)
			}
		}
	}
	var alive []int
	for f := range flows {
		if _, o := packets(f); o != 2 {
			alive = append(alive, 1024+f)
		}
	}
	for _, m := range ms[:2] {
		_, _, b := call(t, m.api, "/api/v1/flowcache/top?n=1000")
		var top struct {
			Flows []struct {
				Sport int `json:"sport"`
			} `json:"flows"`
			Partial bool     `json:"partial"`
			Missing []string `json:"missing"`
		}
		json.Unmarshal(b, &top)
		var got []int
		for _, fl := range top.Flows {
			got = append(got, fl.Sport)
		}
		sort.Ints(got)
		if !top.Partial || fmt.Sprint(top.Missing) != "[c2]" || !slices.Equal(got, alive) {
			t.Errorf("top through %s with c2 down: partial %v missing %v, %d flows (want %d)", m.name, top.Partial, top.Missing, len(got), len(alive))
		}
	}
	code, out, errs := runVerb("query", "top", "--api", ms[1].api, "--n", "3")
	if code != 0 || !strings.HasPrefix(out, "partial answer: c2 did not answer\n") {
		t.Errorf("query top with c2 down: %d %q %s", code, out, errs)
	}
	code, out, errs = runVerb("status", "--cluster", "--api", ms[0].api)
	t.Logf("intake status --cluster:\n%s", out)
	for _, want := range []string{"cluster of 3 members (hash: crc32c mod members), asked through c0", "c0 (self)  up", "c2         DOWN", "c2 is down: ", "partial: 2 of 3 members answered (missing: c2)"} {
		if code != 1 || !strings.Contains(out, want) { // a member down exits 1 (issue 31)
			t.Errorf("status --cluster: %d %q lacks %q (%s)", code, out, want, errs)
		}
	}
	if errs != "intake status: 1 of 3 members down: c2\n" {
		t.Errorf("status --cluster with c2 down: stderr %q", errs)
	}
}

// The flags' misuse and a collector alone.
func TestClusterFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gen", "--collectors", "127.0.0.1:1,127.0.0.1:2", "--to", "127.0.0.1:3"}, "--to and --collectors exclude each other"},
		{[]string{"gen", "--collectors", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--count", "2"}, "--count 2: at least one datagram per collector (3)"},
		{[]string{"gen", "--collectors", "127.0.0.1:0"}, `--collectors: collector 1: "127.0.0.1:0": port must be 1-65535`},
		{[]string{"fabric", "--collectors", "127.0.0.1:5"}, "--collectors: 127.0.0.1:5: hosts only (the ports are --label's and --report's)"},
	} {
		code, _, errs := runVerb(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
	coll := collectortest.Start(t, nil)
	code, _, errs := runVerb("status", "--cluster", "--api", coll.API.Addr())
	if want := "404 Not Found: this collector is not in a cluster (cluster.members is empty)"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("status --cluster of a collector alone: %d %q", code, errs)
	}
}
