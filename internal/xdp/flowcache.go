package xdp

import "fmt"

// FlowCache is the flow cache in the kernel (flowcache.kernel, docs/flowcache.md "In the
// kernel"): the XDP program of a report listener runs package flowcache's update on the
// reports it parses (bpf/report.h), with the table H_P, the histograms and the counters in
// BPF maps (bpf/flowcache.h). The table has package flowcache's layout byte for byte, in a
// BPF_F_MMAPABLE array that user space maps read-only (FlowCacheState.Table); evicted
// buckets go up through a BPF ring buffer (FlowCacheState.ReadEvicted).
type FlowCache struct {
	// Rows (a power of two), Buckets and MaxHops are the table's geometry: flowcache's
	// rows, buckets and max_hops.
	Rows, Buckets, MaxHops int
	// The histograms: log bins, else linear bins Widths wide (hop latency, queue
	// occupancy, tx utilization, end-to-end latency); Bins per histogram (at most
	// MaxKernelBins); MaxSwitches switches with histograms.
	LogBins     bool
	Bins        int
	Widths      [4]uint64
	MaxSwitches int
	// EvictRing is the eviction ring buffer's size in bytes (a power of two; 0: room for
	// 16384 records).
	EvictRing int
	// Lift redirects the reports the program has put in its cache too, marked
	// (MetaCached), for user-space processors that need every report.
	Lift bool
	// Parser is the listener's decoder, where the parser looks for INT; with detection in
	// the kernel too, Detect's (the same decoder) is used.
	Parser Parser
}

// Parser is a listener's decoder settings that the program's report parser follows
// (wire's findINT rules).
type Parser struct {
	DSCP                         []DSCPMatch
	Probe                        bool
	GPEPort, GenevePort, INTPort uint16
	// Quirks: a decoder quirk is on; the reports and INT it may change go up.
	Quirks bool
}

// MaxKernelBins is the most bins a histogram of the kernel's flow cache has: a switch's
// three histograms are one per-CPU map value, at most 32 KiB.
const MaxKernelBins = 32768 / (3 * 8)

// The kernel's table layout: package flowcache's (table.go), which TestKernelFlowCacheSame
// holds it to.
const (
	fcBucketHdr = 80 // bytes of a bucket's flow-level part
	fcHopSlot   = 56 // bytes of a hop's slot
)

// rowHeader is a row header's bytes: a 32-bit sequence count and a 32-bit tag per bucket,
// in whole 64-byte lines.
func (f *FlowCache) rowHeader() int { return (((1+f.Buckets+1)/2 + 7) &^ 7) * 8 }

// bucketBytes is a bucket's bytes.
func (f *FlowCache) bucketBytes() int { return fcBucketHdr + f.MaxHops*fcHopSlot }

// RowBytes is a row's bytes; the table is Rows of them.
func (f *FlowCache) RowBytes() int { return f.rowHeader() + f.Buckets*f.bucketBytes() }

// check reports the first setting the program cannot take.
func (f *FlowCache) check() error {
	switch {
	case f.Rows < 1 || f.Rows > 1<<24 || f.Rows&(f.Rows-1) != 0:
		return fmt.Errorf("rows %d: must be a power of two up to 2^24", f.Rows)
	case f.Buckets < 1 || f.Buckets > 64:
		return fmt.Errorf("buckets %d: must be 1-64", f.Buckets)
	case f.MaxHops < 1 || f.MaxHops > 32:
		return fmt.Errorf("max_hops %d: must be 1-32", f.MaxHops)
	case f.Bins < 2 || f.Bins > MaxKernelBins:
		return fmt.Errorf("histograms of %d bins: the kernel's take 2-%d", f.Bins, MaxKernelBins)
	case f.MaxSwitches < 1:
		return fmt.Errorf("max_switches %d: must be at least 1", f.MaxSwitches)
	case f.EvictRing != 0 && (f.EvictRing < 4096 || f.EvictRing&(f.EvictRing-1) != 0):
		return fmt.Errorf("eviction ring of %d bytes: must be a power of two of at least 4096", f.EvictRing)
	case len(f.Parser.DSCP) > MaxDSCP:
		return fmt.Errorf("%d decoder.dscp entries: the XDP parser takes at most %d", len(f.Parser.DSCP), MaxDSCP)
	}
	for _, w := range f.Widths {
		if !f.LogBins && w < 1 {
			return fmt.Errorf("linear bins of width %d", w)
		}
	}
	return nil
}

// FlowCacheCounts are the kernel flow cache's counters, summed over CPUs (the fcc_* enum
// of bpf/flowcache.h).
type FlowCacheCounts struct {
	Reports, NoHops, NoFlow, Truncated, Updates uint64
	Inserts                                     uint64 // flows new to the table
	New                                         uint64 // of which in a free bucket (the table holds New - Idle flows)
	Collisions                                  uint64 // evictions from a full row
	Idle                                        uint64 // evictions by the ager
	Pushed                                      uint64 // evicted records written to the ring
	RingFull                                    uint64 // evicted records lost: the ring was full
	Overflow                                    uint64 // hop samples of switches past MaxSwitches
	LockBusy                                    uint64 // updates not applied: their row stayed held (not expected)
	// Switches is the number of switches with histograms.
	Switches int
}
