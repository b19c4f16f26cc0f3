package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/intake-int/intake/internal/bench"
	"github.com/intake-int/intake/internal/ingest"
)

// writeIngestResult writes r as `intake bench ingest` prints it; baseline says a baseline
// phase ran.
func writeIngestResult(w io.Writer, r *bench.IngestResult, baseline bool) {
	fmt.Fprintf(w, "bench ingest: %s, %.3g reports/datagram, %s per phase, %d collector sockets, processors: %s\n",
		r.Format, r.ReportsPerDatagram, seconds(r.DurationS), r.Sockets, processors(r.Processors))
	writePhase(w, "  ", "drain", &r.Drain)
	writePhase(w, "  ", "collector", &r.Full)
	fmt.Fprintf(w, "  ratio      %.3f (collector / drain); CPU per datagram: drain %.1f ns; whole machine per report (collector phase): %.1f ns\n",
		r.Ratio, r.DrainCPUNsPerDatagram, r.SystemCPUNsPerReport)
	fmt.Fprintf(w, "  CPU share  collector %.2f of a CPU, %.2f needed to take all that was sent; the machine %.0f%% busy (collector phase)\n",
		r.CollectorCPUShare, r.CollectorCPUsNeeded, 100*r.SystemBusy)
	if r.Starved() {
		fmt.Fprintf(w, "  note: the collector lost %.1f%% with %.2f of the %.2f CPUs it needed on a machine %.0f%% busy: it was short of CPU (the sender and the kernel's delivery took it), so the ratio measures this machine's contention as much as the collector\n",
			100*r.Loss, r.CollectorCPUShare, r.CollectorCPUsNeeded, 100*r.SystemBusy)
	}
	if r.TooSlow() {
		workers := fmt.Sprintf("%.0f sockets' workers", r.WorkerCPUs())
		if r.WorkerCPUs() == 1 {
			workers = "1 socket's worker"
		}
		fmt.Fprintf(w, "  note: the collector lost %.1f%%: taking all that was sent would need %.2f CPUs at its CPU per report, more than its %s can use (one CPU each)\n",
			100*r.Loss, r.CollectorCPUsNeeded, workers)
	}
	if baseline {
		fmt.Fprintf(w, "  baseline   %.1f CPU ns/datagram (%d of %d datagrams); drain / baseline %.3f\n",
			r.BaselineCPUNsPerDatagram, r.Base.Received, r.Base.Sent.Datagrams, r.DrainVsBaseline)
	}
}

// writeModeComparison writes mc as `intake bench ingest --mode xdp` prints it.
func writeModeComparison(w io.Writer, mc *bench.ModeComparison) {
	fmt.Fprintf(w, "bench ingest: %s across a veth pair, %.3g reports/datagram, %s per phase, processors: %s\n",
		mc.XDP.Format, mc.XDP.ReportsPerDatagram, seconds(mc.XDP.DurationS), processors(mc.XDP.Processors))
	for _, m := range []struct {
		name string
		r    *bench.IngestResult
	}{{"socket", &mc.Socket}, {"xdp (" + mc.XDPAttach + ")", &mc.XDP}} {
		fmt.Fprintf(w, "  %s mode, %d workers:\n", m.name, m.r.Sockets)
		writePhase(w, "    ", "drain", &m.r.Drain)
		writePhase(w, "    ", "collector", &m.r.Full)
		fmt.Fprintf(w, "    ratio      %.3f (collector / drain); drain CPU %.1f ns/datagram\n", m.r.Ratio, m.r.DrainCPUNsPerDatagram)
	}
	fmt.Fprintf(w, "  socket / xdp CPU: drain %.2fx per datagram, collector %.2fx per report; collector reports/s xdp / socket %.2f\n",
		mc.DrainCPURatio, mc.CollectorCPURatio, mc.RateRatio)
	fmt.Fprintf(w, "  XDP program: %.1f ns per frame (collector phase); DTA reports written in the kernel: %d\n", mc.BPFNsPerFrame, mc.KernelDTAReports)
}

// writeKernelComparison writes kc as `intake bench ingest --mode kernel` prints it.
func writeKernelComparison(w io.Writer, kc *bench.KernelComparison) {
	fmt.Fprintf(w, "bench ingest: %s across a veth pair, %.3g reports/datagram, %s per phase, %d rounds (medians by machine CPU per report)\n",
		kc.Format, kc.ReportsPerDatagram, seconds(kc.DurationS), kc.Rounds)
	fmt.Fprintf(w, "  processors in every mode: %s", processors(kc.Processors))
	if len(kc.ProcessorsOff) > 0 {
		fmt.Fprintf(w, "; turned off in every mode (they need every report in user space): %s", processors(kc.ProcessorsOff))
	}
	kernel := "detect.kernel"
	if slices.Contains(kc.Processors, "flowcache") {
		kernel += " and flowcache.kernel"
	}
	fmt.Fprintf(w, "\n  floor: an XDP program that counts and drops every frame (%s), no collector; kernel: xdp mode with %s (%s)\n",
		kc.FloorAttach, kernel, kc.XDPAttach)
	fmt.Fprintf(w, "  %-8s %12s %8s %12s %12s %12s %10s %10s\n", "", "", "", "machine CPU", "above floor", "collector", "BPF", "reports")
	fmt.Fprintf(w, "  %-8s %12s %8s %12s %12s %12s %10s %10s\n", "mode", "reports/s", "loss", "ns/report", "ns/report", "ns/report", "ns/report", "in XDP")
	for _, m := range []struct {
		name string
		c    bench.ModeCost
	}{{"floor", kc.Floor}, {ingest.ModeSocket, kc.Socket}, {ingest.ModeXDP, kc.XDP}, {bench.ModeKernel, kc.Kernel}} {
		fmt.Fprintf(w, "  %-8s %12.0f %8.4f %12.1f %12.1f %12.1f %10.1f %10d\n", m.name, m.c.ReportsPerS, m.c.Loss,
			m.c.MachineCPU, m.c.AboveFloor, m.c.CollectorCPU, m.c.BPF, m.c.KernelReports)
	}
	fmt.Fprintf(w, "  collector CPU per report socket / kernel %.2fx; machine CPU per report above the floor: socket / kernel %.2fx, xdp / kernel %.2fx\n",
		kc.CollectorCPURatio, kc.AboveFloorSocketRatio, kc.AboveFloorXDPRatio)
	if kc.Kernel.KernelReports == 0 {
		fmt.Fprintf(w, "  note: the kernel phase detected no report in the XDP program (outcome kernel 0): detect.kernel was not in effect, and its figures are xdp mode's\n")
	}
}

func writePhase(w io.Writer, indent, name string, r *bench.Phase) {
	fmt.Fprintf(w, "%s%-10s %12.0f reports/s  %8.1f CPU ns/report  loss %.4f  (%d of %d datagrams; drops: %d socket, %d host backlog; %d decode errors)\n",
		indent, name, r.ReportsPS, r.CPUPerReport(), r.Loss, r.Received, r.Sent.Datagrams, r.Kernel, r.Backlog, r.Errors)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func processors(ps []string) string {
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}
