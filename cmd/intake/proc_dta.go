package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/dta"
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/ingest"
)

// The DTA translator as a processor, its counters and its HTTP endpoints (issue 7):
// /api/v1/dta/kw/{key}, /ki/{key}, /postcard/{key}, /list/{id}, /stats; with
// dta.int.event_list set, a consumer of the event bus appends the detector's events to that
// list.

func init() {
	serveProcessors = append(serveProcessors, newDTAProcessor)
}

func newDTAProcessor(env *procEnv) (ingest.Processor, error) {
	if !env.Cfg.DTA.Enabled {
		return nil, nil
	}
	t, err := dta.NewTranslator(env.Cfg.DTA)
	if err != nil {
		return nil, err
	}
	p := &dtaProc{Translator: t}
	if w := t.EventWriter(); w != nil && env.Bus != nil {
		p.events, p.consumer = w, env.Bus.Subscribe("dta", dtaEventRing)
		p.bus = env.Bus
	}
	if m := env.Metrics; m != nil {
		w := m.Counter("intake_dta_writes_total", "DTA reports and INT reports written to the DTA stores, by primitive", "primitive")
		for i, n := range dta.WrittenNames {
			w.Func(func() float64 { return float64(t.Written(i)) }, n)
		}
		b := m.Counter("intake_dta_bad_total", "DTA reports not written, by reason", "reason")
		for i, n := range dta.BadReasons {
			b.Func(func() float64 { return float64(t.Bad(i)) }, n)
		}
		e := m.Counter("intake_dta_postcard_emissions_total", "postcard chunks written, by cause (complete, early: cache collision, flushed: at stop)", "cause")
		e.Func(func() float64 { return float64(t.Cache.Complete.Load()) }, "complete")
		e.Func(func() float64 { return float64(t.Cache.Early.Load()) }, "early")
		e.Func(func() float64 { return float64(t.Cache.Flushed.Load()) }, "flushed")
		if p.consumer != nil {
			c := p.consumer
			m.Counter("intake_event_ring_overflow_total", "Events dropped because a bus consumer's ring was full, by consumer.", "consumer").
				Func(func() float64 { return float64(c.Overflow()) }, "dta")
		}
	}
	if env.API != nil {
		registerDTAAPI(env.API, t.St, t.Stats, env.Cfg.Decoder.DTA.KeyLen)
	}
	return p, nil
}

// dtaEventRing is the bus ring of the event list's consumer, events.
const dtaEventRing = 1 << 14

// dtaProc is the translator as ingest sees it, with the event bus consumer that appends
// detected events to dta.int.event_list (DTA Table 2) when that is set.
type dtaProc struct {
	*dta.Translator
	bus      *event.Bus
	consumer *event.Consumer
	events   *dta.EventWriter
	cancel   context.CancelFunc
	done     chan struct{}
}

func (p *dtaProc) Start(workers int) error {
	if err := p.Translator.Start(workers); err != nil {
		return err
	}
	if p.consumer != nil {
		ctx, cancel := context.WithCancel(context.Background())
		p.cancel, p.done = cancel, make(chan struct{})
		go p.appendEvents(ctx)
	}
	return nil
}

// appendEvents writes the bus's events to the event list until ctx ends, then what is left.
func (p *dtaProc) appendEvents(ctx context.Context) {
	defer close(p.done)
	buf := make([]event.Event, 256)
	drain := func() {
		for n := p.consumer.Poll(buf); n > 0; n = p.consumer.Poll(buf) {
			for i := range buf[:n] {
				p.events.Add(&buf[i])
			}
			p.events.Flush()
		}
	}
	for p.consumer.Wait(ctx) {
		drain()
	}
	drain()
}

// Stop ends the event consumer before the translator closes the stores.
func (p *dtaProc) Stop() error {
	if p.cancel != nil {
		p.bus.Unsubscribe(p.consumer)
		p.cancel()
		<-p.done
		p.cancel = nil
	}
	return p.Translator.Stop()
}

// registerDTAAPI serves the stores' queries; stats is nil for a read-only store.
func registerDTAAPI(srv *api.Server, st *dta.Stores, stats func() dta.Stats, keyLen int) {
	// keyed serves a query by key: the query parameters allowed, the key parsed, then the
	// answer's JSON; answer names a bad parameter (param, its value, what is allowed) instead.
	keyed := func(pattern string, params []string, answer func(q url.Values, k []byte, ks string) (a any, param, value, allowed string)) {
		srv.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !api.CheckParams(w, r, params...) {
				return
			}
			ks := r.PathValue("key")
			k, err := dta.ParseKey(ks, keyLen)
			if err != nil {
				api.BadParam(w, "key", ks, "decimal, 0x-hex or src,dst,sport,dport,proto ("+err.Error()+")")
				return
			}
			a, param, value, allowed := answer(r.URL.Query(), k, ks)
			if param != "" {
				api.BadParam(w, param, value, allowed)
				return
			}
			api.JSON(w, http.StatusOK, a)
		}))
	}
	keyed("GET /api/v1/dta/kw/{key}", []string{"t", "store"}, func(q url.Values, k []byte, ks string) (any, string, string, string) {
		store := q.Get("store")
		if store == "" {
			store = "kw"
		}
		if store != "kw" && store != "paths" {
			return nil, "store", store, "kw or paths"
		}
		t := 0
		if s := q.Get("t"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 || n > 8 {
				return nil, "t", s, "1 to 8"
			}
			t = n
		}
		a, err := st.QueryKW(store, k, ks, t)
		if err != nil {
			return nil, "key", ks, err.Error()
		}
		return a, "", "", ""
	})
	keyed("GET /api/v1/dta/ki/{key}", nil, func(_ url.Values, k []byte, ks string) (any, string, string, string) {
		a, err := st.QueryKI(k, ks)
		if err != nil {
			return nil, "key", ks, err.Error()
		}
		return a, "", "", ""
	})
	keyed("GET /api/v1/dta/postcard/{key}", nil, func(_ url.Values, k []byte, ks string) (any, string, string, string) {
		a, err := st.QueryPostcard(k, ks)
		if err != nil {
			return nil, "key", ks, err.Error()
		}
		return a, "", "", ""
	})
	srv.Handle("GET /api/v1/dta/list/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r, "cursor", "limit") {
			return
		}
		ids := r.PathValue("id")
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
		limit := 1000
		if s := r.URL.Query().Get("limit"); s != "" {
			if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 100000 {
				api.BadParam(w, "limit", s, "1 to 100000")
				return
			}
		}
		a, err := st.PollList(id, cursor, limit)
		if errors.Is(err, dta.ErrCursor) {
			api.BadParam(w, "cursor", strconv.FormatUint(cursor, 10), "at most the list's head ("+strconv.FormatUint(st.AP.Head(id), 10)+")")
			return
		}
		api.JSON(w, http.StatusOK, a)
	}))
	srv.Handle("GET /api/v1/dta/stats", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !api.CheckParams(w, r) {
			return
		}
		if stats != nil {
			api.JSON(w, http.StatusOK, stats())
			return
		}
		api.JSON(w, http.StatusOK, st.Stats())
	}))
}
