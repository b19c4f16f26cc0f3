package ingest

import (
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/confkey"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/wire"
)

// Listener defaults and limits (docs/config.md, "listeners").
const (
	DefaultBatch       = 64               // recvmmsg vector length
	DefaultRcvBuf      = 8 << 20          // SO_RCVBUF requested, bytes
	DefaultMaxDatagram = 9216             // receive buffer per datagram: a 9000-byte jumbo frame fits
	DefaultCoalesce    = time.Millisecond // a worker's wait after draining its socket
	MaxCoalesce        = 100 * time.Millisecond
	MaxSockets         = 1024
	MaxBatch           = 1024 // UIO_MAXIOV
	MinRcvBuf          = 4096
	MaxRcvBuf          = 1 << 30
	MinMaxDatagram     = 512
	MaxMaxDatagram     = 65535
	groBufSize         = 65535 // the receive buffer per datagram with GRO on: the largest super-datagram
	MaxAllow           = 256   // prefixes per listener: each costs a compare per datagram
)

// Config is the receive path's configuration: the listeners, each with its effective
// decoder configuration (the aggregate configuration file fills Listener.Decoder).
type Config struct {
	Listeners []Listener
	// Sinks are the interfaces this host is the INT sink of (sink.go): each becomes a
	// listener of mode sink with one worker.
	Sinks []Sink
	// Feeds name the sources of reports decoded elsewhere (feed.go): each becomes a listener
	// of mode feed with one worker, which its owner drives.
	Feeds []string
	// Decoder is used by listeners whose Decoder is nil.
	Decoder wire.Config
}

// DecoderFor returns the effective decoder configuration of listener i.
func (c *Config) DecoderFor(i int) wire.Config {
	if d := c.Listeners[i].Decoder; d != nil {
		return *d
	}
	return c.Decoder
}

// Workers is the number of receive workers the configuration asks for: the processors'
// per-worker state is sized by it.
func (c *Config) Workers() int {
	n := 0
	for _, l := range c.Listeners {
		n += l.Sockets
	}
	return n + len(c.Sinks) + len(c.Feeds)
}

// Listener modes: how a listener's datagrams reach its workers.
const (
	ModeSocket = "socket" // SO_REUSEPORT UDP sockets read with recvmmsg (the default)
	ModeXDP    = "xdp"    // an XDP program on Interface redirects them into AF_XDP sockets
)

// Listener is one UDP port receiving one input format.
type Listener struct {
	// Name labels the listener's counters; default "<format>:<port>".
	Name string `yaml:"name"`
	// Format is what the datagrams hold: one of wire.InputNames().
	Format string `yaml:"format"`
	// Address to bind. Empty (the default): every address, IPv4 and IPv6, through dual-stack
	// IPv6 sockets (IPv4 only where the host has no IPv6). An IPv4 address binds IPv4 only;
	// an IPv6 address, IPv6 only.
	Address string `yaml:"address"`
	// Port to bind; 0 lets the kernel pick a free port, shared by all the listener's sockets.
	Port int `yaml:"port"`
	// Mode is how datagrams reach the workers: "socket" (the default) or "xdp": an XDP
	// program attached to Interface redirects the frames of UDP datagrams to Port into one
	// AF_XDP socket per receive queue (docs/xdp.md); everything else passes to the kernel.
	Mode string `yaml:"mode"`
	// Interface is the network interface an xdp listener attaches its program to (required
	// with mode xdp, unused otherwise).
	Interface string `yaml:"interface,omitempty"`
	// Sockets is the number of SO_REUSEPORT sockets, each read by its own worker; 0: one per
	// core (runtime.NumCPU). With mode xdp: the number of receive queues given an AF_XDP
	// socket, queues 0 to sockets-1; 0: every receive queue of the interface.
	Sockets int `yaml:"sockets"`
	// Batch is the recvmmsg vector length: datagrams read per system call.
	Batch int `yaml:"batch"`
	// RcvBuf is the socket receive buffer requested, bytes (SO_RCVBUFFORCE when permitted,
	// else SO_RCVBUF, which net.core.rmem_max caps). The granted size is in the status.
	RcvBuf int `yaml:"rcvbuf"`
	// MaxDatagram is the buffer size per datagram; a longer datagram is counted as a drop
	// (reason oversize), never decoded truncated.
	MaxDatagram int `yaml:"max_datagram"`
	// Coalesce is how long a worker waits after a read that found its socket nearly drained
	// (fewer than half of batch datagrams) before reading again, so that what arrives
	// meanwhile is read in one batch: fewer wakeups per datagram at moderate rates, for at
	// most about this much added latency (the receive buffer holds far more). Unset: 1ms;
	// 0 turns it off. Go rounds sleeps below a millisecond up to about one.
	Coalesce *time.Duration `yaml:"coalesce"`
	// Spread is how a socket listener's datagrams are spread over its sockets (docs/ingest.md,
	// "Spreading one exporter"): "flow" (the default), by each datagram's owner key (a
	// report's flow, a DTA key, an INT-label switch) through a reuseport program, so that one
	// exporter uses every worker and the reports of one flow stay in order on one; "source",
	// by the kernel's hash of the sender's address and port, so that one exporter lands on
	// one socket. Unused with mode xdp and with one socket. Unset: flow, or source when gro
	// is set true.
	Spread string `yaml:"spread"`
	// GRO turns on UDP generic receive offload (UDP_GRO) where the kernel has it: the kernel
	// may hand the worker a run of datagrams of one exporter as one super-datagram, which
	// the worker splits by the segment size the kernel reports. Each receive buffer is then
	// 64 KiB, the largest super-datagram. Unset: on, except with spread flow and more than
	// one socket, where a super-datagram would take a run of many flows to one worker.
	GRO *bool `yaml:"gro"`
	// Allow lists the source prefixes (or addresses) whose datagrams the listener accepts;
	// a datagram from any other source is dropped and counted (ingest drop reason
	// not_allowed) before it is decoded. Empty: every source (logged at start).
	Allow []string `yaml:"allow,omitempty"`
	// Decoder overrides keys of the top-level decoder for this listener only (e.g. quirks of
	// the switches that send to it). After the configuration is loaded it holds the full
	// effective configuration.
	Decoder *wire.Config `yaml:"decoder,omitempty"`
}

// FillDefaults replaces zero settings with their defaults.
func (l *Listener) FillDefaults() {
	if l.Mode == "" {
		l.Mode = ModeSocket
	}
	if l.Sockets == 0 {
		l.Sockets = runtime.NumCPU()
		if l.Mode == ModeXDP && l.Interface != "" {
			l.Sockets = min(xdp.RxQueues(l.Interface), xdp.MaxQueues)
		}
	}
	if l.Batch == 0 {
		l.Batch = DefaultBatch
	}
	if l.RcvBuf == 0 {
		l.RcvBuf = DefaultRcvBuf
	}
	if l.MaxDatagram == 0 {
		l.MaxDatagram = DefaultMaxDatagram
	}
	if l.Coalesce == nil {
		d := DefaultCoalesce
		l.Coalesce = &d
	}
	if l.Spread == "" {
		// A configuration that asks for GRO keeps what it asked for: GRO, and so the source's
		// hash.
		l.Spread = SpreadFlow
		if l.GRO != nil && *l.GRO && l.Mode != ModeXDP && l.Sockets > 1 {
			l.Spread = SpreadSource
		}
	}
	if l.GRO == nil {
		on := !l.spreads()
		l.GRO = &on
	}
	if l.Name == "" {
		l.Name = l.Format + ":" + strconv.Itoa(l.Port)
	}
}

// spreads reports whether the listener places datagrams by owner key: spread flow, socket
// mode, more than one socket.
func (l *Listener) spreads() bool {
	return l.Spread == SpreadFlow && l.Mode != ModeXDP && l.Sockets > 1
}

// FillDefaults fills every listener's defaults.
func (c *Config) FillDefaults() {
	for i := range c.Listeners {
		c.Listeners[i].FillDefaults()
	}
	for i := range c.Sinks {
		c.Sinks[i].FillDefaults()
	}
}

// errAt is a configuration error at key (confkey.Error, which config re-exports as
// config.Error).
func errAt(key string, value any, format string, args ...any) error {
	return confkey.At(key, value, format, args...)
}

// Validate reports the first invalid listener setting, naming it by its key
// (listeners[i].port).
func (c *Config) Validate() error {
	if len(c.Listeners) == 0 && len(c.Sinks) == 0 && len(c.Feeds) == 0 {
		return &confkey.Error{Key: "listeners", Msg: "at least one listener (or sink) is required"}
	}
	type bind struct {
		addr string
		port int
	}
	seen := map[bind]int{}
	names := map[string]string{} // name -> the key that has it
	ifaces := map[string]int{}
	for i := range c.Listeners {
		if err := c.Listeners[i].Validate(fmt.Sprintf("listeners[%d]", i)); err != nil {
			return err
		}
		l := &c.Listeners[i]
		// Two listeners on one port would share it through SO_REUSEPORT and the kernel would
		// split the datagrams between two formats: refuse.
		if l.Port != 0 {
			b := bind{l.Address, l.Port}
			if j, dup := seen[b]; dup {
				return errAt(fmt.Sprintf("listeners[%d].port", i), l.Port, "already used by listeners[%d]", j)
			}
			seen[b] = i
		}
		if l.Mode == ModeXDP {
			// One XDP program per interface: a second listener would replace the first's.
			if j, dup := ifaces[l.Interface]; dup {
				return errAt(fmt.Sprintf("listeners[%d].interface", i), strconv.Quote(l.Interface), "already used by listeners[%d] (one xdp listener per interface)", j)
			}
			ifaces[l.Interface] = i
		}
		if k, dup := names[l.Name]; dup {
			return errAt(fmt.Sprintf("listeners[%d].name", i), l.Name, "already used by %s", k)
		}
		names[l.Name] = fmt.Sprintf("listeners[%d]", i)
	}
	for i := range c.Sinks {
		key := fmt.Sprintf("sinks[%d]", i)
		s := &c.Sinks[i]
		if err := s.Validate(key); err != nil {
			return err
		}
		if j, dup := ifaces[s.Interface]; dup {
			return errAt(key+".interface", strconv.Quote(s.Interface), "already used by listeners[%d] (one XDP program per interface)", j)
		}
		for j := range c.Sinks[:i] {
			if c.Sinks[j].Interface == s.Interface {
				return errAt(key+".interface", strconv.Quote(s.Interface), "already used by sinks[%d] (one XDP program per interface)", j)
			}
		}
		if k, dup := names[s.Name]; dup {
			return errAt(key+".name", s.Name, "already used by %s", k)
		}
		names[s.Name] = key
	}
	return nil
}

// Validate checks one listener; key is its path in the configuration ("listeners[0]").
func (l *Listener) Validate(key string) error {
	if _, ok := wire.ParseInput(l.Format); !ok {
		return errAt(key+".format", strconv.Quote(l.Format), "must be one of %s", strings.Join(wire.InputNames(), ", "))
	}
	if l.Address != "" {
		if _, err := netip.ParseAddr(strings.Trim(l.Address, "[]")); err != nil {
			return errAt(key+".address", strconv.Quote(l.Address), "must be an IPv4 or IPv6 address, or empty for all addresses of both families")
		}
	}
	if l.Port < 0 || l.Port > 65535 {
		return errAt(key+".port", l.Port, "must be 0-65535 (0: a free port the kernel picks)")
	}
	switch l.Mode {
	case ModeSocket, "":
	case ModeXDP:
		if l.Interface == "" {
			return errAt(key+".interface", `""`, "is required with mode xdp: the network interface to attach the XDP program to")
		}
		if l.Port == 0 {
			return errAt(key+".port", l.Port, "must be 1-65535 with mode xdp: the XDP program matches a fixed port")
		}
		if l.Sockets > xdp.MaxQueues {
			return errAt(key+".sockets", l.Sockets, "must be 1-%d with mode xdp (receive queues; 0: every queue of the interface)", xdp.MaxQueues)
		}
	default:
		return errAt(key+".mode", strconv.Quote(l.Mode), "must be socket or xdp")
	}
	switch l.Spread {
	case SpreadFlow, SpreadSource, "":
	default:
		return errAt(key+".spread", strconv.Quote(l.Spread), "must be flow or source")
	}
	if l.spreads() && l.GRO != nil && *l.GRO {
		return errAt(key+".gro", true, "needs spread: source: with spread flow (the default) GRO would hand one worker a run of an exporter's datagrams, whatever flows they carry")
	}
	if l.Sockets < 1 || l.Sockets > MaxSockets {
		return errAt(key+".sockets", l.Sockets, "must be 1-%d (0: one per core)", MaxSockets)
	}
	if l.Batch < 1 || l.Batch > MaxBatch {
		return errAt(key+".batch", l.Batch, "must be 1-%d", MaxBatch)
	}
	if l.RcvBuf < MinRcvBuf || l.RcvBuf > MaxRcvBuf {
		return errAt(key+".rcvbuf", l.RcvBuf, "must be %d-%d bytes (0: %d)", MinRcvBuf, MaxRcvBuf, DefaultRcvBuf)
	}
	if l.Coalesce != nil && (*l.Coalesce < 0 || *l.Coalesce > MaxCoalesce) {
		return errAt(key+".coalesce", *l.Coalesce, "must be 0 (off) to %s (unset: %s)", MaxCoalesce, DefaultCoalesce)
	}
	if l.MaxDatagram < MinMaxDatagram || l.MaxDatagram > MaxMaxDatagram {
		return errAt(key+".max_datagram", l.MaxDatagram, "must be %d-%d bytes (0: %d)", MinMaxDatagram, MaxMaxDatagram, DefaultMaxDatagram)
	}
	if len(l.Allow) > MaxAllow {
		return errAt(key+".allow", len(l.Allow), "at most %d prefixes", MaxAllow)
	}
	for i, a := range l.Allow {
		if _, err := ParseAllow([]string{a}); err != nil {
			return errAt(fmt.Sprintf("%s.allow[%d]", key, i), strconv.Quote(a), "must be an IPv4 or IPv6 prefix (10.0.0.0/8, 2001:db8::/32) or address")
		}
	}
	if l.Decoder != nil {
		if err := l.Decoder.Validate(); err != nil {
			return fmt.Errorf("%s.decoder.%w", key, err)
		}
	}
	return nil
}
