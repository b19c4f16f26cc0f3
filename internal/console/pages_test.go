package console_test

// The overview, the top flows' filters, the flow notation and the fabric's columns, each
// checked against the API's own answers (read over HTTP, as the console reads them).

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/telemetry"
)

// apiGet reads an API answer into v with the token, or fails the test; it returns the status.
func apiGet(t *testing.T, base, token, path string, v any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// apiFlow is a flow of GET /api/v1/flowcache/top, as much as these tests read.
type apiFlow struct {
	Src   string   `json:"src"`
	Dst   string   `json:"dst"`
	Sport uint16   `json:"sport"`
	Dport uint16   `json:"dport"`
	Proto uint8    `json:"proto"`
	Path  []uint32 `json:"path"`
}

func (f apiFlow) String() string {
	return telemetry.FlowString(f.Src, f.Sport, f.Dst, f.Dport, f.Proto)
}

func topFlows(t *testing.T, base, query string) []apiFlow {
	t.Helper()
	var top struct{ Flows []apiFlow }
	if st := apiGet(t, base, testToken, "api/v1/flowcache/top?"+query, &top); st != 200 {
		t.Fatalf("flowcache/top?%s: status %d", query, st)
	}
	return top.Flows
}

func flowTexts(fs []apiFlow) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.String())
	}
	return out
}

// checkOverview: the overview's slowest flows are flowcache/top?by=latency's rows, its event
// counts /api/v1/events' counted by kind, its drop tile /api/v1/status' drops total (one
// datagram over the listener's limit makes it nonzero), its hottest switch the topology's.
// The traffic has stopped, so the answers hold still.
func checkOverview(t *testing.T, b *browser, c *collector.Collector, base string) {
	t.Helper()
	conn, err := net.Dial("udp", c.Receiver.ListenerAddr(0))
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(make([]byte, 10000)) // over the listener's max_datagram (9216): ingest.oversize
	conn.Close()
	var st struct {
		Drops map[string]any `json:"drops"`
	}
	for i := 0; ; i++ {
		apiGet(t, base, testToken, "api/v1/status", &st)
		if st.Drops["total"].(float64) > 0 || i == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	total := st.Drops["total"].(float64)
	if total != 1 {
		t.Fatalf("status drops total %v after one oversize datagram, want 1", total)
	}

	b.run(t, "open the overview", chromedp.Navigate(base+"#/overview"))
	b.waitJS(t, "the overview", `document.querySelectorAll('#ov-slow-table tbody tr').length > 0 && !!document.querySelector('#ov-event-counts') && !!document.querySelector('#ov-switches-table')`)
	want := flowTexts(topFlows(t, base, "by=latency&n=5"))
	b.waitJS(t, "the slowest flows", `document.querySelectorAll('#ov-slow-table tbody tr').length === `+strconv.Itoa(len(want)))
	got := eval[[]string](t, b, `[...document.querySelectorAll('#ov-slow-table tbody tr td:first-child')].map((td) => td.textContent)`)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("slowest flows %q, flowcache/top by latency %q", got, want)
	}

	var ev struct{ Events []struct{ Kind string } }
	apiGet(t, base, testToken, "api/v1/events?kind=new_key,path_change,above,below,expire&since=15m&limit=10000", &ev)
	wantCounts := map[string]int{"new_key": 0, "path_change": 0, "above": 0, "below": 0, "expire": 0}
	for _, e := range ev.Events {
		wantCounts[e.Kind]++
	}
	gotCounts := eval[map[string]int](t, b, `Object.fromEntries([...document.querySelectorAll('#ov-event-counts [data-kind]')].map((a) => [a.dataset.kind, Number(a.dataset.count)]))`)
	if fmt.Sprint(gotCounts) != fmt.Sprint(wantCounts) || wantCounts["new_key"] == 0 {
		t.Errorf("event counts %v, /api/v1/events by kind %v", gotCounts, wantCounts)
	}
	if tile := eval[[]string](t, b, `[...document.querySelectorAll('#ov-drops div')].map((d) => d.textContent)`); !slices.Equal(tile, []string{fmtNum(total), "dropped, every component", "lost: ingest.oversize 1"}) {
		t.Errorf("drop tile %q, want the status' total %v, lost: ingest.oversize 1", tile, total)
	}
	if href := eval[string](t, b, `document.querySelector('#ov-drops').getAttribute('href')`); href != "#/health" {
		t.Errorf("drop tile links to %q, want #/health", href)
	}

	// The hottest switch: the topology's largest hop latency.
	var topo struct {
		Switches []struct {
			ID     int
			Latest map[string]struct{ Max float64 }
		}
	}
	apiGet(t, base, testToken, "api/v1/topology", &topo)
	hot, hotV := -1, -1.0
	for _, s := range topo.Switches {
		if v := s.Latest["hop_latency"].Max; v > hotV {
			hot, hotV = s.ID, v
		}
	}
	if got := eval[string](t, b, `document.querySelector('#ov-switches-table tbody tr').dataset.id`); got != strconv.Itoa(hot) {
		t.Errorf("hottest switch %s, topology's largest hop latency is switch %d's (%v)", got, hot, hotV)
	}

	// The range picker: the address keeps it, the events and history follow it.
	b.run(t, "pick 5 min", chromedp.Click(chromedp.CSS(`#range-picker button[data-range="5m"]`)))
	b.waitJS(t, "the range in the address", `location.hash === '#/overview?range=5m' && document.querySelector('#range-picker button.active').dataset.range === '5m'`)
	b.waitJS(t, "the events of the range", `document.querySelector('#ov-events h2').textContent.includes('last 5m')`)
	b.waitJS(t, "the history of the range", `document.querySelector('#ov-history h2').textContent === 'History, last 5m' && document.querySelectorAll('#ov-chart-switches polyline.series').length === 5`)
	b.run(t, "reload with the range", chromedp.Reload())
	b.waitJS(t, "the range kept", `document.querySelector('#range-picker button.active').dataset.range === '5m'`)
}

// checkNotation: the console writes flows as the CLI does (telemetry.FlowString, which
// ParseFlowKey reads back), and its search box reads what the CLI reads: ">", "->", "→",
// the protocol by name or number.
func checkNotation(t *testing.T, b *browser, base string, j flowcache.FlowJSON, hops int) {
	t.Helper()
	want := telemetry.FlowString(j.Src, j.Sport, j.Dst, j.Dport, j.Proto)
	if got := eval[string](t, b, `document.querySelector('#flow-title').textContent`); got != want {
		t.Errorf("flow page title %q, want the CLI's %q", got, want)
	}
	if _, err := telemetry.ParseFlowKey(want); err != nil {
		t.Errorf("the CLI does not read the console's %q: %v", want, err)
	}
	src, dst := netip.AddrPortFrom(netip.MustParseAddr(j.Src), j.Sport), netip.AddrPortFrom(netip.MustParseAddr(j.Dst), j.Dport)
	for i, typed := range []string{
		fmt.Sprintf("%s->%s %d", src, dst, j.Proto),
		fmt.Sprintf("  %s → %s  %s ", src, dst, strings.ToUpper(telemetry.ProtoName(j.Proto))),
		fmt.Sprintf("%s,%s,%d,%d,%s", j.Src, j.Dst, j.Sport, j.Dport, telemetry.ProtoName(j.Proto)),
	} {
		page := []string{"flows", "flows", "overview"}[i] // the box is on both
		b.run(t, "open "+page, chromedp.Navigate(base+"#/"+page))
		b.run(t, "search "+typed, chromedp.SendKeys(chromedp.CSS("#flow-search"), typed+kb.Enter))
		b.waitJS(t, "the flow of "+typed, fmt.Sprintf(`location.hash.startsWith('#/flow?') && (document.querySelector('#flow-title') || {}).textContent === %q && document.querySelectorAll('#flow-hops tr').length === %d`, want, hops))
	}
	// In the address, as a flow= parameter and with proto by name.
	for _, hash := range []string{"flow?flow=" + url.QueryEscape(fmt.Sprintf("%s → %s %s", src, dst, telemetry.ProtoName(j.Proto))),
		fmt.Sprintf("flow?src=%s&dst=%s&sport=%d&dport=%d&proto=%s", j.Src, j.Dst, j.Sport, j.Dport, telemetry.ProtoName(j.Proto))} {
		b.run(t, "open "+hash, chromedp.Navigate(base+"#/"+hash))
		b.waitJS(t, "the flow of "+hash, fmt.Sprintf(`(document.querySelector('#flow-title') || {}).textContent === %q && document.querySelectorAll('#flow-hops tr').length === %d`, want, hops))
	}
	b.run(t, "open a bad flow", chromedp.Navigate(base+"#/flow?flow="+url.QueryEscape("10.0.0.1 > nowhere")))
	b.waitJS(t, "the notation's help", `(document.querySelector('#flow-error') || {}).textContent === 'Not a flow: "10.0.0.1 > nowhere". Write it as the CLI does: SRC:SPORT > DST:DPORT PROTO (10.0.0.1:5000 > 10.0.0.2:80 udp; -> and → work too, the protocol by name or number), or src,dst,sport,dport,proto.'`)
}

// checkFilters: the top flows' switch, port and prefix inputs go to flowcache/top as its
// parameters, and the page lists what the API answers to them.
func checkFilters(t *testing.T, b *browser, base string) {
	t.Helper()
	first := topFlows(t, base, "by=latency&n=25")[0]
	sw := strconv.Itoa(int(first.Path[0]))
	port := strconv.Itoa(int(first.Dport))
	rows := `[...document.querySelectorAll('#flows-body tr td:nth-child(2)')].map((td) => td.textContent)`
	for i, tc := range []struct{ inputs, query string }{
		{"switch=" + sw + "&port=" + port, "by=latency&n=25&switch=" + sw + "&port=" + port},
		{"prefix=" + first.Src + "/32", "by=latency&n=25&prefix=" + url.QueryEscape(first.Src+"/32")},
	} {
		b.run(t, "open top flows", chromedp.Navigate(base+"#/flows"))
		b.waitJS(t, "the top flows", `document.querySelectorAll('#flows-body tr a').length > 0`)
		q, _ := url.ParseQuery(tc.inputs)
		for k, v := range q {
			b.run(t, "filter "+k, chromedp.SendKeys(chromedp.CSS("#flows-"+k), v[0]+kb.Enter))
		}
		want := flowTexts(topFlows(t, base, tc.query))
		if len(want) == 0 {
			t.Fatalf("flowcache/top?%s: no flow", tc.query)
		}
		for i := 0; !slices.Equal(eval[[]string](t, b, rows), want); i++ {
			if i == 100 {
				t.Fatalf("filter %s: the page lists %q (address %s), flowcache/top?%s answers %q", tc.inputs, eval[[]string](t, b, rows), eval[string](t, b, `location.hash`), tc.query, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for k, v := range q {
			if !eval[bool](t, b, fmt.Sprintf(`new URLSearchParams(location.hash.split('?')[1]).get(%q) === %q`, k, v[0])) {
				t.Errorf("the address %s does not keep %s=%s", eval[string](t, b, `location.hash`), k, v[0])
			}
		}
		if i == 0 {
			b.shot(t, "flows")
		}
	}
	for _, f := range topFlows(t, base, "by=latency&n=25&switch="+sw+"&port="+port) {
		if !slices.Contains(f.Path, first.Path[0]) || (strconv.Itoa(int(f.Dport)) != port && strconv.Itoa(int(f.Sport)) != port) {
			t.Errorf("flowcache/top?switch=%s&port=%s answered %s (path %v)", sw, port, f, f.Path)
		}
	}
}

// hopColumns is the fabric's rule (console.js hopColumns): a switch's column is the hop index
// it is found at most often on the paths, the lowest of equals.
func hopColumns(paths [][]uint32) map[int]int {
	counts := map[int][]int{}
	for _, p := range paths {
		for i, id := range p {
			c := counts[int(id)]
			for len(c) <= i {
				c = append(c, 0)
			}
			c[i]++
			counts[int(id)] = c
		}
	}
	col := map[int]int{}
	for id, c := range counts {
		best := 0
		for i := range c {
			if c[i] > c[best] {
				best = i
			}
		}
		col[id] = best
	}
	return col
}

// checkColumns: every switch drawn is in the column of its hop position on the busiest
// flows' paths (flowcache/top by packets, as the page reads them), columns left to right.
func checkColumns(t *testing.T, b *browser, base, token string) map[int]int {
	t.Helper()
	var top struct{ Flows []apiFlow }
	apiGet(t, base, token, "api/v1/flowcache/top?by=packets&n=1000", &top)
	var paths [][]uint32
	for _, f := range top.Flows {
		paths = append(paths, f.Path)
	}
	want := hopColumns(paths)
	b.run(t, "redraw the fabric", chromedp.Reload())
	b.waitJS(t, "the fabric", `document.querySelectorAll('#fabric-svg g.switch').length === `+strconv.Itoa(len(want)))
	type node struct {
		ID  int     `json:"id"`
		Col int     `json:"col"`
		X   float64 `json:"x"`
	}
	nodes := eval[[]node](t, b, `[...document.querySelectorAll('#fabric-svg g.switch')].map((g) => ({id: Number(g.dataset.id), col: Number(g.dataset.col), x: g.transform.baseVal[0].matrix.e}))`)
	colX := map[int]float64{}
	for _, n := range nodes {
		if w, ok := want[n.ID]; !ok || n.Col != w {
			t.Errorf("switch %d in column %d, want %d (its most frequent hop index)", n.ID, n.Col, w)
		}
		if x, ok := colX[n.Col]; ok && x != n.X {
			t.Errorf("column %d drawn at x %v and %v", n.Col, x, n.X)
		}
		colX[n.Col] = n.X
	}
	for c := 1; c < len(colX); c++ {
		if !(colX[c] > colX[c-1]) {
			t.Errorf("column %d at x %v, column %d at %v: want left to right", c-1, colX[c-1], c, colX[c])
		}
	}
	heads := eval[[]string](t, b, `[...document.querySelectorAll('#fabric-svg .col-head')].map((t) => t.textContent)`)
	if len(heads) != len(colX) || heads[0] != "hop 1 (source)" {
		t.Errorf("column heads %q for %d columns", heads, len(colX))
	}
	return want
}

// TestConsoleAfterIdle: once the flow cache has let every flow go (flowcache.idle_timeout),
// the fabric says when telemetry was last seen instead of waiting for it, and the overview,
// switch and flow pages still show what happened, from the history.
func TestConsoleAfterIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and a browser (-short)")
	}
	c := collectortest.Start(t, func(cfg *config.Config) {
		cfg.HTTP.Token, cfg.HTTP.TokenReads = testToken, true
		cfg.FlowCache.IdleTimeout, cfg.FlowCache.AgeInterval = time.Second, 100*time.Millisecond
		cfg.History.Period = 500 * time.Millisecond
	})
	base := "http://" + c.API.Addr() + "/"
	stop := startTraffic(t, c, 500)
	time.Sleep(1500 * time.Millisecond)
	stop()
	waitQuiet(t, c)
	last := time.Now()
	var hist struct {
		Flows []struct {
			Text string `json:"text"`
		} `json:"flows"`
	}
	apiGet(t, base, testToken, "api/v1/history?range=5m", &hist)
	if len(hist.Flows) == 0 {
		t.Fatal("history: no flow")
	}
	for i := 0; len(c.FlowCache.Topology(flowcache.TopologyLimit).Switches) > 0; i++ {
		if i == 50 {
			t.Fatal("the flow cache kept its flows past idle_timeout")
		}
		time.Sleep(100 * time.Millisecond)
	}

	b := newBrowser(t)
	// The token as the console keeps it, set on a file that asks the API nothing (the
	// browser's own request for /favicon.ico, a 404, is forgotten).
	b.run(t, "set the token", chromedp.Navigate(base+"favicon.svg"), chromedp.Evaluate[chromedp.Void](`localStorage.setItem('intake.token', '`+testToken+`')`))
	b.reset()
	b.run(t, "open the fabric", chromedp.Navigate(base+"#/fabric"))
	b.waitJS(t, "the fabric's last seen", `/^No flow with INT hops in the flow cache now: .*Telemetry was last seen at \d\d:\d\d:\d\d \(\d+ s ago\)/.test((document.querySelector('#fabric-empty') || {}).textContent)`)
	seen := eval[string](t, b, `/last seen at (\d\d:\d\d:\d\d)/.exec(document.querySelector('#fabric-empty').textContent)[1]`)
	at, _ := time.ParseInLocation("15:04:05", seen, time.Local)
	if d := last.Sub(time.Date(last.Year(), last.Month(), last.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.Local)); d < -time.Second || d > 15*time.Second {
		t.Errorf("last seen at %s, the traffic stopped at %s", seen, last.Format("15:04:05"))
	}

	b.run(t, "open the overview", chromedp.Navigate(base+"#/overview?range=5m"))
	b.waitJS(t, "the overview's history", `document.querySelectorAll('#ov-chart-switches polyline.series, #ov-chart-switches circle').length > 0 && document.querySelectorAll('#ov-chart-flows polyline.series, #ov-chart-flows circle').length > 0`)
	b.waitJS(t, "the empty slowest flows", `document.querySelector('#ov-slow').textContent.includes('No flow in the flow cache now. Telemetry last seen at')`)
	b.run(t, "open switch 3", chromedp.Navigate(base+"#/switch?id=3"))
	b.waitJS(t, "its history", `document.querySelectorAll('#switch-chart-latency polyline.series, #switch-chart-latency circle').length > 0`)
	b.run(t, "open a flow gone", chromedp.Navigate(base+"#/flow?flow="+url.QueryEscape(hist.Flows[0].Text)))
	b.waitJS(t, "its history", `document.querySelectorAll('#flow-chart-latency polyline.series, #flow-chart-latency circle').length > 0 && document.querySelector('#flow-summary').textContent.includes('not in the flow cache')`)
	// The browser logs the flow cache's 404 for the flow gone, which the page expects, and
	// its own request for /favicon.ico beside favicon.svg.
	errs := slices.DeleteFunc(b.errors(), func(e string) bool {
		return strings.Contains(e, "404 (Not Found) (http://"+c.API.Addr()+"/api/v1/flowcache/flow?") ||
			strings.Contains(e, "404 (Not Found) (http://"+c.API.Addr()+"/favicon.ico")
	})
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestConsoleCluster: in a cluster, the console of any member draws every member's flows
// (GET /api/v1/topology and flowcache/top merged): here member 0 holds a flow over switches
// 1 > 2, member 1 a slower one over 3 > 4, and member 0's console shows both.
func TestConsoleCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts collectors and a browser (-short)")
	}
	cs := collectortest.StartCluster(t, 2, func(i int, cfg *config.Config) { cfg.DTA.Enabled, cfg.Label.Enabled = false, false })
	now := time.Now().UnixNano()
	for i, hops := range [][]collectortest.FlowHop{{{1, 100, 5, 6}, {2, 100, 5, 6}}, {{3, 900, 50, 60}, {4, 900, 50, 60}}} {
		cs[i].FlowCache.Process(0, collectortest.FlowReport(uint16(i+1), now, hops...))
		cs[i].FlowCache.Flush(0)
	}
	b := newBrowser(t)
	base := "http://" + cs[0].API.Addr() + "/"
	b.run(t, "open member 0's fabric", chromedp.Navigate(base+"#/fabric"))
	b.waitJS(t, "both members' switches", `document.querySelectorAll('#fabric-svg g.switch').length === 4`)
	type node struct {
		ID  int `json:"id"`
		Col int `json:"col"`
	}
	nodes := eval[[]node](t, b, `[...document.querySelectorAll('#fabric-svg g.switch')].map((g) => ({id: Number(g.dataset.id), col: Number(g.dataset.col)}))`)
	slices.SortFunc(nodes, func(a, b node) int { return a.ID - b.ID })
	if want := []node{{1, 0}, {2, 1}, {3, 0}, {4, 1}}; !slices.Equal(nodes, want) {
		t.Errorf("member 0's fabric %v, want %v (both members' switches by hop)", nodes, want)
	}
	b.run(t, "open member 0's overview", chromedp.Navigate(base+"#/overview"))
	b.waitJS(t, "both members' flows", `document.querySelectorAll('#ov-slow-table tbody tr').length === 2`)
	got := eval[[]string](t, b, `[...document.querySelectorAll('#ov-slow-table tbody tr td:first-child')].map((td) => td.textContent)`)
	if want := []string{"10.0.0.1:2 > 10.0.0.2:80 udp", "10.0.0.1:1 > 10.0.0.2:80 udp"}; !slices.Equal(got, want) {
		t.Errorf("member 0's slowest flows %q, want member 1's first, then its own: %q", got, want)
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
