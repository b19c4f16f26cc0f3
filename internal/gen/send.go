package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// SendConfig says where and how fast a Sender sends.
type SendConfig struct {
	// To is the collector, HOST:PORT (IPv4 or IPv6).
	To string
	// Sockets is how many sockets send in parallel, each from its own goroutine and source
	// port, so that a collector's SO_REUSEPORT sockets share the load. Default 1.
	Sockets int
	// Rate is the total datagrams per second; 0 sends as fast as the sockets go.
	Rate float64
	// Count stops a run after this many datagrams (0: no limit).
	Count uint64
	// Duration stops a run after this long (0: no limit).
	Duration time.Duration
	// Vector is the datagrams per sendmmsg call. Default 64.
	Vector int
	// SndBuf is the socket send buffer requested, bytes. Default 4 MiB.
	SndBuf int
	// GSO, above 1, sends up to this many consecutive datagrams of one size as one
	// UDP_SEGMENT super-datagram, which the kernel (or the NIC) splits into datagrams: the
	// sender's cost per datagram drops, and a UDP_GRO receiver on loopback gets them whole.
	// At most MaxGSO.
	GSO int
	// Progress, when set, gets a line a second while a run lasts.
	Progress io.Writer
}

// MaxGSO is the most datagrams a GSO send carries (the kernel's UDP_MAX_SEGMENTS).
const MaxGSO = 64

// Stats is what a run sent. Datagrams, Reports and Bytes count what the kernel accepted;
// a datagram it refused (for instance ECONNREFUSED after an ICMP port unreachable) counts
// as a send error and is not retried, as a switch would not retry it.
type Stats struct {
	Datagrams  uint64
	Reports    uint64
	Bytes      uint64
	SendErrors uint64
	// Claimed is how many datagrams of the stream the run used (sent or failed): the n for
	// Generator.Truth.
	Claimed uint64
	Elapsed time.Duration
}

// DatagramsPerSec is the achieved datagram rate.
func (s Stats) DatagramsPerSec() float64 { return per(s.Datagrams, s.Elapsed) }

// ReportsPerSec is the achieved report rate.
func (s Stats) ReportsPerSec() float64 { return per(s.Reports, s.Elapsed) }

func per(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// A Target is one stream Start sends: Config's datagrams as Send says.
type Target struct {
	Config Config
	Send   SendConfig
}

// Start builds a generator and a sender for each target and runs them concurrently until
// ctx is done (or each has sent its Count or Duration). The returned wait blocks until all
// have stopped, closes them, and returns their errors; a cancelled ctx is not one.
func Start(ctx context.Context, targets ...Target) (gens []*Generator, wait func() error, err error) {
	gens, waitStats, err := start(ctx, targets)
	if err != nil {
		return nil, nil, err
	}
	return gens, func() error { _, err := waitStats(); return err }, nil
}

// Run is Start and wait in one: it returns what each target sent, in order.
func Run(ctx context.Context, targets ...Target) ([]*Generator, []Stats, error) {
	gens, wait, err := start(ctx, targets)
	if err != nil {
		return nil, nil, err
	}
	st, err := wait()
	return gens, st, err
}

func start(ctx context.Context, targets []Target) (gens []*Generator, wait func() ([]Stats, error), err error) {
	var snds []*Sender
	for _, t := range targets {
		g, err := New(t.Config)
		var snd *Sender
		if err == nil {
			snd, err = NewSender(g, t.Send)
		}
		if err != nil {
			for _, s := range snds {
				s.Close()
			}
			return nil, nil, err
		}
		gens, snds = append(gens, g), append(snds, snd)
	}
	errs := make([]error, len(snds))
	stats := make([]Stats, len(snds))
	var wg sync.WaitGroup
	for i, snd := range snds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if stats[i], err = snd.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				errs[i] = err
			}
		}()
	}
	return gens, func() ([]Stats, error) {
		wg.Wait()
		for _, s := range snds {
			s.Close()
		}
		return stats, errors.Join(errs...)
	}, nil
}

// Summary is a run as `intake gen --json` prints it.
type Summary struct {
	To                 string  `json:"to"`
	Data               string  `json:"data,omitempty"` // gen --data: the interface data packets left by
	Format             string  `json:"format"`
	Mode               string  `json:"mode,omitempty"`
	Seed               uint64  `json:"seed"`
	Flows              int     `json:"flows"`
	Switches           int     `json:"switches"`
	Hops               int     `json:"hops"`
	ReportsPerDatagram int     `json:"reports_per_datagram"`
	Datagrams          uint64  `json:"datagrams"`
	Reports            uint64  `json:"reports"`
	Bytes              uint64  `json:"bytes"`
	SendErrors         uint64  `json:"send_errors"`
	ElapsedS           float64 `json:"elapsed_s"`
	DatagramsPerS      float64 `json:"datagrams_per_s"`
	ReportsPerS        float64 `json:"reports_per_s"`
}

// Summary describes a run of g to the collector at to that sent st.
func (g *Generator) Summary(to string, st Stats) Summary {
	cfg := g.Config()
	s := Summary{To: to, Format: cfg.Format, Seed: cfg.Seed, Flows: cfg.Flows, Switches: cfg.Switches,
		Hops: cfg.Hops, ReportsPerDatagram: g.Batch(), Datagrams: st.Datagrams, Reports: st.Reports,
		Bytes: st.Bytes, SendErrors: st.SendErrors, ElapsedS: st.Elapsed.Seconds(),
		DatagramsPerS: st.DatagramsPerSec(), ReportsPerS: st.ReportsPerSec()}
	if cfg.isReport() {
		s.Mode = cfg.Mode
	}
	return s
}

// Stats is what the summary says was sent.
func (s *Summary) Stats() Stats {
	return Stats{Datagrams: s.Datagrams, Reports: s.Reports, Bytes: s.Bytes, SendErrors: s.SendErrors,
		Elapsed: time.Duration(s.ElapsedS * float64(time.Second))}
}

// Partition returns one target per collector of a cluster (addrs in cluster.members order):
// target i sends the reports member i owns (Config.Part, Parts) to addrs[i]. Rate and Count
// are totals, split evenly (a Count's remainder to the first members).
func Partition(cfg Config, send SendConfig, addrs []string) []Target {
	n := len(addrs)
	ts := make([]Target, n)
	for i, a := range addrs {
		c, s := cfg, send
		c.Part, c.Parts = i, n
		s.To = a
		s.Rate = send.Rate / float64(n)
		if send.Count > 0 {
			s.Count = send.Count / uint64(n)
			if uint64(i) < send.Count%uint64(n) {
				s.Count++
			}
		}
		if i > 0 {
			s.Progress = nil // one progress line: the first member's
		}
		ts[i] = Target{Config: c, Send: s}
	}
	return ts
}

// ClusterSummary is a run to a cluster's collectors as `intake gen --collectors --json`
// prints it: each member's summary, in cluster.members order, and the totals.
type ClusterSummary struct {
	Collectors []Summary `json:"collectors"`
	Datagrams  uint64    `json:"datagrams"`
	Reports    uint64    `json:"reports"`
	SendErrors uint64    `json:"send_errors"`
}

// NewClusterSummary sums what Run of Partition's targets sent to addrs.
func NewClusterSummary(gens []*Generator, addrs []string, sts []Stats) ClusterSummary {
	s := ClusterSummary{Collectors: make([]Summary, len(gens))}
	for i, g := range gens {
		s.Collectors[i] = g.Summary(addrs[i], sts[i])
		s.Datagrams += sts[i].Datagrams
		s.Reports += sts[i].Reports
		s.SendErrors += sts[i].SendErrors
	}
	return s
}

// StartDemo starts `intake demo`'s generators: the report stream of cfg as send says to
// to[0], and DTA Key-Writes and INT-label exports at a tenth of its rate (and count) to
// to[1] and to[2], until ctx is done. The three streams share one generated clock: with
// cfg.Interval 0 it runs at the wall clock's pace (the report stream's Interval is set from
// its rate), so that the network model's bursts, build-ups and path changes, and INT-label
// times, come when a person watching expects them; a given Interval is the report
// stream's, and the side streams' follow it. It returns what it sends, for the demo's start
// line, and wait, which returns once every sender has stopped.
func StartDemo(ctx context.Context, cfg Config, send SendConfig, to [3]string) (string, func() error, error) {
	if !(send.Rate > 0) {
		return "", nil, fmt.Errorf("the demo sends at a rate: %g datagrams/s", send.Rate)
	}
	interval := cfg.Interval
	cfg.Interval = time.Second // valid while the batch is worked out
	if err := cfg.Validate(); err != nil {
		return "", nil, err
	}
	t, err := newTopology(cfg)
	if err != nil {
		return "", nil, err
	}
	if interval == 0 {
		interval = clamp(time.Duration(float64(time.Second) / (send.Rate * float64(t.batch))))
	}
	cfg.Interval = interval
	dta, label := cfg, cfg
	dta.Format, dta.Batch, dta.Events = "dta", 1, 0
	label.Format, label.Batch, label.Events = "int-label", 1, 0
	// A side stream's report stands for 10 datagrams of the report stream.
	dta.Interval = clamp(interval * time.Duration(10*t.batch))
	label.Interval = dta.Interval
	side := SendConfig{Rate: send.Rate / 10, Count: (send.Count + 9) / 10, Duration: send.Duration}
	send.To = to[0]
	sideDTA, sideLabel := side, side
	sideDTA.To, sideLabel.To = to[1], to[2]
	gens, wait, err := Start(ctx, Target{Config: cfg, Send: send}, Target{Config: dta, Send: sideDTA}, Target{Config: label, Send: sideLabel})
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("%s to %s at %.0f datagrams/s", gens[0], to[0], send.Rate), wait, nil
}

// clamp keeps an interval within what Config allows.
func clamp(d time.Duration) time.Duration { return min(max(d, 1), MaxInterval) }
