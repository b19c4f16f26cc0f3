// Package api owns intake's HTTP server and the helpers every component's handlers share:
// /healthz, the Prometheus exposition at /metrics, and the JSON API under /api/v1 (docs/api.md
// lists the endpoints). It is INTCollector's normal path (§III): nothing here runs per
// packet; handlers read counters and state that the receive path publishes.
//
// api depends on nothing above the floor (metrics, telemetry): the receive path and each
// processor and sink register their own endpoints on a Server (Registrar), as named methods,
// before Start. JSON keys are snake_case; a request with a bad parameter gets 400 and a JSON
// body {"error": "..."} that names the parameter, the value and what is allowed (BadParam).
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/intake-int/intake/metrics"
)

// Registrar is implemented by components that serve endpoints of their own. The collector
// calls RegisterAPI once, before the server starts.
type Registrar interface {
	RegisterAPI(s *Server)
}

// Server is the HTTP server. New is inert; Start listens; Stop shuts down.
type Server struct {
	addr string
	reg  *metrics.Registry
	log  *slog.Logger
	mux  *http.ServeMux
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// New builds a server for addr (host:port; port 0 picks a free one) over the registry
// (nil: /metrics answers 503). It serves /healthz and /metrics; components add the rest.
func New(addr string, reg *metrics.Registry) *Server {
	s := &Server{addr: addr, reg: reg, log: slog.Default(), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		Error(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s
}

// SetLogger sets where the server logs (default slog.Default()).
func (s *Server) SetLogger(l *slog.Logger) { s.log = l }

// Handle registers a handler for pattern (http.ServeMux syntax, e.g. "GET /api/v1/flow").
// Call it before Start. Paths must be under /api/v1/.
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

// HandleFunc is Handle for a handler function (usually a component's method).
func (s *Server) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	s.Handle(pattern, http.HandlerFunc(h))
}

// Handler returns the server's handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.mux }

// Name is the server's component name.
func (s *Server) Name() string { return "http" }

// Start listens and serves in the background.
func (s *Server) Start(context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("http.address %s: %w", s.addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
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

// Stop shuts the server down, waiting up to the context's deadline for requests in flight;
// past it, the connections are closed.
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
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
	s.reg.Handler().ServeHTTP(w, r)
}
