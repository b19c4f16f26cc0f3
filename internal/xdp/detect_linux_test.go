package xdp

import (
	"encoding/binary"
	"fmt"
	"golang.org/x/sys/unix"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/gen"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// loadDetect loads the program for port 32766 with a new detection state, both closed when
// tb ends.
func loadDetect(tb testing.TB, d Detect) (*ebpf.Collection, *DetectState) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	if d.MaxFlows == 0 {
		d.MaxFlows, d.MaxKeys = 4096, 4096
	}
	if d.DSCP == nil {
		d.DSCP, d.Probe, d.GPEPort, d.GenevePort = []DSCPMatch{{0x17, 0x3f}, {0x01, 0x01}}, true, 4790, 6081
	}
	st, err := NewDetectState(d)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	coll, err := load(32766, Options{Detect: st})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(coll.Close)
	return coll, st
}

// reportFrame wraps a report datagram into an Ethernet/IPv4/UDP frame to port 32766.
func reportFrame(p []byte) []byte {
	f := make([]byte, 0, 42+len(p))
	f = append(f, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00)
	ip := []byte{0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1}
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(p)))
	f = append(f, ip...)
	udp := []byte{0x9c, 0x40, 0x7f, 0xfe, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(p)))
	f = append(f, udp...)
	return append(f, p...)
}

// streamShape is a stream's report format and INT version.
type streamShape struct{ format, intVersion string }

// detectStream builds a stream of reports of shape sh (5-hop paths) over nflows flows, a
// third of them IPv6 and half UDP, with path changes, sequence gaps, drops and values that
// cross the thresholds now and then.
func detectStream(tb testing.TB, sh streamShape, n, nflows int, seed uint64) [][]byte {
	tb.Helper()
	cfg := gen.DefaultConfig()
	cfg.Format, cfg.INTVersion = sh.format, sh.intVersion
	g, tmpl, enc := genTemplate(tb, cfg)
	rng := rand.New(rand.NewPCG(seed, 7))
	type flow struct {
		key  telemetry.FlowKey
		path [5]uint32
	}
	flows := make([]flow, nflows)
	for i := range flows {
		k, _ := g.Flow(i % g.Flows())
		k.SrcPort += uint16(i / g.Flows())
		if i%3 == 0 {
			k.IPv6 = true
			k.Src = [16]byte{0: 0xfd, 15: byte(i)}
			k.Dst = [16]byte{0: 0xfd, 1: 1, 15: byte(i)}
		}
		flows[i].key = k
		for j := range flows[i].path {
			flows[i].path[j] = uint32(1 + rng.IntN(12))
		}
	}
	seq := map[uint32]uint32{}
	var out [][]byte
	for i := 0; i < n; i++ {
		f := &flows[rng.IntN(nflows)]
		if rng.IntN(200) == 0 { // a path change
			f.path[1+rng.IntN(3)] = uint32(1 + rng.IntN(12))
		}
		r := tmpl
		r.Flow = f.key
		r.Flow.Proto = tmpl.Flow.Proto // the template's inner packet is of this protocol
		if f.key.SrcPort%2 == 0 {      // INT over UDP
			r.Flow.Proto, r.Inner.Encap, r.Inner.TCPOpts = 17, telemetry.EncapUDP, 0
		}
		r.Flags = telemetry.FlagFlow
		if rng.IntN(50) == 0 {
			r.Flags |= telemetry.FlagDrop
		}
		r.NodeID = f.path[4]
		if r.Has&telemetry.HasIngressTS != 0 {
			r.IngressTS = uint64(i) * 1000
		}
		s := seq[r.NodeID]
		if rng.IntN(100) == 0 {
			s += uint32(1 + rng.IntN(5)) // lost reports
		}
		r.Seq = s
		if sh.format == "tr2.0" {
			r.Seq &= 0x3fffff
		}
		seq[r.NodeID] = s + 1
		r.HWID = uint8(i % 2)
		int0 := 0
		if r.ReporterHop {
			int0 = 1 // the report's own hop comes first
			r.Hops[0].NodeID = r.NodeID
		}
		for j := 0; j < int(r.NHops)-int0; j++ {
			h := &r.Hops[int(r.NHops)-1-j] // newest first
			h.NodeID = f.path[j]
			big := uint32(0)
			if rng.IntN(40) == 0 {
				big = 200
			}
			h.HopLatency = 1000 + uint32(rng.IntN(80)) + big*10
			h.QueueID = uint16(rng.IntN(2))
			h.QueueOccupancy = 20 + uint32(rng.IntN(60)) + big
			h.TxUtil = uint32(rng.IntN(100))
			h.EgressPort = uint32(1 + rng.IntN(3))
			h.EgressTS = uint64(i)*1000 + uint64(j)
			if sh.intVersion == "1.0" {
				h.EgressTS &= 0xffffffff
			}
			if rng.IntN(100) == 0 {
				h.Fields &^= telemetry.FTxUtil
			} else {
				h.Fields |= telemetry.FTxUtil
			}
		}
		b, err := enc.Append(nil, &r)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// keyed are events grouped by their key, each key's in order.
type keyed map[string][]string

func (k keyed) add(e *event.Event) {
	key := fmt.Sprintf("%s %+v", e.Measurement, e.Key)
	k[key] = append(k[key], fmt.Sprintf("%s %s prev=%d value=%d thr=%d dev=%d path=%v", e.Kind, e.Scope, e.Prev, e.Value, e.Threshold, e.DevTime, e.PathList()))
}

// drainKernel reads the kernel's events into k until the ring is empty.
func drainKernel(tb testing.TB, st *DetectState, buf []Event, k keyed) {
	var ev event.Event
	for {
		n, err := st.Read(buf, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if n == 0 {
			return
		}
		for i := range buf[:n] {
			buf[i].ToEvent(&ev, 0)
			k.add(&ev)
		}
	}
}

// setKernelRules copies the detector's rules into the kernel's.
func setKernelRules(tb testing.TB, d *detect.Detector, st *DetectState) {
	var ch, ab [event.NumMeasurements]uint64
	for m := range ch {
		ch[m], ab[m] = ^uint64(0), ^uint64(0)
		if v, on := d.Threshold(event.KindChange, event.Measurement(m)); on {
			ch[m] = v
		}
		if v, on := d.Threshold(event.KindAbove, event.Measurement(m)); on {
			ab[m] = v
		}
	}
	if err := st.WriteRules(&ch, &ab); err != nil {
		tb.Fatal(err)
	}
}

// TestKernelDetectSame runs one stream of reports, with path changes, sequence gaps, drops,
// threshold crossings and a change of the rules half way, through package detect and
// through the XDP program's detector: the events must be the same, key by key in order.
func TestKernelDetectSame(t *testing.T) {
	for _, sh := range []streamShape{{"tr2.0", "2.x"}, {"tr1.0", "1.0"}, {"tr0.5", "1.0"}, {"tr2.0", "1.0"}} {
		t.Run(sh.format+"/int"+sh.intVersion, func(t *testing.T) { testKernelDetectSame(t, sh) })
	}
}

func testKernelDetectSame(t *testing.T, sh streamShape) {
	coll, st := loadDetect(t, Detect{})
	prog := coll.Programs[ProgramName]
	cfg := detect.DefaultConfig()
	cfg.Above = detect.Levels{"flow_latency": 5600, "flow_hop_latency": 2000, "queue_occupancy": 150, "tx_utilization": 90}
	d := detect.New(cfg, detect.Deps{Workers: 1})
	c := d.Bus().Subscribe("test", 1<<20)
	setKernelRules(t, d, st)
	dec, err := wire.NewDecoder(wire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	stream := detectStream(t, sh, 20000, 300, 1)
	user, kern := keyed{}, keyed{}
	evs := make([]Event, 1024)
	for i, b := range stream {
		if i == len(stream)/2 {
			d.SetThreshold(event.KindChange, event.QueueOccupancy, 20)
			d.ClearThreshold(event.KindAbove, event.TxUtilization)
			d.SetThreshold(event.KindAbove, event.FlowLatency, 5500)
			setKernelRules(t, d, st)
		}
		ret, err := prog.Run(&ebpf.RunOptions{Data: reportFrame(b)})
		if err != nil {
			t.Fatal(err)
		}
		if ret != xdpDrop {
			_, l, _ := st.Counts()
			t.Fatalf("report %d: action %d, want XDP_DROP (detected in the kernel); lifted %v\n%x", i, ret, l, b)
		}
		rs, errs := dec.DecodeAll(wire.InputReport, b)
		if len(errs) > 0 || len(rs) != 1 {
			t.Fatalf("report %d: %v", i, errs)
		}
		rs[0].RecvTime = int64(i)
		d.Process(0, &rs[0])
		if i%64 == 0 || i == len(stream)-1 {
			drainKernel(t, st, evs, kern)
		}
	}
	buf := make([]event.Event, 4096)
	for {
		n := c.Poll(buf)
		if n == 0 {
			break
		}
		for i := range buf[:n] {
			user.add(&buf[i])
		}
	}
	cnt, lifts, err := st.Counts()
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Reports != uint64(len(stream)) || lifts != [NumLifts]uint64{} || cnt.RingFull != 0 || cnt.TableFull != 0 {
		t.Errorf("kernel detected %d reports of %d; lifted %v; ring full %d, table full %d", cnt.Reports, len(stream), lifts, cnt.RingFull, cnt.TableFull)
	}
	d.Flush(0)
	if us := d.Stats(); us.Values != cnt.Values {
		t.Errorf("values seen: kernel %d, user space %d", cnt.Values, us.Values)
	}
	nu, nk := 0, 0
	for k, v := range user {
		nu += len(v)
		if !slices.Equal(v, kern[k]) {
			t.Errorf("%s:\nuser space %q\nkernel     %q", k, v, kern[k])
		}
	}
	for k, v := range kern {
		nk += len(v)
		if user[k] == nil {
			t.Errorf("%s: only the kernel: %q", k, v)
		}
	}
	t.Logf("%d events over %d keys (kernel %d); counts %+v", nu, len(user), nk, cnt)
	if nu < 1000 {
		t.Errorf("only %d events: the stream does not exercise the rules", nu)
	}
}

// TestKernelLayouts checks that the Go mirrors of the program's structures have their sizes
// (the object's BTF): a field added on one side only would shift every field after it.
func TestKernelLayouts(t *testing.T) {
	spec, err := loadIntake()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m        string
		key, val uintptr
	}{
		{intakeMapD_flows, 4, unsafe.Sizeof(KernelFlow{})},
		{intakeMapD_keys, 4, unsafe.Sizeof(KernelKeyEntry{})},
		{intakeMapPbufs, 4, pbufData + unsafe.Sizeof(kRep{}) + 16},
	} {
		ms := spec.Maps[c.m]
		if uintptr(ms.KeySize) != c.key || uintptr(ms.ValueSize) != c.val {
			t.Errorf("%s: key %d value %d bytes in the object, %d and %d in Go", c.m, ms.KeySize, ms.ValueSize, c.key, c.val)
		}
	}
	if n := unsafe.Sizeof(Event{}); n != 128 {
		t.Errorf("Event is %d bytes, struct kev 128", n)
	}
}

// TestKernelDetectConcurrent runs the same reports through the program on both CPUs at once
// (BPF_PROG_TEST_RUN from two threads pinned apart): every flow and switch key is made once
// whichever CPU comes first (one new_key event per key and value, and the tables hold each
// key once), and what is lost to an entry another CPU holds is counted and rare.
func TestKernelDetectConcurrent(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("skipped: needs two CPUs")
	}
	coll, st := loadDetect(t, Detect{})
	prog := coll.Programs[ProgramName]
	cfg := detect.DefaultConfig()
	d := detect.New(cfg, detect.Deps{Workers: 1})
	setKernelRules(t, d, st)
	stream := detectStream(t, streamShape{"tr2.0", "2.x"}, 3000, 500, 9)
	var wg sync.WaitGroup
	for cpu := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set unix.CPUSet
			set.Set(cpu)
			unix.SchedSetaffinity(0, &set)
			for _, b := range stream {
				if _, err := prog.Run(&ebpf.RunOptions{Data: reportFrame(b)}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	kern := keyed{}
	evs := make([]Event, 1024)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		drainKernel(t, st, evs, kern)
	}
	drainKernel(t, st, evs, kern)
	newKeys := 0
	for k, v := range kern {
		if strings.HasPrefix(k, "flow_hop_latency ") || strings.HasPrefix(k, "flow_latency ") {
			continue // a path change makes (flow, switch) keys anew, in the order of the reports
		}
		n := 0
		for _, e := range v {
			if strings.HasPrefix(e, "new_key ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d new_key events", k, n)
		}
		newKeys += n
	}
	flows, keys := 0, 0
	st.Flows(func(*telemetry.FlowKey, *KernelFlow) bool { flows++; return true })
	st.Keys(func(*KernelKey, *KernelKeyEntry) bool { keys++; return true })
	c, _, err := st.Counts()
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[telemetry.FlowKey]bool{}
	dec, _ := wire.NewDecoder(wire.DefaultConfig())
	for _, b := range stream {
		rs, _ := dec.DecodeAll(wire.InputReport, b)
		distinct[rs[0].Flow] = true
	}
	// An update waits a bounded time for an entry another CPU holds or is making, then is
	// lost and counted (table_full). On this VM a vCPU the host deschedules while it holds
	// one can outlast the wait: about one update in 100,000 here. More than one in 1,000 is
	// a defect.
	if c.Reports != 2*uint64(len(stream)) || c.TableFull > 2*uint64(len(stream))*11/1000 || c.RingFull != 0 || flows != len(distinct) || uint64(flows) != c.NewFlows || uint64(keys) != c.NewKeys {
		t.Errorf("counts %+v; the tables hold %d flows and %d switch keys", c, flows, keys)
	}
	t.Logf("%d keys made once each; %d flows, %d switch keys; %d updates lost to a held entry", newKeys, flows, keys, c.TableFull)
}
