package flowcache

import (
	"fmt"
	"time"
)

// Config is the `flowcache` section of the configuration file.
type Config struct {
	// Enabled turns the flow cache on (the default).
	Enabled bool `yaml:"enabled"`
	// Rows is the number of hash-table rows H_P has (a power of two). The paper's geometry
	// is 524288 (2^19); the default keeps a default serve small.
	Rows int `yaml:"rows"`
	// Buckets is the number of flows a row holds (the paper: 12). A new flow in a full row
	// evicts the row's least recently updated flow.
	Buckets int `yaml:"buckets"`
	// MaxHops is the number of hops per flow kept, source first; the rest of a longer path
	// is counted (truncated_paths), not kept.
	MaxHops int `yaml:"max_hops"`
	// IdleTimeout: the ager evicts a flow not updated for this long; 0 turns the ager off.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// AgeInterval is how often the ager sweeps the table.
	AgeInterval time.Duration `yaml:"age_interval"`
	// Rings is the number of eviction rings (R_G; the paper: 8); a row's evictions go to
	// ring row mod rings.
	Rings int `yaml:"rings"`
	// RingEntries is each eviction ring's size in flow records (a power of two; the paper:
	// 65536). A full ring drops the record and counts it.
	RingEntries int `yaml:"ring_entries"`
	// Histograms are the per-switch metric distributions (§III-C).
	Histograms HistConfig `yaml:"histograms"`
	// Kernel keeps the table, the histograms and the eviction of the reports the XDP
	// program of a report listener in mode xdp parses in BPF maps, updated by the program
	// (docs/flowcache.md "In the kernel"); the cache reads them in place. Needs such a
	// listener, root and Linux 5.18+.
	Kernel bool `yaml:"kernel"`
}

// HistConfig configures the per-switch histograms.
type HistConfig struct {
	// Scale is "log" (bin 0 holds 0, bin k holds [2^(k-1), 2^k)) or "linear" (bin k holds
	// [k·width, (k+1)·width)). The last bin also holds everything above it.
	Scale string `yaml:"scale"`
	// Bins is the number of bins per histogram.
	Bins int `yaml:"bins"`
	// Width is the linear bin width per metric (unused with scale log).
	Width Widths `yaml:"width"`
	// MaxSwitches bounds the switches with histograms; samples of further switches are
	// counted (switch_overflow), not binned.
	MaxSwitches int `yaml:"max_switches"`
}

// Widths are the linear bin widths per metric.
type Widths struct {
	HopLatency     uint64 `yaml:"hop_latency"`
	QueueOccupancy uint64 `yaml:"queue_occupancy"`
	TxUtil         uint64 `yaml:"tx_utilization"`
	// Latency is the end-to-end latency's (sum of hop latencies, switch "e2e").
	Latency uint64 `yaml:"latency"`
	// OldTxUtil is tx_utilization's older key, tx_util, deprecated (every other part of
	// intake says tx_utilization): when set, Resolve makes it TxUtil's value and Deprecated
	// says so. 0: not given.
	OldTxUtil uint64 `yaml:"tx_util,omitempty"`
}

// Resolve applies the deprecated tx_util key over tx_utilization (the configuration's
// reader calls it once, after decoding).
func (w *Widths) Resolve() {
	if w.OldTxUtil != 0 {
		w.TxUtil = w.OldTxUtil
	}
}

// Deprecated returns a warning for each deprecated key c uses, to be logged at start.
func (c *Config) Deprecated() []string {
	if c.Histograms.Width.OldTxUtil != 0 {
		return []string{"flowcache.histograms.width.tx_util is deprecated: use flowcache.histograms.width.tx_utilization, which means the same"}
	}
	return nil
}

// DefaultConfig returns the documented defaults: 16384 rows × 12 buckets × 5 hops
// (196608 flows, 68.5 MiB), 4 rings of 4096 records, log-scale histograms of 64 bins.
func DefaultConfig() Config {
	return Config{
		Enabled:     true,
		Rows:        1 << 14,
		Buckets:     12,
		MaxHops:     5,
		IdleTimeout: time.Minute,
		AgeInterval: 5 * time.Second,
		Rings:       4,
		RingEntries: 4096,
		Histograms: HistConfig{Scale: "log", Bins: 64, MaxSwitches: 1024,
			Width: Widths{HopLatency: 1, QueueOccupancy: 1, TxUtil: 1, Latency: 1}},
	}
}

// Limits of the settings.
const (
	MaxRows        = 1 << 24
	MaxBuckets     = 64
	MaxRingEntries = 1 << 20
	MaxRings       = 64
	MaxBins        = 4096
	MaxSwitches    = 1 << 16
)

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if c.Rows < 1 || c.Rows > MaxRows || c.Rows&(c.Rows-1) != 0 {
		return fmt.Errorf("rows: %d: must be a power of two 1-%d", c.Rows, MaxRows)
	}
	if c.Buckets < 1 || c.Buckets > MaxBuckets {
		return fmt.Errorf("buckets: %d: must be 1-%d", c.Buckets, MaxBuckets)
	}
	if c.MaxHops < 1 || c.MaxHops > 32 {
		return fmt.Errorf("max_hops: %d: must be 1-32", c.MaxHops)
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("idle_timeout: %s: must be 0 (no ager) or positive", c.IdleTimeout)
	}
	if c.AgeInterval < 10*time.Millisecond {
		return fmt.Errorf("age_interval: %s: must be at least 10ms", c.AgeInterval)
	}
	if c.Rings < 1 || c.Rings > MaxRings || c.Rings&(c.Rings-1) != 0 {
		return fmt.Errorf("rings: %d: must be a power of two 1-%d", c.Rings, MaxRings)
	}
	if c.RingEntries < 2 || c.RingEntries > MaxRingEntries || c.RingEntries&(c.RingEntries-1) != 0 {
		return fmt.Errorf("ring_entries: %d: must be a power of two 2-%d", c.RingEntries, MaxRingEntries)
	}
	h := &c.Histograms
	if h.Scale != "log" && h.Scale != "linear" {
		return fmt.Errorf("histograms.scale: %q: must be linear or log", h.Scale)
	}
	if h.Bins < 2 || h.Bins > MaxBins {
		return fmt.Errorf("histograms.bins: %d: must be 2-%d", h.Bins, MaxBins)
	}
	for _, w := range []struct {
		k string
		v uint64
	}{{"hop_latency", h.Width.HopLatency}, {"queue_occupancy", h.Width.QueueOccupancy}, {"tx_utilization", h.Width.TxUtil}, {"latency", h.Width.Latency}} {
		if w.v < 1 {
			return fmt.Errorf("histograms.width.%s: %d: must be at least 1", w.k, w.v)
		}
	}
	if h.MaxSwitches < 1 || h.MaxSwitches > MaxSwitches {
		return fmt.Errorf("histograms.max_switches: %d: must be 1-%d", h.MaxSwitches, MaxSwitches)
	}
	return nil
}

// Bytes is the size of the table's one allocation for this geometry.
func (c *Config) Bytes() int {
	return c.Rows * rowWords(c.Buckets, c.MaxHops) * 8
}
