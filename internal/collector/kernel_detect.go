package collector

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/xdp"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// kernelDetect is the detector's state in the kernel (detect.kernel, docs/xdp.md "Detection
// in the kernel"), the detector's detect.KernelState: the detector opens it at its Start
// (it is then created, and its events published on the bus until Close) and closes it at
// its Stop. The receiver, which starts after the detector and stops before, hands it to its
// report listeners' XDP programs, which detect with it.
type kernelDetect struct {
	spec xdp.Detect
	bus  *event.Bus
	log  *slog.Logger
	st   *xdp.DetectState
	done chan struct{}
	wg   sync.WaitGroup
}

// kernelDetect returns the state of detect.kernel, nil when it is off. It needs a
// listener with format report in mode xdp, whose decoder the program's parser can follow.
func (c *Collector) kernelDetect() (*kernelDetect, error) {
	cfg := &c.Config.Detect
	if !cfg.Enabled || !cfg.Kernel {
		return nil, nil
	}
	in := c.Config.Ingest()
	for i, l := range in.Listeners {
		if l.Format != "report" || l.Mode != ingest.ModeXDP {
			continue
		}
		p, err := kernelParser("detect.kernel", "detection", i, in.DecoderFor(i))
		if err != nil {
			return nil, err
		}
		spec := xdp.Detect{MaxFlows: detect.Capacity(cfg.MaxFlows, cfg.Shards), MaxKeys: detect.Capacity(cfg.MaxKeys, cfg.Shards),
			Lift: c.needsEveryReport(), Parser: p}
		return &kernelDetect{spec: spec, bus: c.Bus, log: c.log}, nil
	}
	return nil, errors.New("detect.kernel: true: needs a listener with format report and mode xdp (its XDP program detects)")
}

// kernelParser is what the XDP program's report parser follows of listener i's decoder dec
// (key: the configuration key that asks for it, and what: the processor, for the errors):
// where it looks for INT. It refuses a decoder the parser cannot follow.
func kernelParser(key, what string, i int, dec wire.Config) (xdp.Parser, error) {
	switch {
	case dec.Quirks.HostINT || dec.TCPShimBeforeOptions:
		return xdp.Parser{}, fmt.Errorf("%s: listeners[%d]: the decoder reads INT before the TCP options (quirks.host_int or tcp_shim_before_options); the XDP parser reads it after them only: use %s in user space (%s: false)", key, i, what, key)
	case len(dec.DSCP) > xdp.MaxDSCP:
		return xdp.Parser{}, fmt.Errorf("%s: listeners[%d]: decoder.dscp has %d entries: the XDP parser takes at most %d", key, i, len(dec.DSCP), xdp.MaxDSCP)
	}
	p := xdp.Parser{Probe: dec.ProbeShim, Quirks: dec.Quirks != (wire.Quirks{}), GPEPort: dec.GPEPort, GenevePort: dec.GenevePort, INTPort: dec.INTPort}
	for _, m := range dec.DSCP {
		p.DSCP = append(p.DSCP, xdp.DSCPMatch{Value: m.Value, Mask: m.Mask})
	}
	return p, nil
}

// needsEveryReport reports whether a processor in user space reads every report (the flow
// cache unless flowcache.kernel, the detector unless detect.kernel, DTA's translation of
// INT, Kafka's reports): then the program lifts the reports it has handled too, marked so
// that the processors whose work it did skip them.
func (c *Collector) needsEveryReport() bool {
	fc, det := &c.Config.FlowCache, &c.Config.Detect
	return fc.Enabled && !fc.Kernel || det.Enabled && !det.Kernel || c.Config.DTA.Enabled || c.Kafka != nil && c.Kafka.Reports() != nil
}

// Open creates the state and starts publishing its events (detect.KernelState).
func (k *kernelDetect) Open() (detect.Kernel, error) {
	st, err := xdp.NewDetectState(k.spec)
	if err != nil {
		return nil, fmt.Errorf("%w (it needs root and a kernel with BPF ring buffers, 5.8+)", err)
	}
	k.st = st
	k.done = make(chan struct{})
	k.wg.Add(1)
	go k.read()
	return kernelDetector{st}, nil
}

// Close stops publishing and frees the state (detect.KernelState); the detector has taken
// its last counters and stopped using it.
func (k *kernelDetect) Close() error {
	if k.st == nil {
		return nil
	}
	close(k.done)
	k.wg.Wait()
	err := k.st.Close()
	k.st = nil
	return err
}

// state is what the receiver's report listeners' programs detect with: nil unless open.
func (k *kernelDetect) state() *xdp.DetectState {
	if k == nil {
		return nil
	}
	return k.st
}

// kernelPoll and kernelPollIdle bound how long the reader waits before it looks at an empty
// event ring again: the program does not wake it (xdp.DetectState.Read). While events come
// it looks every kernelPoll (the bus's consumers linger about as long); each look that finds
// none doubles the wait, up to kernelPollIdle, so that a quiet network (steady values raise
// no events) costs a few dozen wake-ups a second, and the first event after a quiet spell
// reaches the bus at most kernelPollIdle late.
const (
	kernelPoll     = 2 * time.Millisecond
	kernelPollIdle = 32 * time.Millisecond
)

// read publishes the program's events on the bus until Stop.
func (k *kernelDetect) read() {
	defer k.wg.Done()
	pub := k.bus.NewPublisher()
	kev := make([]xdp.Event, 256)
	evs := make([]event.Event, 256)
	off, offAt := xdp.MonoOffset(), time.Now()
	wait := kernelPoll
	for {
		select {
		case <-k.done:
			return
		default:
		}
		n, err := k.st.Read(kev, wait)
		if err != nil {
			if !errors.Is(err, xdp.ErrClosed) {
				k.log.Error("detect.kernel: reading the event ring", "err", err)
			}
			return
		}
		if n == 0 {
			wait = min(2*wait, kernelPollIdle)
			continue
		}
		wait = kernelPoll
		if time.Since(offAt) > time.Second { // the clocks' offset moves only when the real-time clock is set
			off, offAt = xdp.MonoOffset(), time.Now()
		}
		for i := range kev[:n] {
			kev[i].ToEvent(&evs[i], off)
		}
		pub.Publish(evs[:n])
		pub.Wake()
	}
}

// kernelDetector is an xdp.DetectState as package detect's Kernel: its rules, counters and tables, times in Unix ns.
type kernelDetector struct{ st *xdp.DetectState }

func (r kernelDetector) WriteRules(change, above *[event.NumMeasurements]uint64) error {
	return r.st.WriteRules(change, above)
}

func (r kernelDetector) Counts() (detect.KernelCounts, error) {
	c, lifts, err := r.st.Counts()
	kc := detect.KernelCounts{Reports: c.Reports, Values: c.Values, RingFull: c.RingFull, TableFull: c.TableFull,
		NewFlows: c.NewFlows, NewKeys: c.NewKeys, Lifted: make(map[string]uint64, len(lifts))}
	copy(kc.Events[:], c.ByKind[:])
	for i, n := range lifts {
		kc.Lifted[xdp.Lift(i).String()] = n
	}
	return kc, err
}

func (r kernelDetector) Flows(fn func(*detect.KernelFlow) bool) error {
	off := xdp.MonoOffset()
	var f detect.KernelFlow
	return r.st.Flows(func(k *telemetry.FlowKey, e *xdp.KernelFlow) bool {
		kernelFlow(&f, k, e, off)
		return fn(&f)
	})
}

func (r kernelDetector) Flow(k telemetry.FlowKey) (detect.KernelFlow, bool) {
	var f detect.KernelFlow
	e, ok := r.st.Flow(k)
	if ok {
		kernelFlow(&f, &k, &e, xdp.MonoOffset())
	}
	return f, ok
}

// kernelFlow converts the program's flow entry e of flow k into f, its times into Unix ns
// with off (xdp.MonoOffset).
func kernelFlow(f *detect.KernelFlow, k *telemetry.FlowKey, e *xdp.KernelFlow, off int64) {
	*f = detect.KernelFlow{Key: *k, First: int64(e.First) + off, Last: int64(e.Last) + off, Dev: e.Dev,
		Reports: e.Reports, PathHash: e.PathHash, NPath: e.NPath, HasLat: e.HasLat != 0, HopOK: e.HopOK,
		Above: e.Above, Path: e.Path, Lat: detect.KernelVal{Ref: e.Lat[0], Cur: e.Lat[1]}}
	for i, v := range e.Hop {
		f.Hop[i] = detect.KernelVal{Ref: v[0], Cur: v[1]}
	}
}

func (r kernelDetector) DeleteFlow(k telemetry.FlowKey) error { return r.st.DeleteFlow(k) }

func (r kernelDetector) Keys(fn func(*detect.KernelKey) bool) error {
	off := xdp.MonoOffset()
	var kk detect.KernelKey
	return r.st.Keys(func(k *xdp.KernelKey, e *xdp.KernelKeyEntry) bool {
		kk = detect.KernelKey{Switch: k.Switch, ID: k.ID, Kind: k.Kind, Has: e.Has, Above: e.Above,
			Last: int64(e.Last) + off, Dev: e.Dev,
			V: [2]detect.KernelVal{{Ref: e.V[0][0], Cur: e.V[0][1]}, {Ref: e.V[1][0], Cur: e.V[1][1]}}}
		return fn(&kk)
	})
}

func (r kernelDetector) DeleteKey(k *detect.KernelKey) error {
	return r.st.DeleteKey(xdp.KernelKey{Switch: k.Switch, ID: k.ID, Kind: k.Kind})
}
