package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// HeaderForwarded marks a request one member sent another (its value: the sender's name).
// A member answers such a request from its own state and never forwards it again, so a
// request crosses at most one hop and members that disagree on ownership cannot loop.
const HeaderForwarded = "X-Intake-Forwarded"

// HeaderMember names the member whose state answered a key lookup.
const HeaderMember = "X-Intake-Member"

// StatusPath is the cluster's status: every member's /api/v1/status.
const StatusPath = "/api/v1/cluster/status"

// Deps are what the router needs from the rest of the collector.
type Deps struct {
	// DTAKey parses a DTA key as /api/v1/dta/{kw,ki,postcard}/{key} takes it (dta.ParseKey
	// with the configured key length). Nil: DTA lookups are answered locally.
	DTAKey func(string) ([]byte, error)
	// EventsLimit is GET /api/v1/events' default limit, which a merge applies too.
	EventsLimit int
	// Logger (slog.Default() when nil).
	Logger *slog.Logger
}

// Router answers any query on any member: it is the API server's Route (api.Server.Route).
type Router struct {
	members Membership
	client  *http.Client
	deps    Deps
	fanouts map[string]merger
}

// Membership is who owns what: the static list of cluster.members, or a consumer group's
// assignment (package group), which changes while the collector runs.
type Membership interface {
	// View returns the members as they are now; a request is routed over one View.
	View() *View
}

// View is the members at one moment.
type View struct {
	// Names, APIs (as configured or advertised) and Bases (base URLs) of the members, in
	// the order Owner indexes.
	Names, APIs, Bases []string
	// Reports are each member's report addresses (cluster.members[].reports), for status.
	Reports [][]string
	// Self is this collector's index in Names, -1 when it is not a member (an inlet).
	Self int
	// Owner is the index of the member that owns key, -1 when none does now (a consumer
	// group between assignments), with why.
	Owner func(key []byte) (int, string)
	// Hash says how keys map to members (GET /api/v1/cluster/status).
	Hash string
}

// self is the View's own name ("" for a collector that is not a member).
func (v *View) self() string {
	if v.Self < 0 {
		return ""
	}
	return v.Names[v.Self]
}

// static is cluster.members: a View that never changes.
type static struct{ v View }

func (s *static) View() *View { return &s.v }

// staticView is the View of cfg (validated, with members).
func staticView(cfg *Config) *View {
	v := &View{Names: cfg.Names(), Self: cfg.SelfIndex(), Hash: HashName}
	for _, m := range cfg.Members {
		b, _ := BaseURL(m.API) // validated
		v.APIs, v.Bases = append(v.APIs, m.API), append(v.Bases, b)
		v.Reports = append(v.Reports, append([]string{}, m.Reports...))
	}
	n := len(v.Names)
	v.Owner = func(key []byte) (int, string) { return partition.Owner(key, n), "" }
	return v
}

// merger merges the members' answers (their JSON bodies, in the View's order; nil where a
// member is missing) into one.
type merger func(r *http.Request, v *View, parts [][]byte) (any, error)

// NewRouter builds the router of cfg (validated, with members).
func NewRouter(cfg Config, deps Deps) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("cluster: no members")
	}
	return NewMembershipRouter(&static{v: *staticView(&cfg)}, cfg.Timeout, deps), nil
}

// NewMembershipRouter builds a router over members, each request to another member bounded
// by timeout.
func NewMembershipRouter(members Membership, timeout time.Duration, deps Deps) *Router {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.EventsLimit <= 0 {
		deps.EventsLimit = 1000
	}
	rt := &Router{members: members, deps: deps}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	rt.client = &http.Client{Timeout: timeout, Transport: tr,
		// A member answers; it never redirects. A redirect would leave the cluster's hosts.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rt.fanouts = map[string]merger{
		"/api/v1/flowcache/top":  rt.mergeTop,
		"/api/v1/events":         rt.mergeEvents,
		"/api/v1/label/coverage": mergeCoverage,
		"/api/v1/histograms":     mergeHistList,
		"/api/v1/history":        mergeHistory,
		"/api/v1/topology":       mergeTopology,
	}
	return rt
}

// Wrap returns the handler that routes a request before local (the member's own endpoints)
// answers it: api.Server.Route(rt.Wrap).
func (rt *Router) Wrap(local http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.Header.Get(HeaderForwarded) != "" {
			local.ServeHTTP(w, r)
			return
		}
		p := r.URL.Path
		v := rt.members.View()
		if p == StatusPath {
			rt.handleStatus(w, r, v, local)
			return
		}
		if m, ok := rt.fanouts[p]; ok {
			rt.fanOut(w, r, v, local, m, false)
			return
		}
		if strings.HasPrefix(p, "/api/v1/histograms/") {
			rt.fanOut(w, r, v, local, mergeHist, true)
			return
		}
		var b partition.KeyBuf
		if key := rt.lookupKey(&b, r); key != nil {
			o, why := v.Owner(key)
			if o < 0 {
				api.JSON(w, http.StatusServiceUnavailable, map[string]any{
					"error": "no member owns this key now: " + why, "partial": true, "missing": []string{}})
				return
			}
			if o != v.Self {
				rt.forward(w, r, v, o)
				return
			}
		}
		if v.Self >= 0 {
			w.Header().Set(HeaderMember, v.self())
		}
		local.ServeHTTP(w, r)
	})
}

// lookupKey is the key a request looks up, or nil when it looks up none (or one that does
// not parse: the local handler answers 400 for that).
func (rt *Router) lookupKey(b *partition.KeyBuf, r *http.Request) []byte {
	p := r.URL.Path
	switch {
	case p == "/api/v1/flow" || p == "/api/v1/flowcache/flow":
		k, ok := flowParams(r)
		if !ok {
			return nil
		}
		return partition.FlowKey(b, &k)
	case strings.HasPrefix(p, "/api/v1/dta/list/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(p, "/api/v1/dta/list/"), 10, 32)
		if err != nil {
			return nil
		}
		return partition.IDKey(b, uint32(id))
	}
	for _, pre := range []string{"/api/v1/dta/kw/", "/api/v1/dta/ki/", "/api/v1/dta/postcard/"} {
		if s, ok := strings.CutPrefix(p, pre); ok && rt.deps.DTAKey != nil && !strings.Contains(s, "/") {
			k, err := rt.deps.DTAKey(s)
			if err != nil || len(k) > len(b) {
				return nil
			}
			return append(b[:0], k...)
		}
	}
	return nil
}

// flowParams reads a flow query's key as api.FlowParams does, without answering.
func flowParams(r *http.Request) (telemetry.FlowKey, bool) {
	k, err := api.ParseFlowQuery(r.URL.Query())
	return k, err == nil
}

// get sends r's path and query to member i of v, marked forwarded, with r's credentials.
func (rt *Router) get(ctx context.Context, r *http.Request, v *View, i int) (*http.Response, error) {
	u := v.Bases[i] + r.URL.Path
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	from := v.self()
	if from == "" {
		from = "-" // not a member: the header's presence is what stops a second hop
	}
	req.Header.Set(HeaderForwarded, from)
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	return rt.client.Do(req)
}

// forward answers r with the owner's answer, status and body as they are.
func (rt *Router) forward(w http.ResponseWriter, r *http.Request, v *View, owner int) {
	name := v.Names[owner]
	resp, err := rt.get(r.Context(), r, v, owner)
	if err != nil {
		rt.deps.Logger.Warn("member down", "member", name, "err", err)
		api.JSON(w, http.StatusServiceUnavailable, map[string]any{
			"error":   fmt.Sprintf("member %s, which owns this key, is down: %v", name, unwrap(err)),
			"owner":   name,
			"partial": true,
			"missing": []string{name},
		})
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.Header().Set(HeaderMember, name)
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// unwrap drops the url.Error's method and URL, which the message says otherwise.
func unwrap(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// maxPart bounds one member's answer in a fan-out.
const maxPart = 64 << 20

// answer is one member's part of a fan-out.
type answer struct {
	code int
	body []byte
	err  error
}

// gather asks every member of v (itself through local) and returns their answers in order.
func (rt *Router) gather(r *http.Request, v *View, local http.Handler) []answer {
	out := make([]answer, len(v.Names))
	var wg sync.WaitGroup
	for i := range v.Names {
		if i == v.Self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := rt.get(r.Context(), r, v, i)
			if err != nil {
				out[i].err = unwrap(err)
				return
			}
			defer resp.Body.Close()
			out[i].code = resp.StatusCode
			out[i].body, out[i].err = io.ReadAll(io.LimitReader(resp.Body, maxPart))
		}()
	}
	if v.Self >= 0 {
		rec := httptest.NewRecorder()
		local.ServeHTTP(rec, r)
		out[v.Self] = answer{code: rec.Code, body: rec.Body.Bytes()}
	}
	wg.Wait()
	return out
}

// fanOut answers r with the merge of every member's answer. The local answer decides a bad
// request (400 and the like: every member would say the same). A member that cannot be
// reached, or answers other than 200, is missing: the answer is marked "partial": true
// with the names in "missing". With notFoundEmpty, a 404 is an answer with nothing in it
// (a switch one member has not seen), and 404 only when every member says so.
func (rt *Router) fanOut(w http.ResponseWriter, r *http.Request, v *View, local http.Handler, m merger, notFoundEmpty bool) {
	parts := rt.gather(r, v, local)
	self := answer{code: http.StatusOK}
	if v.Self >= 0 {
		self = parts[v.Self]
	}
	if self.code != http.StatusOK && !(notFoundEmpty && self.code == http.StatusNotFound) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(self.code)
		w.Write(self.body)
		return
	}
	bodies := make([][]byte, len(parts))
	missing := []string{}
	found := 0
	for i, p := range parts {
		switch {
		case p.err == nil && p.code == http.StatusOK:
			bodies[i] = p.body
			found++
		case p.err == nil && notFoundEmpty && p.code == http.StatusNotFound:
		default:
			missing = append(missing, v.Names[i])
			why := p.err
			if why == nil {
				why = fmt.Errorf("status %d: %s", p.code, bytes.TrimSpace(p.body))
			}
			rt.deps.Logger.Warn("member missing from a merged answer", "member", v.Names[i], "path", r.URL.Path, "err", why)
		}
	}
	if found == 0 && len(missing) == 0 { // every member: not found
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(self.code)
		w.Write(self.body)
		return
	}
	merged, err := m(r, v, bodies)
	if err != nil {
		api.Error(w, http.StatusBadGateway, "merging the members' answers: "+err.Error())
		return
	}
	obj, ok := merged.(map[string]any)
	if !ok {
		api.Error(w, http.StatusInternalServerError, "merge: not an object")
		return
	}
	obj["partial"] = len(missing) > 0
	obj["missing"] = missing
	api.JSON(w, http.StatusOK, obj)
}

// MemberStatus is one member in GET /api/v1/cluster/status.
type MemberStatus struct {
	Name    string   `json:"name"`
	API     string   `json:"api"`
	Reports []string `json:"reports"`
	Self    bool     `json:"self"`
	Up      bool     `json:"up"`
	Error   string   `json:"error,omitempty"`
	// Status is the member's GET /api/v1/status, as it answered.
	Status json.RawMessage `json:"status,omitempty"`
	// RTTMs is how long the member took to answer, milliseconds.
	RTTMs float64 `json:"rtt_ms"`
}

// StatusJSON is GET /api/v1/cluster/status.
type StatusJSON struct {
	Self    string         `json:"self"`
	Hash    string         `json:"hash"`
	Members []MemberStatus `json:"members"`
	Partial bool           `json:"partial"`
	Missing []string       `json:"missing"`
}

// HashName says which hash the cluster partitions by (docs/scale-out.md).
const HashName = "crc32c mod members"

func (rt *Router) handleStatus(w http.ResponseWriter, r *http.Request, v *View, local http.Handler) {
	if !api.CheckParams(w, r) {
		return
	}
	st := StatusJSON{Self: v.self(), Hash: v.Hash, Missing: []string{}}
	st.Members = make([]MemberStatus, len(v.Names))
	var wg sync.WaitGroup
	for i, name := range v.Names {
		ms := &st.Members[i]
		*ms = MemberStatus{Name: name, API: v.APIs[i], Reports: []string{}, Self: i == v.Self}
		if i < len(v.Reports) {
			ms.Reports = v.Reports[i]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr := r.Clone(r.Context())
			sr.URL.Path, sr.URL.RawQuery = "/api/v1/status", ""
			t0 := time.Now()
			var code int
			var body []byte
			var err error
			if i == v.Self {
				rec := httptest.NewRecorder()
				local.ServeHTTP(rec, sr)
				code, body = rec.Code, rec.Body.Bytes()
			} else {
				var resp *http.Response
				if resp, err = rt.get(r.Context(), sr, v, i); err == nil {
					code = resp.StatusCode
					body, err = io.ReadAll(io.LimitReader(resp.Body, maxPart))
					resp.Body.Close()
				}
			}
			ms.RTTMs = float64(time.Since(t0).Microseconds()) / 1000
			switch {
			case err != nil:
				ms.Error = unwrap(err).Error()
			case code != http.StatusOK:
				ms.Error = fmt.Sprintf("status %d: %s", code, bytes.TrimSpace(body))
			default:
				ms.Up, ms.Status = true, json.RawMessage(body)
			}
		}()
	}
	wg.Wait()
	for _, m := range st.Members {
		if !m.Up {
			st.Missing = append(st.Missing, m.Name)
		}
	}
	st.Partial = len(st.Missing) > 0
	api.JSON(w, http.StatusOK, st)
}
