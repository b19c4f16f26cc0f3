package xdp

import (
	"os"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
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

// BenchmarkProgramFloor is what BPF_PROG_TEST_RUN itself costs per run here, the floor
// under the other benchmarks' bpf-ns/report: an XDP program that only drops (drop), and one
// that reads the clock first (ktime: bpf_ktime_get_ns, which the report programs call once
// a report for its receive time). On the development VM (Firecracker, 6.18): 54 and 116 ns.
func BenchmarkProgramFloor(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("skipped: loading a BPF program needs root (CAP_BPF)")
	}
	frame := reportFrame(detectStream(b, streamShape{"tr2.0", "2.x"}, 1, 1, 1)[0])
	for _, c := range []struct {
		name string
		ins  asm.Instructions
	}{
		{"drop", asm.Instructions{asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}},
		{"ktime", asm.Instructions{asm.FnKtimeGetNs.Call(), asm.Mov.Imm(asm.R0, xdpDrop), asm.Return()}},
	} {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "GPL", Instructions: c.ins})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { prog.Close() })
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for i := 0; i < b.N; i += 64 {
				ret, d, err := prog.Benchmark(frame, 64, nil)
				if err != nil || ret != xdpDrop {
					b.Fatal(ret, err)
				}
				total += d * 64
				n += 64
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(n), "bpf-ns/report")
		})
	}
}
