package cluster

import (
	"math"
	"net/http"
	"sort"
	"strconv"
)

// The merges of the console's views: GET /api/v1/history and GET /api/v1/topology. Each
// member's figures are over the flows it owns (disjoint across members), so sums add up,
// maxima are the largest, minima the smallest, and a mean is the members' means weighted
// by what each is a mean over.

// f64 is a JSON number as a float (0 when absent or not finite).
func f64(v any) float64 {
	f, err := num(v).Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return f
}

// wmean is a weighted mean's running sums.
type wmean struct{ sum, w float64 }

func (m *wmean) add(mean, w float64) { m.sum += mean * w; m.w += w }

// mean is the weighted mean; 0 without weight, or when sums of members' nonsense
// overflowed (a JSON answer cannot hold an infinity).
func (m *wmean) mean() float64 {
	x := m.sum / m.w
	if m.w == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return x
}

// mergeHistory merges GET /api/v1/history: switches by switch_id and flows by 5-tuple
// (their text), points by t_ns (the members sample at the same multiples of the period):
// reports, drops, flows and packets summed, maxima the largest, a switch's hop latency mean
// weighted by its flows, a flow's latency mean by its packets. Switches by id, flows by
// their packets over the range (most first, then text), as one collector answers.
func mergeHistory(r *http.Request, _ *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	type swPoint struct {
		lat                                     wmean
		latMax, queue, tx, reports, drops, flws uint64
	}
	type flPoint struct {
		lat             wmean
		latest, packets uint64 // latest: one member owns a flow, so there is one
	}
	type flow struct {
		key    any
		text   string
		total  uint64
		points map[int64]*flPoint
	}
	sws := map[uint64]map[int64]*swPoint{}
	fls := map[string]*flow{}
	if err := eachPart(parts, func(m map[string]any) {
		for _, e := range list(m, "switches") {
			sm, _ := e.(map[string]any)
			id := u64(sm["switch_id"])
			if sws[id] == nil {
				sws[id] = map[int64]*swPoint{}
			}
			for _, pe := range list(sm, "points") {
				pm, _ := pe.(map[string]any)
				t := i64(pm["t_ns"])
				p := sws[id][t]
				if p == nil {
					p = &swPoint{}
					sws[id][t] = p
				}
				n := u64(pm["flows"])
				p.lat.add(f64(pm["hop_latency_mean_ns"]), float64(n))
				p.flws += n
				p.latMax = max(p.latMax, u64(pm["hop_latency_max_ns"]))
				p.queue = max(p.queue, u64(pm["queue_occupancy_max"]))
				p.tx = max(p.tx, u64(pm["tx_utilization_max"]))
				p.reports += u64(pm["reports"])
				p.drops += u64(pm["drops"])
			}
		}
		for _, e := range list(m, "flows") {
			fm, _ := e.(map[string]any)
			text, _ := fm["text"].(string)
			f := fls[text]
			if f == nil {
				f = &flow{key: fm["flow"], text: text, points: map[int64]*flPoint{}}
				fls[text] = f
			}
			for _, pe := range list(fm, "points") {
				pm, _ := pe.(map[string]any)
				t := i64(pm["t_ns"])
				p := f.points[t]
				if p == nil {
					p = &flPoint{}
					f.points[t] = p
				}
				n := u64(pm["packets"])
				p.lat.add(f64(pm["latency_mean_ns"]), float64(n))
				p.packets += n
				f.total += n
				p.latest = max(p.latest, u64(pm["latency_latest_ns"]))
			}
		}
	}); err != nil {
		return nil, err
	}
	switches := []any{}
	for _, id := range sortedKeys(sws) {
		pts := []any{}
		for _, t := range sortedKeys(sws[id]) {
			p := sws[id][t]
			pts = append(pts, map[string]any{"t_ns": t, "hop_latency_mean_ns": p.lat.mean(), "hop_latency_max_ns": p.latMax,
				"queue_occupancy_max": p.queue, "tx_utilization_max": p.tx, "reports": p.reports, "drops": p.drops, "flows": p.flws})
		}
		switches = append(switches, map[string]any{"switch_id": id, "points": pts})
	}
	fl := make([]*flow, 0, len(fls))
	for _, f := range fls {
		fl = append(fl, f)
	}
	sort.Slice(fl, func(i, j int) bool {
		if fl[i].total != fl[j].total {
			return fl[i].total > fl[j].total
		}
		return fl[i].text < fl[j].text
	})
	if n, err := strconv.Atoi(r.URL.Query().Get("flows")); err == nil && n > 0 && len(fl) > n {
		fl = fl[:n] // each member kept its n: the merge keeps the n with the most reports
	}
	flows := []any{}
	for _, f := range fl {
		pts := []any{}
		for _, t := range sortedKeys(f.points) {
			p := f.points[t]
			pts = append(pts, map[string]any{"t_ns": t, "latency_mean_ns": p.lat.mean(), "latency_latest_ns": p.latest, "packets": p.packets})
		}
		flows = append(flows, map[string]any{"flow": f.key, "text": f.text, "points": pts})
	}
	out["switches"], out["flows"] = switches, flows
	return out, nil
}

// sortedKeys returns m's keys, ascending.
func sortedKeys[K uint64 | int64, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// topoStats are the running sums of a switch's or link's "latest": per metric, the mean
// weighted by n (the flows that carried it) and the largest.
type topoStats map[string]*struct {
	mean wmean
	max  uint64
}

func (s topoStats) add(latest any) {
	lm, _ := latest.(map[string]any)
	for metric, v := range lm {
		st, _ := v.(map[string]any)
		x := s[metric]
		if x == nil {
			x = &struct {
				mean wmean
				max  uint64
			}{}
			s[metric] = x
		}
		x.mean.add(f64(st["mean"]), f64(st["n"]))
		x.max = max(x.max, u64(st["max"]))
	}
}

func (s topoStats) json() map[string]any {
	out := map[string]any{}
	for metric, x := range s {
		out[metric] = map[string]any{"mean": x.mean.mean(), "max": x.max, "n": uint64(x.mean.w)}
	}
	return out
}

// mergeTopology merges GET /api/v1/topology: the union of the members' switches (by id)
// and links (by from and to), their flows, first and last summed, a switch's depth the
// smallest, each metric's mean weighted by the flows that carried it (n) and its max the
// largest; flows summed; truncated when a member's was or the union has more than limit
// switches or links (the lowest ids are kept).
func mergeTopology(r *http.Request, _ *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	limit := 4096 // flowcache.TopologyLimit; the local answer refused a bad limit first
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		limit = n
	}
	type sw struct {
		flows, depth, first, last int64
		latest                    topoStats
	}
	type link struct {
		flows  int64
		latest topoStats
	}
	sws := map[uint64]*sw{}
	links := map[[2]uint64]*link{}
	flows, truncated := int64(0), false
	if err := eachPart(parts, func(m map[string]any) {
		flows += i64(m["flows"])
		truncated = truncated || m["truncated"] == true
		for _, e := range list(m, "switches") {
			sm, _ := e.(map[string]any)
			id := u64(sm["id"])
			s := sws[id]
			if s == nil {
				s = &sw{depth: i64(sm["depth"]), latest: topoStats{}}
				sws[id] = s
			}
			s.flows += i64(sm["flows"])
			s.first += i64(sm["first"])
			s.last += i64(sm["last"])
			s.depth = min(s.depth, i64(sm["depth"]))
			s.latest.add(sm["latest"])
		}
		for _, e := range list(m, "links") {
			lm, _ := e.(map[string]any)
			k := [2]uint64{u64(lm["from"]), u64(lm["to"])}
			l := links[k]
			if l == nil {
				l = &link{latest: topoStats{}}
				links[k] = l
			}
			l.flows += i64(lm["flows"])
			l.latest.add(lm["latest"])
		}
	}); err != nil {
		return nil, err
	}
	ids := sortedKeys(sws)
	if len(ids) > limit {
		ids, truncated = ids[:limit], true
	}
	switches := make([]any, 0, len(ids))
	for _, id := range ids {
		s := sws[id]
		switches = append(switches, map[string]any{"id": id, "flows": s.flows, "depth": s.depth, "latest": s.latest.json(),
			"first": s.first, "last": s.last})
	}
	lks := make([][2]uint64, 0, len(links))
	for k := range links {
		lks = append(lks, k)
	}
	sort.Slice(lks, func(i, j int) bool { return lks[i][0] < lks[j][0] || (lks[i][0] == lks[j][0] && lks[i][1] < lks[j][1]) })
	if len(lks) > limit {
		lks, truncated = lks[:limit], true
	}
	ls := make([]any, 0, len(lks))
	for _, k := range lks {
		ls = append(ls, map[string]any{"from": k[0], "to": k[1], "flows": links[k].flows, "latest": links[k].latest.json()})
	}
	out["flows"], out["switches"], out["links"] = flows, switches, ls
	delete(out, "truncated")
	if truncated {
		out["truncated"] = true
	}
	return out, nil
}
