package collector

import (
	"errors"
	"fmt"

	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/xdp"
)

// kernelFlowCache is the flow cache in the kernel (flowcache.kernel, docs/flowcache.md "In
// the kernel"), the flow cache's flowcache.KernelState: the cache opens it at its Start
// (it is then created) and closes it at its Stop, after the kernel's last evicted records
// went to the sinks. The receiver, which starts after the cache and stops before, hands it
// to its report listeners' XDP programs, which update it.
type kernelFlowCache struct {
	spec xdp.FlowCache
	st   *xdp.FlowCacheState
}

// kernelFlowCache returns the state of flowcache.kernel, nil when it is off. It needs a
// listener with format report in mode xdp, whose decoder the program's parser can follow.
func (c *Collector) kernelFlowCache() (*kernelFlowCache, error) {
	cfg := &c.Config.FlowCache
	if !cfg.Enabled || !cfg.Kernel {
		return nil, nil
	}
	h := &cfg.Histograms
	if h.Bins > xdp.MaxKernelBins {
		return nil, fmt.Errorf("flowcache.kernel: histograms.bins: %d: the kernel's histograms take at most %d (a switch's three are one per-CPU BPF value of at most 32 KiB)", h.Bins, xdp.MaxKernelBins)
	}
	in := c.Config.Ingest()
	for i, l := range in.Listeners {
		if l.Format != "report" || l.Mode != ingest.ModeXDP {
			continue
		}
		parser, err := kernelParser("flowcache.kernel", "the flow cache", i, in.DecoderFor(i))
		if err != nil {
			return nil, err
		}
		spec := xdp.FlowCache{Rows: cfg.Rows, Buckets: cfg.Buckets, MaxHops: cfg.MaxHops,
			LogBins: h.Scale == "log", Bins: h.Bins, MaxSwitches: h.MaxSwitches,
			Widths:    [4]uint64{h.Width.HopLatency, h.Width.QueueOccupancy, h.Width.TxUtil, h.Width.Latency},
			EvictRing: cfg.KernelRing(), Lift: c.needsEveryReport(), Parser: parser}
		return &kernelFlowCache{spec: spec}, nil
	}
	return nil, errors.New("flowcache.kernel: true: needs a listener with format report and mode xdp (its XDP program keeps the flow cache)")
}

// Open creates the state (flowcache.KernelState).
func (k *kernelFlowCache) Open() (flowcache.Kernel, error) {
	st, err := xdp.NewFlowCacheState(k.spec)
	if err != nil {
		return nil, fmt.Errorf("%w (it needs root and Linux 5.18+)", err)
	}
	k.st = st
	return kernelCache{st}, nil
}

// Close frees the state (flowcache.KernelState).
func (k *kernelFlowCache) Close() error {
	if k.st == nil {
		return nil
	}
	err := k.st.Close()
	k.st = nil
	return err
}

// state is what the receiver's report listeners' programs update: nil unless open.
func (k *kernelFlowCache) state() *xdp.FlowCacheState {
	if k == nil {
		return nil
	}
	return k.st
}

// kernelCache is an xdp.FlowCacheState as package flowcache's Kernel.
type kernelCache struct{ *xdp.FlowCacheState }

func (k kernelCache) Counts() (flowcache.KernelCounts, error) {
	c, err := k.FlowCacheState.Counts()
	return flowcache.KernelCounts(c), err
}
