package dta

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/metrics"
)

// API serves the stores' queries (docs/dta.md, "API"; the routes in docs/api.md): over a
// running Translator's stores, or over stores another process writes, opened read-only.
type API struct {
	stores func() *Stores // nil before the translator's Start
	stats  func() any     // the translator's counters, or the stores' alone
	keyLen int
}

// NewAPI serves read-only stores st (`intake query --store` answers the same questions
// without HTTP); keyLen is the DTA key length the decoder is configured with.
func NewAPI(st *Stores, keyLen int) *API {
	return &API{stores: func() *Stores { return st }, stats: func() any { return st.Stats() }, keyLen: keyLen}
}

// RegisterAPI adds the translator's endpoints (see API).
func (t *Translator) RegisterAPI(s *api.Server) {
	a := &API{stores: func() *Stores { return t.St }, stats: func() any { return t.Stats() }, keyLen: t.keyLen}
	a.RegisterAPI(s)
}

// RegisterAPI adds /api/v1/dta/kw/{key}, /ki/{key}, /postcard/{key}, /list/{id} and /stats.
func (a *API) RegisterAPI(s *api.Server) {
	s.HandleFunc("GET /api/v1/dta/kw/{key}", a.guarded(a.handleKW, false))
	s.HandleFunc("GET /api/v1/dta/ki/{key}", a.guarded(a.handleKI, false))
	s.HandleFunc("GET /api/v1/dta/postcard/{key}", a.guarded(a.handlePostcard, false))
	s.HandleFunc("GET /api/v1/dta/list/{id}", a.guarded(a.handleList, false))
	s.HandleFunc("GET /api/v1/dta/stats", a.guarded(a.handleStats, true))
}

// guarded is h with the stores' fault guard (fault.go): a memory fault while h reads a
// mapping answers 503 with the fault, as does any query once the stores are offline
// (stats, offline too, still answers: what the stores were and why they are offline).
func (a *API) guarded(h http.HandlerFunc, offline bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := a.stores()
		if st == nil {
			h(w, r) // open answers
			return
		}
		err := st.Offline()
		if err == nil || offline {
			err = func() (err error) {
				defer st.guard(st.catchFaults(), "query", &err)
				h(w, r)
				return nil
			}()
		}
		if err != nil {
			api.Error(w, http.StatusServiceUnavailable, err.Error())
		}
	}
}

// open returns the stores, answering 503 when they are not open.
func (a *API) open(w http.ResponseWriter) *Stores {
	st := a.stores()
	if st == nil {
		api.Error(w, http.StatusServiceUnavailable, "the DTA stores are not open (collector stopped)")
	}
	return st
}

// key reads the {key} path value, answering 400 when it does not parse.
func (a *API) key(w http.ResponseWriter, r *http.Request) (k []byte, ks string, ok bool) {
	ks = r.PathValue("key")
	k, err := ParseKey(ks, a.keyLen)
	if err != nil {
		api.BadParam(w, "key", ks, err.Error())
		return nil, ks, false
	}
	return k, ks, true
}

func (a *API) handleKW(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "t", "store") {
		return
	}
	k, ks, ok := a.key(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	store := q.Get("store")
	if store == "" {
		store = "kw"
	}
	if store != "kw" && store != "paths" {
		api.BadParam(w, "store", store, "kw or paths")
		return
	}
	t := 0
	if s := q.Get("t"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 8 {
			api.BadParam(w, "t", s, "1 to 8")
			return
		}
		t = n
	}
	st := a.open(w)
	if st == nil {
		return
	}
	ans, err := st.QueryKW(store, k, ks, t)
	a.answer(w, ks, ans, err)
}

func (a *API) handleKI(w http.ResponseWriter, r *http.Request) {
	keyed(a, w, r, (*Stores).QueryKI)
}

func (a *API) handlePostcard(w http.ResponseWriter, r *http.Request) {
	keyed(a, w, r, (*Stores).QueryPostcard)
}

// keyed serves a query by key alone (no parameters).
func keyed[T any](a *API, w http.ResponseWriter, r *http.Request, query func(st *Stores, k []byte, ks string) (T, error)) {
	if !api.CheckParams(w, r) {
		return
	}
	k, ks, ok := a.key(w, r)
	if !ok {
		return
	}
	if st := a.open(w); st != nil {
		ans, err := query(st, k, ks)
		a.answer(w, ks, ans, err)
	}
}

// answer writes a keyed query's answer, or a 400: that the store is not in the data
// directory, or naming the key when the query refused it.
func (a *API) answer(w http.ResponseWriter, ks string, ans any, err error) {
	switch {
	case errors.Is(err, ErrNoStore):
		api.Error(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, errKeyLen):
		api.BadParam(w, "key", ks, "a 4-byte key: the store has the compat layout")
	case err != nil:
		api.BadParam(w, "key", ks, err.Error())
	default:
		api.JSON(w, http.StatusOK, ans)
	}
}

func (a *API) handleList(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r, "cursor", "limit") {
		return
	}
	st := a.open(w)
	if st == nil {
		return
	}
	ids := r.PathValue("id")
	if st.AP == nil { // a read-only directory without append.dta
		api.BadParam(w, "id", ids, "a list id of the append store (there is none)")
		return
	}
	id, err := strconv.Atoi(ids)
	if err != nil || id < 0 || id >= st.AP.Lists() {
		api.BadParam(w, "id", ids, "a list id from 0 to "+strconv.Itoa(st.AP.Lists()-1))
		return
	}
	var cursor uint64
	if s := r.URL.Query().Get("cursor"); s != "" {
		if cursor, err = strconv.ParseUint(s, 10, 64); err != nil {
			api.BadParam(w, "cursor", s, "a non-negative integer (next_cursor of the previous poll)")
			return
		}
	}
	limit, ok := api.IntParam(w, r, "limit", 1000, 1, 100000, "1 to 100000")
	if !ok {
		return
	}
	ans, err := st.PollList(id, cursor, limit)
	if errors.Is(err, ErrCursor) {
		api.BadParam(w, "cursor", strconv.FormatUint(cursor, 10), "at most the list's head ("+strconv.FormatUint(st.AP.Head(id), 10)+")")
		return
	}
	api.JSON(w, http.StatusOK, ans)
}

func (a *API) handleStats(w http.ResponseWriter, r *http.Request) {
	if !api.CheckParams(w, r) {
		return
	}
	if st := a.open(w); st != nil {
		api.JSON(w, http.StatusOK, a.stats())
	}
}

// registerMetrics puts the translator's counters on reg.
func (t *Translator) registerMetrics(m *metrics.Registry) {
	w := m.Counter("intake_dta_writes_total", "DTA reports and INT reports written to the DTA stores, by primitive", "primitive")
	for i, n := range WrittenNames {
		w.Func(func() float64 { return float64(t.Written(i)) }, n)
	}
	b := m.Counter("intake_dta_bad_total", "DTA reports not written, by reason", "reason")
	for i, n := range BadReasons {
		b.Func(func() float64 { return float64(t.Bad(i)) }, n)
	}
	e := m.Counter("intake_dta_postcard_emissions_total", "postcard chunks written, by cause (complete, early: cache collision, flushed: at stop)", "cause")
	cache := func(f func(c *PostcardCache) uint64) func() float64 {
		return func() float64 {
			if c := t.Cache; c != nil {
				return float64(f(c))
			}
			return 0
		}
	}
	e.Func(cache(func(c *PostcardCache) uint64 { return c.Complete.Load() }), "complete")
	e.Func(cache(func(c *PostcardCache) uint64 { return c.Early.Load() }), "early")
	e.Func(cache(func(c *PostcardCache) uint64 { return c.Flushed.Load() }), "flushed")
	m.Counter("intake_dta_immediate_total", "DTA reports written that carried the immediate flag (each raised an immediate event)").
		Func(func() float64 { return float64(t.Immediate.Load()) })
	m.Counter("intake_dta_faults_total", "memory faults on the DTA stores' mappings (a truncated file, a full filesystem): the first takes the stores offline").
		Func(func() float64 {
			if st := t.St; st != nil {
				return float64(st.Faults())
			}
			return 0
		})
}
