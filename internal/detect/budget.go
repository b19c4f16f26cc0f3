package detect

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget"
)

// seqWinBytes is what a sequence window takes (seqwin.go): the window in its size class
// (288 B) and its share of the shard's map, at the map's lowest load, and slack (measured:
// TestBudgetReal).
const seqWinBytes = 288 + 96

// streamEventBytes is the most an event takes encoded for the streams (encodeEvent): a
// flow_path event of 16 hops of the largest ids, IPv6 addresses and the largest values,
// in its size class (TestBudgetRealStreams).
const streamEventBytes = 704

// The entries of the kernel's tables (detect.kernel): bpf/detect.h's struct fent and
// struct swent, which package xdp mirrors (TestKernelBudget in internal/collector checks
// these against its mirrors and KernelSlots against its sizing).
const (
	KernelFlowEntryBytes = 344
	KernelKeyEntryBytes  = 80
	kernelEventRing      = 4 << 20 // xdp.Detect's default event ring
)

// KernelSlots is the slots of a kernel table that holds n entries at most three quarters
// full: a power of two (package xdp sizes its BPF arrays so).
func KernelSlots(n int) int {
	s := 64
	for s*3/4 < n {
		s *= 2
	}
	return s
}

// Budget is the memory the detector takes: its preallocated key tables, the event log and
// the event bus's rings, one of detect.ring events per consumer (the log, the export
// pipeline, the Redis sink, the DTA event list: ringConsumers of them, which the caller
// knows from the rest of the configuration). docs/config.md, "Budget".
func (c *Config) Budget(ringConsumers int) budget.Budget {
	if !c.Enabled {
		return nil
	}
	perFlows, perKeys := int64(shardCap(c.MaxFlows, c.Shards)), int64(shardCap(c.MaxKeys, c.Shards))
	table := func(n, entry int64) int64 {
		idx := int64(8)
		for idx < 2*n {
			idx <<= 1
		}
		return budget.Add(budget.Mul(n, entry+int64(unsafe.Sizeof(link{}))), idx*8)
	}
	flows := budget.Mul(int64(c.Shards), table(perFlows, int64(unsafe.Sizeof(flowEntry{}))))
	// A shard's keys: the entries (cache-line aligned), their links and index, and the hop
	// memo (memoSlots).
	keys := budget.Mul(int64(c.Shards), budget.Add(table(perKeys, int64(unsafe.Sizeof(swEntry{}))), int64(memoSlots(int(perKeys)))*int64(unsafe.Sizeof(hopMemo{}))+64))
	logN := int64(logSize(c.EventLog))
	b := budget.Budget{
		{Component: "detect", Part: "flow table", Memory: flows, Note: fmt.Sprintf("%d flows in %d shards", c.MaxFlows, c.Shards)},
		{Component: "detect", Part: "switch-key table", Memory: keys, Note: fmt.Sprintf("%d keys in %d shards, with the hop memo", c.MaxKeys, c.Shards)},
		{Component: "detect", Part: "sequence windows", Memory: budget.Mul(int64(c.Shards), perKeys, seqWinBytes),
			Note: fmt.Sprintf("at most one a key, %d B (reporters seen by several workers)", seqWinBytes)},
		{Component: "detect", Part: "event log", Memory: budget.Add(budget.Mul(logN+logDrain, int64(unsafe.Sizeof(event.Event{}))), streamShared*int64(unsafe.Sizeof(encoded{}))),
			Note: fmt.Sprintf("%d events (event_log, streams read it)", logN)},
	}
	if c.MaxStreams > 0 {
		// The log's encodings of the newest events, shared by the streams, and each stream's
		// own: a batch of events, their encodings and the buffer they are written from
		// (stream.go).
		per := int64(streamBatch) * (int64(unsafe.Sizeof(encoded{})+unsafe.Sizeof(event.Event{})) + 2*streamEventBytes)
		b = append(b, budget.Item{Component: "detect", Part: "event streams",
			Memory: budget.Add(streamShared*streamEventBytes, budget.Mul(int64(c.MaxStreams), per)),
			Note:   fmt.Sprintf("%d events encoded × %d B, %d streams × %s (max_streams)", streamShared, streamEventBytes, c.MaxStreams, budget.Bytes(per))})
	}
	if c.Kernel {
		// detect.kernel: the program's tables and event ring are BPF memory, beside the
		// user-space tables (which keep the reports the program does not parse).
		fs, ks := KernelSlots(Capacity(c.MaxFlows, c.Shards)), KernelSlots(Capacity(c.MaxKeys, c.Shards))
		b = append(b,
			budget.Item{Outside: true, Component: "detect", Part: "kernel flow table", Memory: budget.Mul(int64(fs), KernelFlowEntryBytes),
				Note: fmt.Sprintf("BPF array of %d slots × %d B", fs, KernelFlowEntryBytes)},
			budget.Item{Outside: true, Component: "detect", Part: "kernel switch-key table", Memory: budget.Mul(int64(ks), KernelKeyEntryBytes),
				Note: fmt.Sprintf("BPF array of %d slots × %d B", ks, KernelKeyEntryBytes)},
			budget.Item{Outside: true, Component: "detect", Part: "kernel event ring", Memory: kernelEventRing, Note: "BPF ring buffer"})
	}
	if ringConsumers > 0 {
		b = append(b, budget.Item{Component: "event bus", Part: "rings", Memory: budget.Mul(int64(ringConsumers), event.RingBytes(c.Ring)),
			Note: fmt.Sprintf("%d consumers × %d events (detect.ring)", ringConsumers, c.Ring)})
	}
	return b
}
