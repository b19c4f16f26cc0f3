// Package dta owns the DTA translator and its write-only stores in shared memory: the four
// primitives of Direct Telemetry Access (DTA §3-4, appendix A.1-A.4) — Key-Write,
// Key-Increment, Postcarding and Append — and DART's key-value store (DART §3).
//
// The papers write reports straight into collector memory with RDMA and answer queries from
// that memory. intake's translator (Translator, an ingest.Processor) does the writing in
// software, into mmap'd files (Region) that a second process can map read-only and query
// without asking the collector; docs/dta-layout.md is the binary layout. The papers'
// analysis (DTA appendix A.5-A.6, DART §4) and the Monte Carlo behind `intake sim dta` are
// package sim/dtasim's, over this package's stores (AnonRegion, KeyWrite).
package dta

import (
	"fmt"
	"math/bits"
	"time"
)

// Config is the `dta` section of the configuration file.
type Config struct {
	// Enabled turns the DTA stores on (the default).
	Enabled bool `yaml:"enabled"`
	// DataDir holds the region files (kw.dta, paths.dta, ki.dta, postcard.dta, append.dta).
	// The default (DefaultDataDir) is on tmpfs so that the stores are memory, as in the
	// papers, and survive a collector restart (not a reboot), in a directory of this user's
	// alone. One writing collector per directory (a lock), which must be this user's and
	// writable by no one else (datadir.go).
	DataDir string `yaml:"data_dir"`
	// HugePages asks the kernel for transparent huge pages on the regions (madvise; the
	// kernel may refuse, e.g. tmpfs with shmem_enabled=never).
	HugePages bool `yaml:"huge_pages"`
	// Kernel makes the XDP program of the `dta` listeners in mode xdp write single Key-Write
	// and Key-Increment reports into the stores itself (docs/xdp.md, "DTA in the kernel"):
	// the stores' data is then held in BPF arrays that the collector and readers map, and
	// copied to the files when the collector stops. Default layouts only; key_write's
	// value_bytes at most 4.
	Kernel bool `yaml:"kernel"`
	// Seed is the hash seed of the default layouts. Fixed, not per process: a query process
	// (and a reporter) must compute the same slot addresses. It is stored in each region.
	Seed uint64 `yaml:"seed"`

	KeyWrite     KWConfig       `yaml:"key_write"`
	Paths        KWConfig       `yaml:"paths"`
	KeyIncrement KIConfig       `yaml:"key_increment"`
	Postcard     PostcardConfig `yaml:"postcard"`
	Append       AppendConfig   `yaml:"append"`
	Epochs       EpochConfig    `yaml:"epochs"`
	INT          INTConfig      `yaml:"int"`
}

// KWConfig is the geometry of a Key-Write store (DTA §4, A.1, A.5).
type KWConfig struct {
	// Layout is "default" (any key bytes, b-bit checksum mixed with the value so that a torn
	// slot is caught, value_bytes wide) or "compat" (the public prototype: 4-byte keys,
	// 8-byte slots, CRC-32 addressing and checksum).
	Layout string `yaml:"layout"`
	// Slots is the number of slots M, a power of two.
	Slots int `yaml:"slots"`
	// MaxRedundancy bounds the per-report redundancy N and is the N queries gather.
	MaxRedundancy int `yaml:"max_redundancy"`
	// ChecksumBits is b, the key checksum width (1-32; compat: 32).
	ChecksumBits int `yaml:"checksum_bits"`
	// ValueBytes is the value width (1-32; compat: 4).
	ValueBytes int `yaml:"value_bytes"`
	// Threshold is the default T: a value is returned only when at least T slots vote for it.
	Threshold int `yaml:"threshold"`
}

// KIConfig is the geometry of the Key-Increment store (DTA §4, A.4).
type KIConfig struct {
	Layout string `yaml:"layout"`
	Slots  int    `yaml:"slots"`
	// MaxRedundancy is N, the counters every key adds to (a report's redundancy must be 1
	// to N; a count-min sketch needs the same N for all keys, so N is what is written).
	MaxRedundancy int `yaml:"max_redundancy"`
	// ResetPeriod zeroes every counter this often (0: never).
	ResetPeriod time.Duration `yaml:"reset_period"`
}

// PostcardConfig is the geometry of the Postcarding store and its translator cache (DTA §4).
type PostcardConfig struct {
	// Chunks is C, a power of two; a chunk holds Hops slots.
	Chunks int `yaml:"chunks"`
	// Hops is B, the hop bound (1-16).
	Hops int `yaml:"hops"`
	// Redundancy is N, the chunks each flow is written to (1-8).
	Redundancy int `yaml:"redundancy"`
	// SlotBits is b, the width of a hop slot (1-32).
	SlotBits int `yaml:"slot_bits"`
	// Cache is the translator's postcard cache, entries (a power of two).
	Cache int `yaml:"cache"`
	// Values is the capacity of the shared table of known values V (learned from reports).
	Values int `yaml:"values"`
	// KnownValues are values put in V at start (e.g. all switch ids).
	KnownValues []uint32 `yaml:"known_values"`
}

// AppendConfig is the geometry of the Append lists (DTA §4, A.3).
type AppendConfig struct {
	// Lists is the number of lists; list ids are 0 to lists-1.
	Lists int `yaml:"lists"`
	// Entries is each list's ring capacity, a power of two.
	Entries int `yaml:"entries"`
	// ValueBytes is the entry width (1-32); narrower data is right-aligned (big-endian).
	ValueBytes int `yaml:"value_bytes"`
	// Batch is the translator's batch: entries written to a list at once (1-64).
	Batch int `yaml:"batch"`
}

// EpochConfig turns on epoch snapshots (DART §5.2.1).
type EpochConfig struct {
	// Period copies every region into epochs/<unix seconds>/ this often (0: off).
	Period time.Duration `yaml:"period"`
	// Retain is the number of snapshots kept.
	Retain int `yaml:"retain"`
}

// INTConfig maps INT telemetry into the stores (DTA Table 2).
type INTConfig struct {
	// PathTrace writes INT-MD path traces to the paths Key-Write store: flow 5-tuple → node ids.
	PathTrace bool `yaml:"path_trace"`
	// Postcards writes per-hop reports (INT-XD/MX, TR reporter hops) to Postcarding: key flow
	// 5-tuple, value node id, hop = hop_limit - remaining hop count.
	Postcards bool `yaml:"postcards"`
	// HopLimit is the INT hop limit the sources set, used to number postcard hops.
	HopLimit int `yaml:"hop_limit"`
	// DropList and QueueList are the Append lists drop and queue-congestion reports go to
	// (-1: none). The entry is the reporting node id.
	DropList  int `yaml:"drop_list"`
	QueueList int `yaml:"queue_list"`
	// Counters counts reports per flow 5-tuple in Key-Increment.
	Counters bool `yaml:"counters"`
	// EventList is the Append list detected events go to (-1: none, the default). An event
	// entry is EventBytes (32) wide, so append.value_bytes must be 32; the list must be none
	// of drop_list and queue_list, whose entries are node ids.
	EventList int `yaml:"event_list"`
}

// DefaultSeed is the documented default hash seed.
const DefaultSeed = 0x696e74616b65 // "intake"

// DefaultConfig returns the documented defaults: modest sizes (about 30 MiB in all).
func DefaultConfig() Config {
	return Config{
		Enabled:      true,
		DataDir:      DefaultDataDir,
		HugePages:    true,
		Seed:         DefaultSeed,
		KeyWrite:     KWConfig{Layout: "default", Slots: 1 << 20, MaxRedundancy: 4, ChecksumBits: 32, ValueBytes: 4, Threshold: 1},
		Paths:        KWConfig{Layout: "default", Slots: 1 << 18, MaxRedundancy: 2, ChecksumBits: 32, ValueBytes: 20, Threshold: 1},
		KeyIncrement: KIConfig{Layout: "default", Slots: 1 << 18, MaxRedundancy: 2},
		Postcard:     PostcardConfig{Chunks: 1 << 18, Hops: 5, Redundancy: 2, SlotBits: 32, Cache: 32768, Values: 1 << 16},
		Append:       AppendConfig{Lists: 16, Entries: 1 << 16, ValueBytes: 4, Batch: 4},
		Epochs:       EpochConfig{Period: 0, Retain: 4},
		INT:          INTConfig{PathTrace: true, Postcards: true, HopLimit: 8, DropList: 0, QueueList: 1, Counters: true, EventList: -1},
	}
}

func pow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

func (c *KWConfig) validate(key string) error {
	switch c.Layout {
	case "default":
	case "compat":
		if c.ChecksumBits != 32 || c.ValueBytes != 4 || c.MaxRedundancy > 4 {
			return fmt.Errorf("%s.layout: compat: needs checksum_bits 32, value_bytes 4 and max_redundancy at most 4 (the prototype's slots)", key)
		}
	default:
		return fmt.Errorf("%s.layout: %q: allowed are default and compat", key, c.Layout)
	}
	if !pow2(c.Slots) || c.Slots > 1<<34 {
		return fmt.Errorf("%s.slots: %d: must be a power of two up to 2^34", key, c.Slots)
	}
	if c.MaxRedundancy < 1 || c.MaxRedundancy > 8 {
		return fmt.Errorf("%s.max_redundancy: %d: allowed is 1 to 8", key, c.MaxRedundancy)
	}
	if c.ChecksumBits < 1 || c.ChecksumBits > 32 {
		return fmt.Errorf("%s.checksum_bits: %d: allowed is 1 to 32", key, c.ChecksumBits)
	}
	if c.ValueBytes < 1 || c.ValueBytes > 32 {
		return fmt.Errorf("%s.value_bytes: %d: allowed is 1 to 32", key, c.ValueBytes)
	}
	if c.Threshold < 1 || c.Threshold > c.MaxRedundancy {
		return fmt.Errorf("%s.threshold: %d: allowed is 1 to max_redundancy (%d)", key, c.Threshold, c.MaxRedundancy)
	}
	return nil
}

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if !c.Enabled {
		return nil
	}
	if c.DataDir == "" {
		return fmt.Errorf("data_dir: \"\": a directory is required when the stores are enabled")
	}
	if err := c.KeyWrite.validate("key_write"); err != nil {
		return err
	}
	if err := c.Paths.validate("paths"); err != nil {
		return err
	}
	if c.Paths.Layout != "default" {
		return fmt.Errorf("paths.layout: %q: only default (5-tuple keys do not fit the compat layout)", c.Paths.Layout)
	}
	if c.Kernel {
		switch {
		case c.KeyWrite.Layout != "default" || c.KeyIncrement.Layout != "default":
			return fmt.Errorf("kernel: true: needs key_write.layout and key_increment.layout default (the kernel has no CRC layout)")
		case c.KeyWrite.ValueBytes > 4:
			return fmt.Errorf("kernel: true: key_write.value_bytes %d: at most 4 (the kernel writes one-word slots)", c.KeyWrite.ValueBytes)
		case c.KeyWrite.Slots > 1<<31 || c.KeyIncrement.Slots > 1<<31:
			return fmt.Errorf("kernel: true: key_write.slots and key_increment.slots at most 2^31 (a BPF array's size)")
		}
	}
	ki := &c.KeyIncrement
	if ki.Layout != "default" && ki.Layout != "compat" {
		return fmt.Errorf("key_increment.layout: %q: allowed are default and compat", ki.Layout)
	}
	if !pow2(ki.Slots) || ki.Slots > 1<<34 {
		return fmt.Errorf("key_increment.slots: %d: must be a power of two up to 2^34", ki.Slots)
	}
	if ki.MaxRedundancy < 1 || ki.MaxRedundancy > 8 || ki.Layout == "compat" && ki.MaxRedundancy > 4 {
		return fmt.Errorf("key_increment.max_redundancy: %d: allowed is 1 to 8 (compat: 4)", ki.MaxRedundancy)
	}
	if ki.ResetPeriod < 0 {
		return fmt.Errorf("key_increment.reset_period: %s: must be 0 (never) or positive", ki.ResetPeriod)
	}
	p := &c.Postcard
	if !pow2(p.Chunks) || p.Chunks > 1<<32 {
		return fmt.Errorf("postcard.chunks: %d: must be a power of two up to 2^32", p.Chunks)
	}
	if p.Hops < 1 || p.Hops > MaxHops {
		return fmt.Errorf("postcard.hops: %d: allowed is 1 to %d", p.Hops, MaxHops)
	}
	if p.Redundancy < 1 || p.Redundancy > 8 {
		return fmt.Errorf("postcard.redundancy: %d: allowed is 1 to 8", p.Redundancy)
	}
	if p.SlotBits < 1 || p.SlotBits > 32 {
		return fmt.Errorf("postcard.slot_bits: %d: allowed is 1 to 32", p.SlotBits)
	}
	if !pow2(p.Cache) || p.Cache > 1<<24 {
		return fmt.Errorf("postcard.cache: %d: must be a power of two up to 2^24", p.Cache)
	}
	if !pow2(p.Values) || p.Values > 1<<26 {
		return fmt.Errorf("postcard.values: %d: must be a power of two up to 2^26", p.Values)
	}
	if len(p.KnownValues) > p.Values/2 {
		return fmt.Errorf("postcard.known_values: %d values: at most values/2 (%d)", len(p.KnownValues), p.Values/2)
	}
	a := &c.Append
	if a.Lists < 1 || a.Lists > 1<<17 {
		return fmt.Errorf("append.lists: %d: allowed is 1 to 131072", a.Lists)
	}
	if !pow2(a.Entries) || a.Entries < 64 || a.Entries > 1<<30 {
		return fmt.Errorf("append.entries: %d: must be a power of two from 64 to 2^30", a.Entries)
	}
	if a.ValueBytes < 1 || a.ValueBytes > 32 {
		return fmt.Errorf("append.value_bytes: %d: allowed is 1 to 32", a.ValueBytes)
	}
	if a.Batch < 1 || a.Batch > 64 || a.Batch > a.Entries {
		return fmt.Errorf("append.batch: %d: allowed is 1 to 64", a.Batch)
	}
	if c.Epochs.Period < 0 || c.Epochs.Period > 0 && c.Epochs.Period < time.Second {
		return fmt.Errorf("epochs.period: %s: must be 0 (off) or at least 1s", c.Epochs.Period)
	}
	if c.Epochs.Retain < 1 || c.Epochs.Retain > 1000 {
		return fmt.Errorf("epochs.retain: %d: allowed is 1 to 1000", c.Epochs.Retain)
	}
	in := &c.INT
	if in.HopLimit < 1 || in.HopLimit > 255 {
		return fmt.Errorf("int.hop_limit: %d: allowed is 1 to 255", in.HopLimit)
	}
	if in.DropList < -1 || in.DropList >= a.Lists {
		return fmt.Errorf("int.drop_list: %d: allowed is -1 (none) or a list id below append.lists (%d)", in.DropList, a.Lists)
	}
	if in.QueueList < -1 || in.QueueList >= a.Lists {
		return fmt.Errorf("int.queue_list: %d: allowed is -1 (none) or a list id below append.lists (%d)", in.QueueList, a.Lists)
	}
	if in.EventList < -1 || in.EventList >= a.Lists {
		return fmt.Errorf("int.event_list: %d: allowed is -1 (none) or a list id below append.lists (%d)", in.EventList, a.Lists)
	}
	if in.EventList >= 0 {
		if in.EventList == in.DropList || in.EventList == in.QueueList {
			return fmt.Errorf("int.event_list: %d: the list of drop or queue reports (int.drop_list %d, int.queue_list %d): events need a list of their own", in.EventList, in.DropList, in.QueueList)
		}
		if a.ValueBytes < EventBytes {
			return fmt.Errorf("int.event_list: %d: an event entry is %d bytes: needs append.value_bytes %d (it is %d)", in.EventList, EventBytes, EventBytes, a.ValueBytes)
		}
	}
	return nil
}
