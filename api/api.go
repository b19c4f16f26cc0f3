// Package api owns intake's HTTP server: /healthz, the Prometheus text at /metrics (the
// metrics registry), and the JSON API under /api/v1 (DESIGN.md, "Interfaces users see").
// It is INTCollector's normal path (§III): nothing here runs per packet; handlers read
// counters and processor state that the receive path publishes.
//
// The server starts with /api/v1/status (ingest.Collector.Status). Processors add their own
// endpoints with Handle before Start, e.g. the flow cache's /api/v1/flows. JSON keys are
// snake_case; a request with a bad parameter gets 400 and a JSON body {"error": "..."} that
// names the parameter, the value and what is allowed (BadParam).
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/metrics"
)

// Server is the HTTP server. New is inert; Start listens; Stop shuts down.
type Server struct {
	addr string
	reg  *metrics.Registry
	coll *ingest.Collector
	mux  *http.ServeMux
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// New builds a server for addr (host:port; port 0 picks a free one) over the registry and
// the collector (either may be nil: its endpoints then answer 503).
func New(addr string, reg *metrics.Registry, coll *ingest.Collector) *Server {
	s := &Server{addr: addr, reg: reg, coll: coll, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("GET /api/v1/status", s.status)
	s.mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		Error(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// SetCollector sets the collector /api/v1/status reports on, for callers that must build the
// server (so that processors can register endpoints) before the collector. Call it before
// Start.
func (s *Server) SetCollector(c *ingest.Collector) { s.coll = c }

// Handle registers a handler for pattern (http.ServeMux syntax, e.g. "GET /api/v1/flows"),
// for processors that serve their own state. Call it before Start. Paths must be under
// /api/v1/.
func (s *Server) Handle(pattern string, h http.Handler) {
	path := pattern
	if _, p, ok := strings.Cut(pattern, " "); ok {
		path = p
	}
	if !strings.HasPrefix(path, "/api/v1/") {
		panic("api: handler path " + path + " is not under /api/v1/")
	}
	s.mux.Handle(pattern, h)
}

// Handler returns the server's handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens and serves in the background.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("http.address %s: %w", s.addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan error, 1)
	go func() { s.done <- s.srv.Serve(ln) }()
	return nil
}

// Addr returns the address the server listens on, once started.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Stop shuts the server down, waiting up to the context's deadline for requests in flight.
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	s.srv, s.ln = nil, nil
	return err
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.reg == nil {
		Error(w, http.StatusServiceUnavailable, "no metrics registry")
		return
	}
	w.Header().Set("Content-Type", metrics.ContentType)
	s.reg.WriteText(w)
}

// status serves the collector's Status. ?listener=NAME narrows the listeners shown.
func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if s.coll == nil {
		Error(w, http.StatusServiceUnavailable, "no collector")
		return
	}
	if !CheckParams(w, r, "listener") {
		return
	}
	st := s.coll.Status()
	if name := r.URL.Query().Get("listener"); name != "" {
		var names []string
		var keep []ingest.ListenerStatus
		for _, l := range st.Listeners {
			names = append(names, l.Name)
			if l.Name == name {
				keep = append(keep, l)
			}
		}
		if keep == nil {
			BadParam(w, "listener", name, "one of "+strings.Join(names, ", "))
			return
		}
		st.Listeners = keep
	}
	JSON(w, http.StatusOK, st)
}

// JSON writes v as an indented JSON response.
func JSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	Param string `json:"param,omitempty"`
	Value string `json:"value,omitempty"`
}

// Error writes an error response.
func Error(w http.ResponseWriter, code int, msg string) {
	JSON(w, code, ErrorBody{Error: msg})
}

// BadParam writes a 400 naming the parameter, the value and what is allowed.
func BadParam(w http.ResponseWriter, param, value, allowed string) {
	JSON(w, http.StatusBadRequest, ErrorBody{
		Error: fmt.Sprintf("parameter %s: %q: must be %s", param, value, allowed),
		Param: param, Value: value,
	})
}

// CheckParams answers 400 and returns false when the request has a query parameter not in
// allowed, so that a misspelt filter is an error rather than silently ignored.
func CheckParams(w http.ResponseWriter, r *http.Request, allowed ...string) bool {
	for k, vs := range r.URL.Query() {
		ok := false
		for _, a := range allowed {
			ok = ok || a == k
		}
		if !ok {
			v := ""
			if len(vs) > 0 {
				v = vs[0]
			}
			msg := "none"
			if len(allowed) > 0 {
				msg = strings.Join(allowed, ", ")
			}
			JSON(w, http.StatusBadRequest, ErrorBody{
				Error: fmt.Sprintf("unknown parameter %s (allowed: %s)", k, msg), Param: k, Value: v,
			})
			return false
		}
	}
	return true
}
