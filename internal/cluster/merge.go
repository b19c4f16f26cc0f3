package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"
)

// The merges of the aggregate queries. Each member's answer is over the keys it owns, and
// keys are disjoint across members, so a merge is exact when it applies the single
// collector's rule to the union: the top n of the members' top n, the newest limit of the
// members' newest limit, sums of counts. JSON numbers are kept as they were written
// (json.Number), so no 64-bit counter passes through a float.

func decode(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// first returns the first answer present, decoded (its fields not merged are kept).
func first(parts [][]byte) (map[string]any, error) {
	for _, p := range parts {
		if p != nil {
			return decode(p)
		}
	}
	return nil, fmt.Errorf("no answer")
}

// eachPart calls f with each member's answer that came, decoded.
func eachPart(parts [][]byte, f func(map[string]any)) error {
	for _, p := range parts {
		if p == nil {
			continue
		}
		m, err := decode(p)
		if err != nil {
			return err
		}
		f(m)
	}
	return nil
}

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

func num(v any) json.Number {
	n, _ := v.(json.Number)
	return n
}

func u64(v any) uint64 {
	n, _ := strconv.ParseUint(string(num(v)), 10, 64)
	return n
}

func i64(v any) int64 {
	n, _ := strconv.ParseInt(string(num(v)), 10, 64)
	return n
}

// item is one entry of a member's list, with the member it came from.
type item struct {
	m      map[string]any
	member int
	pos    int // position in the member's list
}

// items collects the entries of list key of every answer, tagged with their member.
func items(parts [][]byte, key string) ([]item, error) {
	var out []item
	for i, p := range parts {
		if p == nil {
			continue
		}
		m, err := decode(p)
		if err != nil {
			return nil, err
		}
		for j, e := range list(m, key) {
			em, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: not an object", key, j)
			}
			out = append(out, item{em, i, j})
		}
	}
	return out, nil
}

// mergeTop merges GET /api/v1/flowcache/top: the flow cache's order (the score, packets or
// mean latency, highest first; then the most recently seen), then member order.
func (rt *Router) mergeTop(_ *http.Request, v *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	n := int(i64(out["n"]))
	byLatency := out["by"] == "latency"
	fl, err := items(parts, "flows")
	if err != nil {
		return nil, err
	}
	type scored struct {
		item
		s    float64
		last time.Time
	}
	ss := make([]scored, len(fl))
	for i, f := range fl {
		s := scored{item: f}
		if byLatency {
			s.s = -1 // the cache's score of a flow without latency samples
			if lat, ok := f.m["latency"].(map[string]any); ok && lat["mean"] != nil {
				s.s, _ = num(lat["mean"]).Float64()
			}
		} else {
			s.s = float64(u64(f.m["packets"]))
		}
		ls, _ := f.m["last_seen"].(string)
		s.last, _ = time.Parse(time.RFC3339Nano, ls)
		ss[i] = s
	}
	sort.SliceStable(ss, func(i, j int) bool {
		a, b := &ss[i], &ss[j]
		if a.s != b.s {
			return a.s > b.s
		}
		if !a.last.Equal(b.last) {
			return a.last.After(b.last)
		}
		if a.member != b.member {
			return a.member < b.member
		}
		return a.pos < b.pos
	})
	flows := []any{}
	for i := 0; i < len(ss) && i < n; i++ {
		ss[i].m["member"] = v.Names[ss[i].member]
		flows = append(flows, ss[i].m)
	}
	out["flows"] = flows
	return out, nil
}

// mergeEvents merges GET /api/v1/events: the newest limit events over all members, oldest
// first by time_ns (then member and sequence number). Each event gains "member": its seq
// numbers the member's own log.
func (rt *Router) mergeEvents(r *http.Request, v *View, parts [][]byte) (any, error) {
	limit := rt.deps.EventsLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("limit %q", s) // the local answer refused it first
		}
		limit = n
	}
	ev, err := items(parts, "events")
	if err != nil {
		return nil, err
	}
	sort.SliceStable(ev, func(i, j int) bool {
		a, b := &ev[i], &ev[j]
		if ta, tb := i64(a.m["time_ns"]), i64(b.m["time_ns"]); ta != tb {
			return ta < tb
		}
		if a.member != b.member {
			return a.member < b.member
		}
		return a.pos < b.pos
	})
	if len(ev) > limit {
		ev = ev[len(ev)-limit:]
	}
	out := make([]any, len(ev))
	for i := range ev {
		ev[i].m["member"] = v.Names[ev[i].member]
		out[i] = ev[i].m
	}
	return map[string]any{"events": out}, nil
}

// mergeCoverage merges GET /api/v1/label/coverage: per window (by index), the ports updated
// and the active ports summed, the coverage their ratio; ports_known summed; mean the mean
// over the windows. Exact when each (switch, port) is known to one member.
func mergeCoverage(_ *http.Request, _ *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	type win struct{ start, upd, act int64 }
	wins := map[int64]*win{}
	known := int64(0)
	if err := eachPart(parts, func(m map[string]any) {
		known += i64(m["ports_known"])
		for _, e := range list(m, "windows") {
			wm, _ := e.(map[string]any)
			idx := i64(wm["index"])
			w := wins[idx]
			if w == nil {
				w = &win{start: i64(wm["start_ns"])}
				wins[idx] = w
			}
			w.upd += i64(wm["updated"])
			w.act += i64(wm["active"])
		}
	}); err != nil {
		return nil, err
	}
	idxs := make([]int64, 0, len(wins))
	for i := range wins {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	ws := []any{}
	sum := 0.0
	for _, i := range idxs {
		w := wins[i]
		if w.act == 0 {
			continue
		}
		cov := float64(w.upd) / float64(w.act)
		sum += cov
		ws = append(ws, map[string]any{"index": i, "start_ns": w.start, "updated": w.upd, "active": w.act, "coverage": cov})
	}
	out["ports_known"] = known
	out["windows"] = ws
	out["mean"] = 0.0
	if len(ws) > 0 {
		out["mean"] = sum / float64(len(ws))
	}
	return out, nil
}

// mergeHistList merges GET /api/v1/histograms: the union of the switches, ascending.
func mergeHistList(_ *http.Request, _ *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	set := map[uint64]bool{}
	if err := eachPart(parts, func(m map[string]any) {
		for _, s := range list(m, "switches") {
			set[u64(s)] = true
		}
	}); err != nil {
		return nil, err
	}
	sw := make([]uint64, 0, len(set))
	for s := range set {
		sw = append(sw, s)
	}
	sort.Slice(sw, func(i, j int) bool { return sw[i] < sw[j] })
	out["switches"] = sw
	return out, nil
}

// mergeHist merges GET /api/v1/histograms/{switch}/{metric}: a switch's hops are in the
// reports of every member's flows, so its histogram is the sum of the members' (the same
// bins everywhere: the bins are configuration). Bins are matched by their low edge.
func mergeHist(_ *http.Request, _ *View, parts [][]byte) (any, error) {
	out, err := first(parts)
	if err != nil {
		return nil, err
	}
	type bin struct {
		hi    any
		count uint64
	}
	bins := map[uint64]*bin{}
	total := uint64(0)
	if err := eachPart(parts, func(m map[string]any) {
		total += u64(m["total"])
		for _, e := range list(m, "counts") {
			bm, _ := e.(map[string]any)
			lo := u64(bm["lo"])
			b := bins[lo]
			if b == nil {
				b = &bin{hi: bm["hi"]}
				bins[lo] = b
			}
			b.count += u64(bm["count"])
		}
	}); err != nil {
		return nil, err
	}
	los := make([]uint64, 0, len(bins))
	for lo := range bins {
		los = append(los, lo)
	}
	sort.Slice(los, func(i, j int) bool { return los[i] < los[j] })
	counts := make([]any, len(los))
	for i, lo := range los {
		b := map[string]any{"lo": lo, "count": bins[lo].count}
		if bins[lo].hi != nil {
			b["hi"] = bins[lo].hi
		}
		counts[i] = b
	}
	out["total"] = total
	out["counts"] = counts
	return out, nil
}
