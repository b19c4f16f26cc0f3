package xdp

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/intake-int/intake/internal/flowcache"
)

// BenchmarkKernelDetect is the program's run time per report with detection in the kernel
// (BPF_PROG_TEST_RUN, one CPU): 5-hop TR v2.0 reports over 4,096 flows whose values do not
// change after the first pass, INTCollector's replay (ns/op is per report).
func BenchmarkKernelDetect(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	defer benchObject(b)()
	coll, _ := loadDetect(b, Detect{MaxFlows: 8192, MaxKeys: 8192})
	prog := coll.Programs[ProgramName]
	stream := detectStream(b, streamShape{"tr2.0", "2.x"}, 4096, 4096, 1)
	frames := make([][]byte, len(stream))
	for i, p := range stream {
		frames[i] = reportFrame(p)
		if _, err := prog.Run(&ebpf.RunOptions{Data: frames[i]}); err != nil { // the first pass: new keys
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	// Each frame repeated: BPF_PROG_TEST_RUN times the runs in the kernel, without the
	// system call per run.
	var total time.Duration
	n := 0
	for i := 0; i < b.N; i += 64 {
		ret, d, err := prog.Benchmark(frames[(i/64)%len(frames)], 64, nil)
		if err != nil || ret != xdpDrop && os.Getenv("INTAKE_BPF_OBJECT") == "" {
			b.Fatal(ret, err)
		}
		total += d * 64
		n += 64
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "bpf-ns/report")
}

// BenchmarkProgramLift is the same reports through the program without detection (mode
// xdp: parsed to the UDP header and redirected; with no AF_XDP socket here, passed): the
// base BenchmarkKernelDetect's figure includes.
func BenchmarkProgramLift(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	coll, err := load(32766, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer coll.Close()
	prog := coll.Programs[ProgramName]
	stream := detectStream(b, streamShape{"tr2.0", "2.x"}, 64, 64, 1)
	var total time.Duration
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		_, d, err := prog.Benchmark(reportFrame(stream[(i/64)%len(stream)]), 64, nil)
		if err != nil {
			b.Fatal(err)
		}
		total += d * 64
		n += 64
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "bpf-ns/report")
}

// BenchmarkHelperFloors is what each kernel helper the report program (detect.kernel,
// flowcache.kernel) and the sink program cannot do without costs on this machine, each in
// an XDP program that does only that and drops, run 64 times a call by BPF_PROG_TEST_RUN:
//
//   - drop: nothing (what BPF_PROG_TEST_RUN itself costs a run, the floor under the others
//     and under every bpf-ns/report of the benchmarks that run a frame 64 times a call);
//   - ktime: bpf_ktime_get_ns, a report's or a packet's receive time; ktime-coarse:
//     bpf_ktime_get_coarse_ns, the clock of the last tick (4 ms here: CONFIG_HZ 250);
//   - ringbuf: reserving a 320-byte record in a BPF ring buffer and submitting it
//     (BPF_RB_NO_WAKEUP), how the sink hands a packet's INT up; the ring is drained after
//     each call by a ringbuf.Reader, which only counts the records: read-ns/record is that
//     drain's wall time a record, a poll every 64 records (BenchmarkSinkFloor's reader
//     polls every 512);
//   - ringbuf-copy: the same with bpf_xdp_load_bytes copying 300 bytes of the frame into it
//     (a 5-hop INT stack of 8 fields is 236 bytes, with its packet's headers about 300);
//   - csum236: bpf_csum_diff over 236 bytes of the frame, the sum the sink takes off the
//     L4 checksum when it removes a 5-hop stack;
//   - adjust: bpf_xdp_adjust_head by 236 bytes and back, the sink's removal of the stack.
//
// docs/xdp.md and docs/sink.md set the targets of issues 27 and 29 against these.
func BenchmarkHelperFloors(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	ring, rd := benchRing(b)
	frame := make([]byte, 400)
	drop := asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}
	reserve := func(copyBytes int32) asm.Instructions {
		ins := asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.LoadMapPtr(asm.R1, ring.FD()),
			asm.Mov.Imm(asm.R2, 320),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
		}
		if copyBytes > 0 {
			ins = append(ins,
				asm.Mov.Reg(asm.R1, asm.R6),
				asm.Mov.Imm(asm.R2, 0),
				asm.Mov.Reg(asm.R3, asm.R7),
				asm.Mov.Imm(asm.R4, copyBytes),
				asm.FnXdpLoadBytes.Call(),
			)
		}
		return append(ins,
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
			asm.FnRingbufSubmit.Call(),
			asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("out"),
			asm.Return(),
		)
	}
	for _, c := range []struct {
		name string
		ins  asm.Instructions
	}{
		{"drop", drop},
		{"ktime", append(asm.Instructions{asm.FnKtimeGetNs.Call()}, drop...)},
		{"ktime-coarse", append(asm.Instructions{asm.FnKtimeGetCoarseNs.Call()}, drop...)},
		{"ringbuf", reserve(0)},
		{"ringbuf-copy", reserve(300)},
		{"csum236", asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 300),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.Mov.Reg(asm.R1, asm.R2),
			asm.Mov.Imm(asm.R2, 236),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, 0),
			asm.Mov.Imm(asm.R5, 0),
			asm.FnCsumDiff.Call(),
			asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("out"),
			asm.Return(),
		}},
		{"adjust", asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, 236),
			asm.FnXdpAdjustHead.Call(),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, -236),
			asm.FnXdpAdjustHead.Call(),
			asm.Mov.Imm(asm.R0, xdpDrop),
			asm.Return(),
		}},
	} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: c.ins})
		if err != nil {
			b.Fatal(c.name, loadError(err))
		}
		b.Cleanup(func() { prog.Close() })
		b.Run(c.name, func(b *testing.B) {
			var total, read time.Duration
			n, records := 0, 0
			var rec ringbuf.Record
			for i := 0; i < b.N; i += 64 {
				ret, d, err := prog.Benchmark(frame, 64, nil)
				if err != nil || ret != xdpDrop {
					b.Fatal(ret, err)
				}
				total += d * 64
				n += 64
				r0 := time.Now()
				rd.SetDeadline(r0)
				for {
					if err := rd.ReadInto(&rec); err != nil {
						if !errors.Is(err, os.ErrDeadlineExceeded) {
							b.Fatal(err)
						}
						break
					}
					records++
				}
				read += time.Since(r0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n), "bpf-ns/run")
			if strings.HasPrefix(c.name, "ringbuf") {
				if records != n {
					b.Fatalf("%d records of %d runs", records, n)
				}
				b.ReportMetric(float64(read.Nanoseconds())/float64(n), "read-ns/record")
			}
		})
	}
}

// BenchmarkStateFloor is the least a kernel flow cache does for a 5-hop report of 8 fields
// in the steady state, in any design: read the clock, and add the report's 40 values into
// its flow's cumulative values (40 words, and the time, in a row of an array indexed by the
// flow, where a real table hashes a key and probes). Nothing is compared, no event or
// histogram kept, nothing parsed: the frame's first two bytes are its flow, its values
// start at byte 20. The frames go round the flows one run a call, as on a wire, and
// bpf-ns/report is the kernel's own accounting of the program's run time
// (kernel.bpf_stats_enabled), as bench ingest reads it; drop is an XDP program that only
// drops, and program, the report program itself with detection and the flow cache on over
// gen's reports, are measured the same way in the same run. Issue 27's target is at most
// 150 ns a report with detection and the flow cache both on.
func BenchmarkStateFloor(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	const values, rowBytes = 40, 8 * 48 // 40 values and the time, in 6 cache lines
	rows, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: rowBytes, MaxEntries: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	// fc(n, false) adds n values into the flow's row; fc(0, false) only writes the time into
	// it, the least any per-flow state with exact times costs. fc(n, true) reads the n values
	// and writes their sum beside the time instead: the least a path for reports that repeat
	// their flow's last values could do (a digest of the values, kept in the flow's row).
	fc := func(n int16, digest bool) asm.Instructions {
		ins := asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnKtimeGetNs.Call(),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.LoadMem(asm.R8, asm.R6, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R8),
			asm.Add.Imm(asm.R4, 20+4*values),
			asm.JGT.Reg(asm.R4, asm.R3, "out"),
			asm.LoadMem(asm.R1, asm.R8, 0, asm.Half),
			asm.And.Imm(asm.R1, 4095),
			asm.StoreMem(asm.RFP, -4, asm.R1, asm.Word),
			asm.LoadMapPtr(asm.R1, rows.FD()),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
		}
		switch {
		case digest:
			ins = append(ins, asm.Mov.Imm(asm.R2, 0))
			for i := range n {
				ins = append(ins, asm.LoadMem(asm.R1, asm.R8, 20+4*i, asm.Word), asm.Add.Reg(asm.R2, asm.R1))
			}
			ins = append(ins, asm.StoreMem(asm.R0, 0, asm.R2, asm.DWord))
		default:
			for i := range n {
				ins = append(ins,
					asm.LoadMem(asm.R1, asm.R8, 20+4*i, asm.Word),
					asm.LoadMem(asm.R2, asm.R0, 8*i, asm.DWord),
					asm.Add.Reg(asm.R2, asm.R1),
					asm.StoreMem(asm.R0, 8*i, asm.R2, asm.DWord),
				)
			}
		}
		return append(ins,
			asm.StoreMem(asm.R0, 8*values, asm.R7, asm.DWord),
			asm.Mov.Imm(asm.R0, xdpDrop).WithSymbol("out"),
			asm.Return(),
		)
	}
	stats, err := EnableRunStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	// The program itself, detection and the flow cache both on, over BenchmarkKernelFlowCache's
	// frames (gen's 5-hop TR v2.0 reports of 4,096 flows), their first reports run already.
	cfg := flowcache.DefaultConfig()
	coll, _ := loadFlowCache(b, &cfg, true)
	program := coll.Programs[ProgramName]
	reports := steadyFrames(b)
	for _, f := range reports {
		if _, err := program.Run(&ebpf.RunOptions{Data: f}); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		ins   asm.Instructions
		flows int
	}{
		{"drop", asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}, 4096},
		{"flows=16", fc(values, false), 16},
		{"flows=4096", fc(values, false), 4096},
		{"flows=4096/time-only", fc(0, false), 4096},
		{"flows=4096/digest", fc(values, true), 4096},
		{"program", nil, 4096},
	} {
		prog, frames := program, reports
		if c.ins != nil {
			p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: c.ins})
			if err != nil {
				b.Fatal(c.name, loadError(err))
			}
			b.Cleanup(func() { p.Close() })
			prog, frames = p, make([][]byte, c.flows)
			rows := rand.New(rand.NewPCG(27, 1)).Perm(4096) // rows where a hash would put them, not in order
			for f := range frames {
				frames[f] = make([]byte, 300)
				frames[f][0], frames[f][1] = byte(rows[f]), byte(rows[f]>>8)
				for i := 20; i < len(frames[f]); i++ {
					frames[f][i] = byte(i * f)
				}
			}
		}
		b.Run(c.name, func(b *testing.B) {
			st0, _ := prog.Stats()
			for i := range b.N {
				if ret, err := prog.Run(&ebpf.RunOptions{Data: frames[i%len(frames)]}); err != nil || ret != xdpDrop {
					b.Fatal(ret, err)
				}
			}
			st1, _ := prog.Stats()
			b.ReportMetric(float64(st1.Runtime-st0.Runtime)/float64(max(st1.RunCount-st0.RunCount, 1)), "bpf-ns/report")
		})
	}
}

// BenchmarkSinkFloor is the least the INT sink's program does for a packet carrying a 5-hop
// INT stack of 8 fields (236 bytes), in any design: read the clock, reserve a ring record,
// copy the stack and the headers before it (280 bytes) into it and submit it, sum the stack
// for the L4 checksum, and move the packet's start past it. Nothing is parsed or checked,
// no header moved or fixed. One run a call, the program's run time from the kernel's
// accounting (kernel.bpf_stats_enabled), as bench sink reads it; pass, an XDP program that
// only passes, measured the same way in the same run, is the floor bench sink subtracts.
// read-ns/record is what a ringbuf.Reader that only counts the records costs a record in
// user space, drained every 512 packets. Issue 29's target is at most 200 ns of the
// machine's CPU a packet above the floor, the ring's reader included.
func BenchmarkSinkFloor(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	const stack, copied = 236, 280
	ring, rd := benchRing(b)
	scratch, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8 + copied, MaxEntries: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer scratch.Close()
	// The stack summed for the L4 checksum, the packet's start moved past it.
	strip := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 44+stack),
		asm.JGT.Reg(asm.R4, asm.R3, "out"),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, 44),
		asm.Mov.Imm(asm.R2, stack),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnCsumDiff.Call(),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, stack),
		asm.FnXdpAdjustHead.Call(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("out"),
		asm.Return(),
	}
	// sink(true) hands each packet up in a ring record of its own; sink(false) copies it
	// into a per-CPU buffer instead, the least a design that batches records could do.
	sink := func(ringed bool) asm.Instructions {
		ins := asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.FnKtimeGetNs.Call(),
			asm.Mov.Reg(asm.R8, asm.R0),
		}
		if ringed {
			ins = append(ins,
				asm.LoadMapPtr(asm.R1, ring.FD()),
				asm.Mov.Imm(asm.R2, 8+copied),
				asm.Mov.Imm(asm.R3, 0),
				asm.FnRingbufReserve.Call(),
			)
		} else {
			ins = append(ins,
				asm.StoreImm(asm.RFP, -4, 0, asm.Word),
				asm.LoadMapPtr(asm.R1, scratch.FD()),
				asm.Mov.Reg(asm.R2, asm.RFP),
				asm.Add.Imm(asm.R2, -4),
				asm.FnMapLookupElem.Call(),
			)
		}
		ins = append(ins,
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Reg(asm.R7, asm.R0),
			asm.StoreMem(asm.R7, 0, asm.R8, asm.DWord),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Mov.Imm(asm.R2, 0),
			asm.Mov.Reg(asm.R3, asm.R7),
			asm.Add.Imm(asm.R3, 8),
			asm.Mov.Imm(asm.R4, copied),
			asm.FnXdpLoadBytes.Call(),
		)
		if ringed {
			ins = append(ins,
				asm.Mov.Reg(asm.R1, asm.R7),
				asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
				asm.FnRingbufSubmit.Call(),
			)
		}
		return append(ins, strip...)
	}
	stats, err := EnableRunStats()
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	frame := make([]byte, 400)
	for _, c := range []struct {
		name string
		ins  asm.Instructions
	}{{"pass", asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()}}, {"sink", sink(true)}, {"sink-unringed", sink(false)}} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: c.ins})
		if err != nil {
			b.Fatal(c.name, loadError(err))
		}
		b.Cleanup(func() { prog.Close() })
		b.Run(c.name, func(b *testing.B) {
			var rec ringbuf.Record
			var read time.Duration
			records := 0
			st0, _ := prog.Stats()
			for i := range b.N {
				if ret, err := prog.Run(&ebpf.RunOptions{Data: frame}); err != nil || ret != xdpPass {
					b.Fatal(ret, err)
				}
				if i%512 == 511 || i == b.N-1 {
					r0 := time.Now()
					rd.SetDeadline(r0)
					for rd.ReadInto(&rec) == nil {
						records++
					}
					read += time.Since(r0)
				}
			}
			st1, _ := prog.Stats()
			b.ReportMetric(float64(st1.Runtime-st0.Runtime)/float64(max(st1.RunCount-st0.RunCount, 1)), "bpf-ns/packet")
			if c.name == "sink" {
				if records != b.N {
					b.Fatalf("%d records of %d packets", records, b.N)
				}
				b.ReportMetric(float64(read.Nanoseconds())/float64(b.N), "read-ns/record")
			}
		})
	}
}

// benchRing is a 4 MiB BPF ring buffer and its reader, closed with b.
func benchRing(b *testing.B) (*ebpf.Map, *ringbuf.Reader) {
	ring, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: 1 << 22})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ring.Close() })
	rd, err := ringbuf.NewReader(ring)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rd.Close() })
	return ring, rd
}
