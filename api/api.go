// Package api owns intake's HTTP server and the helpers every component's handlers share:
// /healthz, the Prometheus exposition at /metrics, and the JSON API under /api/v1 (docs/api.md
// lists the endpoints). It is INTCollector's normal path (§III): nothing here runs per
// packet; handlers read counters and state that the receive path publishes.
//
// api depends on nothing above the floor (metrics, telemetry): the receive path and each
// processor and sink register their own endpoints on a Server (Registrar), as named methods,
// before Start. JSON keys are snake_case; a request with a bad parameter gets 400 and a JSON
// body {"error": "..."} that names the parameter, the value and what is allowed (BadParam).
//
// Every request passes the Server's guards first (guard.go, docs/security.md): the Host
// header must name this server (DNS rebinding), the bearer token must be there when one is
// configured, and a body is capped in size. Before that, connections are capped, in all and
// per source, with timeouts (conns.go): a flood of connections cannot stop /healthz or the
// API from answering. The server may serve TLS. Beside the API it
// serves static pages at every other path (HandlePages: the web console, package console),
// which need no token.
package api

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/metrics"
)

// Registrar is implemented by components that serve endpoints of their own. The collector
// calls RegisterAPI once, before the server starts.
type Registrar interface {
	RegisterAPI(s *Server)
}

// Server is the HTTP server. New is inert; Start listens; Stop shuts down.
type Server struct {
	cfg   Config
	addr  string
	reg   *metrics.Registry
	log   *slog.Logger
	mux   *http.ServeMux
	route func(local http.Handler) http.Handler // nil: the mux answers every request
	guard guard
	conns *connLimit
	srv   *http.Server
	ln    net.Listener
	done  chan error
	// cancel ends the context every request's derives from: long-lived handlers (the
	// event stream) return at Stop instead of holding it up.
	cancel context.CancelFunc
}

// New builds a server for addr (host:port; port 0 picks a free one) over the registry
// (nil: /metrics answers 503), with no token and no TLS. It serves /healthz and /metrics;
// components add the rest.
func New(addr string, reg *metrics.Registry) *Server {
	cfg := DefaultConfig()
	cfg.Address = addr
	s, _ := NewFromConfig(cfg, Deps{Metrics: reg}) // no file to read: cannot fail
	return s
}

// Deps are what a Server uses beside its configuration; every field is optional.
type Deps struct {
	// Metrics is the registry /metrics serves and the server's own series go on (nil:
	// /metrics answers 503).
	Metrics *metrics.Registry
	// Logger is where the server logs (nil: slog.Default()).
	Logger *slog.Logger
}

// NewFromConfig builds a server from the http section (validated: it reads the token file
// again, so that an error here is one that appeared since).
func NewFromConfig(cfg Config, deps Deps) (*Server, error) {
	reg, log := deps.Metrics, deps.Logger
	if log == nil {
		log = slog.Default()
	}
	tok, err := cfg.BearerToken()
	if err != nil {
		return nil, fmt.Errorf("http.token_file: %w", err)
	}
	def := DefaultConfig() // a Config built by hand (tests, embedding) gets the defaults
	for _, f := range []struct{ v, d *time.Duration }{{&cfg.HeaderTimeout, &def.HeaderTimeout},
		{&cfg.IdleTimeout, &def.IdleTimeout}} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = def.MaxConnections
	}
	if cfg.MaxConnectionsPerSource <= 0 {
		cfg.MaxConnectionsPerSource = min(def.MaxConnectionsPerSource, cfg.MaxConnections)
	}
	s := &Server{cfg: cfg, addr: cfg.Address, reg: reg, log: log, mux: http.NewServeMux()}
	s.guard.init(tok, cfg.TokenReads, cfg.AllowedHosts)
	s.guard.register(reg)
	s.conns = newConnLimit(cfg.MaxConnections, cfg.MaxConnectionsPerSource, s.log)
	s.conns.register(reg)
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		Error(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return s, nil
}

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

// HandlePages serves h at every path that neither the API (/api/v1/), /metrics nor /healthz
// owns: the web console's static files (package console). Pages pass the Host check like
// everything else but need no bearer token: they hold no data, and what they show they
// fetch from the API, sending the token the user gave them. Call it before Start.
func (s *Server) HandlePages(h http.Handler) {
	// "/" and not "GET /": the API's catch-all for /api/v1/ takes every method, and a
	// pattern with a method may not be more general in its path than one without.
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			Error(w, http.StatusMethodNotAllowed, "the console's pages are read with GET")
			return
		}
		h.ServeHTTP(w, r)
	})
	s.guard.pages = true
}

// HandleFunc is Handle for a handler function (usually a component's method).
func (s *Server) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	s.Handle(pattern, http.HandlerFunc(h))
}

// Route puts fn's handler between the guards and the endpoints: a cluster member forwards
// a request to the member that owns its key, or fans it out, and hands the rest to local
// (the endpoints registered here). Call it before Start.
func (s *Server) Route(fn func(local http.Handler) http.Handler) { s.route = fn }

// root is what the guards pass a request on to.
func (s *Server) root() http.Handler {
	if s.route != nil {
		return s.route(s.mux)
	}
	return s.mux
}

// Handler returns the server's handler, guards included, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.guard.wrap(s.root()) }

// Guarded reports whether requests need a token (for the startup lines).
func (s *Server) Guarded() bool { return s.guard.token != "" }

// Refused returns the requests refused by the guards, by reason (host, token, body).
func (s *Server) Refused() map[string]uint64 { return s.guard.Refused() }

// TLS reports whether the server serves HTTPS.
func (s *Server) TLS() bool { return s.cfg.TLS.Cert != "" }

// Name is the server's component name.
func (s *Server) Name() string { return "http" }

// Start listens and serves in the background.
func (s *Server) Start(context.Context) error {
	var tcfg *tls.Config
	if s.cfg.TLS.Cert != "" {
		cert, err := s.cfg.TLS.keyPair()
		if err != nil {
			return fmt.Errorf("http.tls: %w", err)
		}
		tcfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen(listenNetwork(s.addr), s.addr)
	if err != nil {
		return fmt.Errorf("http.address %s: %w", s.addr, err)
	}
	s.guard.setBound(ln.Addr())
	s.ln = ln
	ln = limitListener{Listener: ln, l: s.conns}
	if tcfg != nil {
		ln = tls.NewListener(ln, tcfg)
	}
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.srv = &http.Server{Handler: s.guard.wrap(s.root()), ReadHeaderTimeout: s.cfg.HeaderTimeout,
		ReadTimeout: s.cfg.ReadTimeout, WriteTimeout: s.cfg.WriteTimeout,
		IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: 64 << 10,
		ConnState:   s.conns.state,
		BaseContext: func(net.Listener) context.Context { return base },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
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

// listenNetwork is the network Start listens on for addr, as for the UDP listeners
// (docs/config.md): 0.0.0.0 is every IPv4 address and no IPv6 one (what an operator
// writing it expects; Go's net.Listen would take IPv6 too), :: every IPv6 address and no
// IPv4 one, and an empty host every address of both.
func listenNetwork(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsUnspecified() {
		if ip.Is4() {
			return "tcp4"
		}
		return "tcp6"
	}
	return "tcp"
}

// Listening names what the server listens on, once started, for the startup line and the
// status: the address, and for a wildcard which addresses it stands for:
// "0.0.0.0:8040 (all IPv4 addresses)", "[::]:8040 (all IPv6 addresses)" or, for an empty
// host, "[::]:8040 (all IPv4 and IPv6 addresses)".
func (s *Server) Listening() string {
	if s.ln == nil {
		return ""
	}
	a := s.ln.Addr()
	ta, ok := a.(*net.TCPAddr)
	switch {
	case !ok || !ta.IP.IsUnspecified():
		return a.String()
	case ta.IP.To4() != nil:
		return a.String() + " (all IPv4 addresses)"
	case listenNetwork(s.addr) == "tcp6":
		return a.String() + " (all IPv6 addresses)"
	}
	return a.String() + " (all IPv4 and IPv6 addresses)"
}

// ConnStats returns the connection counters.
func (s *Server) ConnStats() ConnStats {
	st := s.conns.stats()
	st.Listening = s.Listening()
	return st
}

// stopGrace bounds how long Stop waits for requests in flight: every handler answers from
// memory, and the streams end as soon as their context does.
const stopGrace = 500 * time.Millisecond

// Stop shuts the server down: it ends the requests' context (the event streams return),
// waits for requests in flight up to stopGrace (or the context's deadline, if sooner), and
// then closes the connections that remain (a client that does not read).
func (s *Server) Stop(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	s.cancel()
	gctx, cancel := context.WithTimeout(ctx, stopGrace)
	defer cancel()
	if s.srv.Shutdown(gctx) != nil {
		s.srv.Close()
	}
	var err error
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
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
	s.reg.Handler(s.log).ServeHTTP(w, r)
}
