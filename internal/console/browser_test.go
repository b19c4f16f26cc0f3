package console_test

// The console in headless Chromium (Debian's chromium) against a real collector fed by the
// demo's generators over loopback, driven over the DevTools protocol (chromedp). The
// collector has a bearer token, so the pages must get it from the user once and send it on
// every request, the event stream's included.
//
// INTAKE_CONSOLE_SCREENSHOTS=DIR also saves a screenshot of every page into DIR (that is
// how docs/console/*.png are made: see docs/console.md).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

const testToken = "console-test-token-0123456789"

// chromium finds the browser, or fails with the command that installs it (docs/design.md, "Real
// components").
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium not found, so the console's browser test cannot run: install it with: apt-get install -y chromium (.ci/run installs it; -short skips this test)")
	return ""
}

// startCollector runs the demo's collector (every processor, the three inputs on loopback),
// with token on its API unless it is empty, and a history period of 500 ms (10 s by
// default) so that the charts have points within the test's seconds.
func startCollector(t *testing.T, token string) *collector.Collector {
	t.Helper()
	return collectortest.Start(t, func(cfg *config.Config) {
		cfg.HTTP.Token, cfg.HTTP.TokenReads = token, true
		cfg.History.Period = 500 * time.Millisecond
	})
}

// startTraffic sends the demo's streams (TR v2.0 over 16 switches, DTA, INT-label) until
// the returned stop is called.
func startTraffic(t *testing.T, c *collector.Collector, rate float64) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tr := gen.DefaultConfig()
	tr.Flows, tr.Vary = 100, 0.01
	dta, label := tr, tr
	dta.Format, dta.Batch = "dta", 1
	label.Format, label.Batch = "int-label", 1
	_, wait, err := gen.Start(ctx,
		gen.Target{Config: tr, Send: gen.SendConfig{To: c.Receiver.ListenerAddr(0), Rate: rate}},
		gen.Target{Config: dta, Send: gen.SendConfig{To: c.Receiver.ListenerAddr(1), Rate: rate / 10}},
		gen.Target{Config: label, Send: gen.SendConfig{To: c.Receiver.ListenerAddr(2), Rate: rate / 10}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := wait(); err != nil {
				t.Errorf("generators: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// browser is a headless Chromium tab that records every console error, uncaught
// exception and browser log error (a CSP violation, a failed load) the pages cause.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
		chromedp.NoSandbox, // root in CI containers
		chromedp.DisableGPU,
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancelB()
		cancelA()
		t.Fatalf("starting %s: %v", chromium(t), err)
	}
	msgs := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				msg := fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line)
				if strings.Contains(msg, "net::ERR_NETWORK_CHANGED") {
					// Chromium aborts its requests in flight when any of the host's links
					// changes, and go test runs other packages beside this one whose tests
					// make and remove veth pairs: the machine's doing, not the console's.
					t.Logf("ignored: %s", msg)
					continue
				}
				b.mu.Lock()
				b.errs = append(b.errs, msg)
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancelB(); cancelA(); <-done })
	return b
}

// reset returns the errors so far and forgets them.
func (b *browser) reset() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.errs
	b.errs = nil
	return e
}

func (b *browser) errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errs)
}

func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v (console errors: %q)", what, err, b.errors())
	}
}

// eval runs a JavaScript expression and returns its value.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression is true.
func (b *browser) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond),
		chromedp.WithPollingTimeout(25*time.Second))); err != nil {
		t.Fatalf("wait for %s: %v (console errors: %q)", what, err, b.errors())
	}
}

// shot saves a screenshot of the page as NAME.png when INTAKE_CONSOLE_SCREENSHOTS is set:
// the whole page, or the window when the page is long (events, a switch's details).
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	dir := os.Getenv("INTAKE_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	time.Sleep(300 * time.Millisecond) // the last poll's redraw
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	shoot := chromedp.FullScreenshot(100)
	if name == "events" || name == "fabric" {
		shoot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shoot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	small, err := shrinkPNG(png)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), small, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shrinkPNG keeps a screenshot small enough for the repository (about a third of its size):
// 256 colours, the most frequent of the picture's (a page has a few flat colours and their
// anti-aliased edges), each pixel mapped to the nearest.
func shrinkPNG(data []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	r := src.Bounds()
	key := func(c color.Color) uint32 { // 5 bits a channel
		cr, cg, cb, _ := c.RGBA()
		return cr>>11<<10 | cg>>11<<5 | cb>>11
	}
	freq, rep := map[uint32]int{}, map[uint32]color.Color{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := src.At(x, y)
			k := key(c)
			if freq[k]++; freq[k] == 1 {
				rep[k] = c
			}
		}
	}
	keys := slices.Collect(maps.Keys(freq))
	slices.SortFunc(keys, func(a, b uint32) int { return freq[b] - freq[a] })
	pal := color.Palette{}
	for _, k := range keys[:min(256, len(keys))] {
		pal = append(pal, rep[k])
	}
	dst := image.NewPaletted(r, pal)
	idx := map[uint32]uint8{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := src.At(x, y)
			k := key(c)
			i, ok := idx[k]
			if !ok {
				i = uint8(pal.Index(c))
				idx[k] = i
			}
			dst.SetColorIndex(x, y, i)
		}
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&out, dst); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// The console's number formats (console.js fmtNum and fmtNs), to compare its text exactly.
func fmtNum(v float64) string {
	d := 1
	if v == math.Trunc(v) {
		d = 0
	}
	p := math.Pow(10, float64(d))
	s := strconv.FormatFloat(math.Round(v*p)/p, 'f', d, 64)
	i, f, _ := strings.Cut(s, ".")
	var g []byte
	for k := range len(i) {
		if k > 0 && (len(i)-k)%3 == 0 {
			g = append(g, ',')
		}
		g = append(g, i[k])
	}
	if f != "" {
		return string(g) + "." + f
	}
	return string(g)
}

func fmtNs(v float64) string {
	r := func(div float64, digits int, unit string) string {
		p := math.Pow(10, float64(digits))
		return strconv.FormatFloat(math.Round(v/(div/p))/p, 'f', digits, 64) + " " + unit
	}
	switch a := math.Abs(v); {
	case a < 1000:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " ns"
	case a < 1e4:
		return r(1e3, 2, "µs")
	case a < 1e6:
		return r(1e3, 1, "µs")
	case a < 1e7:
		return r(1e6, 2, "ms")
	case a < 1e9:
		return r(1e6, 1, "ms")
	}
	return r(1e9, 2, "s")
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		v       float64
		num, ns string
	}{
		{0, "0", "0 ns"}, {999, "999", "999 ns"}, {1005, "1,005", "1.01 µs"}, {2125, "2,125", "2.13 µs"},
		{3100.967741935484, "3,101.0", "3.10 µs"}, {9.774193548387096, "9.8", "10 ns"}, {20366, "20,366", "20.4 µs"},
		{1234567, "1,234,567", "1.23 ms"}, {0.05, "0.1", "0 ns"}, {2.5e9, "2,500,000,000", "2.50 s"},
	} {
		if got := fmtNum(tc.v); got != tc.num {
			t.Errorf("fmtNum(%v) = %q, want %q", tc.v, got, tc.num)
		}
		if got := fmtNs(tc.v); got != tc.ns {
			t.Errorf("fmtNs(%v) = %q, want %q", tc.v, got, tc.ns)
		}
	}
}

func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and a browser (-short)")
	}
	b := newBrowser(t)
	c := startCollector(t, testToken)
	stopTraffic := startTraffic(t, c, 500)
	base := "http://" + c.API.Addr() + "/"

	// The API keeps its guard: no token, no data; the pages themselves need none.
	if resp, err := http.Get(base + "api/v1/topology"); err != nil || resp.StatusCode != 401 {
		t.Fatalf("topology without a token: %v %v", resp, err)
	}
	resp, err := http.Get(base)
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("console without a token: %v %v", resp, err)
	}

	// The token, asked for once.
	b.run(t, "open the console", chromedp.Navigate(base+"#/fabric"), chromedp.WaitVisible(chromedp.CSS("#token-form")))
	b.run(t, "enter the token", chromedp.SendKeys(chromedp.CSS("#token-input"), testToken), chromedp.Click(chromedp.CSS(`#token-form button[type="submit"]`)),
		chromedp.WaitNotVisible(chromedp.CSS("#token-form")))
	// Until then, the browser logged the API's refusals (and nothing else): the console
	// stops asking after the first.
	before := b.reset()
	if len(before) == 0 || len(before) > 4 {
		t.Errorf("console errors before the token: %q, want one or two 401s", before)
	}
	for _, e := range before {
		if !strings.Contains(e, "status of 401 (Unauthorized) (http://"+c.API.Addr()+"/api/v1/") {
			t.Errorf("console error before the token: %s", e)
		}
	}

	// The fabric: every switch the demo's paths go through, 1 to 16, and its details.
	b.waitJS(t, "the fabric's 16 switches", `document.querySelectorAll('#fabric-svg g.switch').length === 16`)
	ids := eval[[]int](t, b, `[...document.querySelectorAll('#fabric-svg g.switch')].map((g) => Number(g.dataset.id))`)
	var want []int
	for _, s := range c.FlowCache.Topology(flowcache.TopologyLimit).Switches {
		want = append(want, int(s.ID))
	}
	if !slices.Equal(ids, want) || len(ids) != 16 || ids[0] != 1 || ids[15] != 16 {
		t.Errorf("fabric switches %v, topology %v, want 1 to 16", ids, want)
	}
	// Only the hottest links (20 of the demo's pairs) unless every one is asked for.
	if n := eval[int](t, b, `document.querySelectorAll('#fabric-svg path.link').length`); n != 20 {
		t.Errorf("fabric: %d links drawn, want the 20 hottest", n)
	}
	b.run(t, "click switch 3", chromedp.Click(chromedp.CSS(`#fabric-svg g.switch[data-id="3"]`)))
	b.waitJS(t, "switch 3's details", `(document.querySelector('#fabric-details h2') || {}).textContent === 'Switch 3 histograms'`)
	b.shot(t, "fabric")

	// The console opens on the overview (checked against the API below, once the traffic
	// has stopped).
	b.run(t, "open the console", chromedp.Navigate(base))
	b.waitJS(t, "the overview", `document.querySelector('#main').dataset.page === 'overview' && document.querySelectorAll('#ov-slow-table tbody tr').length === 5 && !!document.querySelector('#ov-links-table')`)

	// The overview's picture, with the traffic on, some history behind it, and no event of
	// the test's own yet.
	if os.Getenv("INTAKE_CONSOLE_SCREENSHOTS") != "" {
		time.Sleep(10 * time.Second)
		b.run(t, "open the overview", chromedp.Navigate(base+"#/overview?range=5m"))
		b.waitJS(t, "the overview's charts", `document.querySelectorAll('#ov-slow-table tbody tr').length === 5 && document.querySelectorAll('#ov-chart-flows polyline.series').length === 5`)
		b.shot(t, "overview")
	}

	// Events: one the test publishes appears live, through the filter, and goes with its kind.
	b.run(t, "open events", chromedp.Navigate(base+"#/events"))
	b.waitJS(t, "the event stream", `document.querySelector('#events-state').textContent === 'live'`)
	b.waitJS(t, "the demo's events", `document.querySelectorAll('#events-body tr').length > 0`)
	b.shot(t, "events")
	b.run(t, "filter", chromedp.SendKeys(chromedp.CSS("#events-filter"), "switch 4242"))
	b.waitJS(t, "the filter", `document.querySelectorAll('#events-body tr').length === 0`)
	c.Bus.Publish(&event.Event{Time: time.Now().UnixNano(), Kind: event.KindAbove, Scope: event.ScopeSwitch,
		Measurement: event.QueueOccupancy, Key: event.Key{Switch: 4242, Queue: 7}, Prev: 1, Value: 99999, Threshold: 500})
	b.waitJS(t, "the injected event", `document.querySelectorAll('#events-body tr').length === 1`)
	row := eval[[]string](t, b, `[...document.querySelectorAll('#events-body tr td')].slice(1).map((td) => td.textContent)`)
	if want := []string{"above", "queue_occupancy", "switch 4242 · queue_id 7", "1 → 99,999 (threshold 500)"}; !slices.Equal(row, want) {
		t.Errorf("injected event's row %q, want %q", row, want)
	}
	b.run(t, "hide above", chromedp.Click(chromedp.CSS(`input[data-kind="above"]`)))
	b.waitJS(t, "the kind filter", `document.querySelectorAll('#events-body tr').length === 0`)

	// The other pages load and show what they are for.
	for _, p := range []struct{ hash, ready string }{
		{"flows", `document.querySelectorAll('#flows-body tr a[href^="#/flow?"]').length > 0`},
		{"switch?id=5", `document.querySelectorAll('#switch-hists svg rect').length > 0 && document.querySelectorAll('#switch-hists .panel').length === 3`},
		{"health", `!!document.querySelector('#health-formats tr[data-format="tr2.0"]') && document.querySelector('#health-formats tr[data-format="tr2.0"] td:last-child').textContent !== '…'`},
		{"dta", `!!document.querySelector('tr[data-store="kw.dta"]')`},
		{"coverage", `!!document.querySelector('#coverage-chart polyline')`},
	} {
		b.run(t, "open "+p.hash, chromedp.Navigate(base+"#/"+p.hash))
		b.waitJS(t, p.hash, p.ready)
		name, _, _ := strings.Cut(p.hash, "?")
		if name == "switch" {
			// A histogram per metric the API lists, each under its name (GET
			// /api/v1/histograms says tx_utilization; the page once took it for the
			// end-to-end latency's).
			titles := eval[[]string](t, b, `[...document.querySelectorAll('#switch-hists .panel h2')].map((h) => h.textContent)`)
			if want := []string{"hop latency", "queue occupancy", "tx utilization"}; !slices.Equal(titles, want) {
				t.Errorf("switch 5's histograms %q, want %q", titles, want)
			}
		}
		if name == "health" {
			// Every drop counter of /api/v1/status, by component and reason, and the sinks.
			shown := eval[[]string](t, b, `[...document.querySelectorAll('#health-drops tbody td:first-child')].map((td) => td.textContent)`)
			raw, _ := json.Marshal(c.FullStatus().Drops)
			var drops map[string]any
			json.Unmarshal(raw, &drops)
			var want []string
			for comp, v := range drops {
				if m, ok := v.(map[string]any); ok {
					for reason := range m {
						want = append(want, comp+"."+reason)
					}
				}
			}
			slices.Sort(shown)
			slices.Sort(want)
			if len(want) < 20 || !slices.Equal(shown, want) {
				t.Errorf("drop counters shown %q, want %q", shown, want)
			}
			if eval[string](t, b, `document.querySelector('#health-sinks tr[data-sink="prometheus"] td').textContent`) != "prometheus" {
				t.Error("health: no prometheus sink row")
			}
		}
		if name == "dta" {
			// A Key-Write query by the address a user has: gen's keys are source addresses.
			b.run(t, "query kw", chromedp.SendKeys(chromedp.CSS("#dta-key"), "10.0.0.5"), chromedp.Click(chromedp.CSS(`#dta-form button[type="submit"]`)))
			b.waitJS(t, "the query's answer", `document.querySelector('#dta-result').textContent.includes('"status": "found"')`)
			if res := eval[string](t, b, `document.querySelector('#dta-result').textContent`); !strings.Contains(res, `"key": "0x0a000005"`) {
				t.Errorf("kw query: %s", res)
			}
		}
		b.shot(t, name)
	}

	// A flow's page shows the flow cache's values: with the traffic stopped, they hold still.
	stopTraffic()
	waitQuiet(t, c)
	top := c.FlowCache.Top("latency", 1)
	if len(top) != 1 {
		t.Fatal("no flow in the cache")
	}
	rec := top[0]
	j := flowcache.RecordJSON(&rec)
	q := fmt.Sprintf("src=%s&dst=%s&sport=%d&dport=%d&proto=%d", j.Src, j.Dst, j.Sport, j.Dport, j.Proto)
	b.run(t, "open the flow", chromedp.Navigate(base+"#/flow?"+q))
	b.waitJS(t, "its hops", fmt.Sprintf(`document.querySelectorAll('#flow-hops tr').length === %d`, len(rec.Hops)))
	type hopRow struct {
		Hop    string            `json:"hop"`
		Switch string            `json:"switch"`
		Cells  map[string]string `json:"cells"`
	}
	rows := eval[[]hopRow](t, b, `[...document.querySelectorAll('#flow-hops tr')].map((tr) => ({hop: tr.querySelector('td').textContent, switch: tr.dataset.switch,
		cells: Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [[...td.classList].find((c) => c.includes('-')) || '', td.textContent]))}))`)
	names := [record.NumMetrics]string{"hop_latency", "queue_occupancy", "tx_utilization"}
	for i, h := range rec.Hops {
		if i >= len(rows) {
			break
		}
		// Hop numbers count from the source, as the flow cache's hops are kept.
		if rows[i].Hop != strconv.Itoa(i+1) || rows[i].Switch != strconv.Itoa(int(h.NodeID)) {
			t.Errorf("row %d: hop %s, switch %s; want hop %d, switch %d", i+1, rows[i].Hop, rows[i].Switch, i+1, h.NodeID)
		}
		for m := range record.NumMetrics {
			f := fmtNum
			if m == record.HopLatency {
				f = fmtNs
			}
			if got, want := rows[i].Cells[names[m]+"-latest"], f(float64(h.Latest[m])); got != want {
				t.Errorf("hop %d %s latest: %q, want %q", i+1, names[m], got, want)
			}
			if got, want := rows[i].Cells[names[m]+"-mean"], f(h.Mean(m)); got != want {
				t.Errorf("hop %d %s mean: %q, want %q", i+1, names[m], got, want)
			}
		}
	}
	lat := eval[string](t, b, `document.querySelector('#flow-latency').textContent`)
	if want := fmtNs(float64(rec.LatLatest)) + " latest, " + fmtNs(rec.LatMean()) + " mean"; lat != want {
		t.Errorf("flow latency %q, want %q", lat, want)
	}
	// Its event history: the flow's events only (new_key at least), each row naming it.
	b.waitJS(t, "its events", `document.querySelectorAll('#flow-events tr[data-kind]').length > 0`)
	evKeys := eval[[]string](t, b, `[...document.querySelectorAll('#flow-events tr[data-kind] td:nth-child(4)')].map((td) => td.textContent)`)
	flowName := regexp.QuoteMeta(telemetry.FlowString(j.Src, j.Sport, j.Dst, j.Dport, j.Proto))
	for _, k := range evKeys {
		if !regexp.MustCompile("^" + flowName + "( · switch [0-9]+)?$").MatchString(k) {
			t.Errorf("flow page event of another key: %q", k)
		}
	}
	b.shot(t, "flow")

	checkNotation(t, b, base, j, len(rec.Hops))
	checkOverview(t, b, c, base)
	checkFilters(t, b, base)

	// A page reloaded keeps the token (asked once), and nothing went wrong on any page.
	b.run(t, "reload the fabric", chromedp.Navigate(base+"#/fabric"), chromedp.Reload())
	b.waitJS(t, "the fabric after a reload", `document.querySelectorAll('#fabric-svg g.switch').length === 16 && document.querySelector('#token-form').hidden`)
	// With the traffic stopped the paths hold still: every switch is in the column of the
	// hop it is found at most often on them.
	checkColumns(t, b, base, testToken)
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	if banner := eval[string](t, b, `document.querySelector('#error').hidden ? '' : document.querySelector('#error').textContent`); banner != "" {
		t.Errorf("error banner: %s", banner)
	}
}

// waitQuiet waits until the collector has processed everything sent (the flow cache's
// report count holds still).
func waitQuiet(t *testing.T, c *collector.Collector) {
	t.Helper()
	last := c.FlowCache.Stats().Reports
	for i := 0; i < 100; i++ {
		time.Sleep(100 * time.Millisecond)
		n := c.FlowCache.Stats().Reports
		if n == last {
			return
		}
		last = n
	}
	t.Fatal("the flow cache kept receiving after the generators stopped")
}

// TestConsoleFabric: with the emulated testbed's traffic (intake demo --fabric), the fabric
// page draws its 12 switches by hop position: each in the column of the hop it is found at
// most often on the paths, so the spines, the middle of every ToR-leaf-spine-leaf-ToR path,
// are in the third column. This collector has no token: the console asks for none.
func TestConsoleFabric(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a collector and a browser (-short)")
	}
	b := newBrowser(t)
	c := startCollector(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	live, err := fabric.StartLive(ctx, c.Receiver.ListenerAddr(0), c.Receiver.ListenerAddr(2), 400)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop := sync.OnceFunc(func() { cancel(); live.Wait() })
	t.Cleanup(stop)
	base := "http://" + c.API.Addr() + "/"

	b.run(t, "open the fabric", chromedp.Navigate(base+"#/fabric?metric=queue_occupancy"))
	b.waitJS(t, "12 switches", `document.querySelectorAll('#fabric-svg g.switch').length === 12`)
	if n := eval[string](t, b, `document.querySelector('#fabric-metric').value`); n != "queue_occupancy" {
		t.Errorf("colour by %q, want the metric of the address, queue_occupancy", n)
	}
	if os.Getenv("INTAKE_CONSOLE_SCREENSHOTS") != "" {
		time.Sleep(3 * time.Second) // more flows, for the picture
	}
	stop()
	waitQuiet(t, c)
	cols := checkColumns(t, b, base, "")
	spines := 0
	for _, s := range c.FlowCache.Topology(flowcache.TopologyLimit).Switches {
		if s.Depth == 2 {
			spines++
			if cols[int(s.ID)] != 2 {
				t.Errorf("spine %d (depth 2) in column %d, want 2 (hop 3)", s.ID, cols[int(s.ID)])
			}
		}
	}
	if spines == 0 {
		t.Error("no spine (depth 2) in the testbed's topology")
	}
	if os.Getenv("INTAKE_CONSOLE_SCREENSHOTS") != "" {
		b.run(t, "colour by hop latency", chromedp.Navigate(base+"#/fabric?metric=hop_latency&links=all"))
		b.waitJS(t, "12 switches", `document.querySelectorAll('#fabric-svg g.switch').length === 12`)
		b.run(t, "click a spine", chromedp.Click(chromedp.CSS(`#fabric-svg g.switch[data-id="9"]`)))
		b.waitJS(t, "its details", `(document.querySelector('#fabric-details h2') || {}).textContent === 'Switch 9 histograms'`)
		b.shot(t, "fabric-testbed")
	}
	if errs := b.errors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
