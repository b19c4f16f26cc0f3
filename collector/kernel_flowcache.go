package collector

import (
	"context"
	"errors"
	"fmt"

	"github.com/intake-int/intake/flowcache"
	"github.com/intake-int/intake/ingest"
	"github.com/intake-int/intake/xdp"
)

// kernelFlowCacheComp keeps the flow cache in the kernel (flowcache.kernel, docs/flowcache.md
// "In the kernel"): at Start it creates the kernel flow cache's state and links it to the
// flow cache (whose queries, drain, ager, histograms and counters then read it) and to the
// receiver (whose report listeners' XDP programs update it). It stops after the receiver:
// the program is detached, and the kernel's last evicted records go to the sinks before the
// state is freed.
type kernelFlowCacheComp struct {
	spec xdp.FlowCache
	c    *Collector
	st   *xdp.FlowCacheState
}

// kernelFlowCache returns the component of flowcache.kernel, nil when it is off. It needs a
// listener with format report in mode xdp, whose decoder the program's parser can follow.
func (c *Collector) kernelFlowCache() (*kernelFlowCacheComp, error) {
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
		return &kernelFlowCacheComp{spec: spec, c: c}, nil
	}
	return nil, errors.New("flowcache.kernel: true: needs a listener with format report and mode xdp (its XDP program keeps the flow cache)")
}

func (k *kernelFlowCacheComp) Name() string { return "flowcache-kernel" }

func (k *kernelFlowCacheComp) Start(context.Context) error {
	st, err := xdp.NewFlowCacheState(k.spec)
	if err != nil {
		return fmt.Errorf("flowcache.kernel: %w (it needs root and Linux 5.18+)", err)
	}
	if err := k.c.FlowCache.SetKernel(kernelCache{st}); err != nil {
		st.Close()
		return fmt.Errorf("flowcache.kernel: %w", err)
	}
	k.st = st
	k.c.Receiver.SetFlowCacheState(st)
	return nil
}

func (k *kernelFlowCacheComp) Stop(context.Context) error {
	if k.st == nil {
		return nil
	}
	k.c.Receiver.SetFlowCacheState(nil)
	k.c.FlowCache.DrainNow()
	k.c.FlowCache.SetKernel(nil)
	err := k.st.Close()
	k.st = nil
	return err
}

// kernelCache is an xdp.FlowCacheState as package flowcache's Kernel.
type kernelCache struct{ *xdp.FlowCacheState }

func (k kernelCache) Counts() (flowcache.KernelCounts, error) {
	c, err := k.FlowCacheState.Counts()
	return flowcache.KernelCounts(c), err
}
