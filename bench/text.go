package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteText writes r as `intake bench ingest` prints it; baseline says a baseline phase ran.
func (r IngestResult) WriteText(w io.Writer, baseline bool) {
	fmt.Fprintf(w, "bench ingest: %s, %.3g reports/datagram, %s per phase, %d collector sockets, processors: %s\n",
		r.Format, r.ReportsPerDatagram, seconds(r.DurationS), r.Sockets, processors(r.Processors))
	writePhase(w, "  ", "drain", r.Drain)
	writePhase(w, "  ", "collector", r.Full)
	fmt.Fprintf(w, "  ratio      %.3f (collector / drain); CPU per datagram: drain %.1f ns; whole machine per report (collector phase): %.1f ns\n",
		r.Ratio, r.DrainCPUNsPerDatagram, r.SystemCPUNsPerReport)
	if baseline {
		fmt.Fprintf(w, "  baseline   %.1f CPU ns/datagram (%d of %d datagrams); drain / baseline %.3f\n",
			r.BaselineCPUNsPerDatagram, r.Base.Received, r.Base.Sent.Datagrams, r.DrainVsBaseline)
	}
}

// WriteText writes mc as `intake bench ingest --mode xdp` prints it.
func (mc ModeComparison) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench ingest: %s across a veth pair, %.3g reports/datagram, %s per phase, processors: %s\n",
		mc.XDP.Format, mc.XDP.ReportsPerDatagram, seconds(mc.XDP.DurationS), processors(mc.XDP.Processors))
	for _, m := range []struct {
		name string
		r    IngestResult
	}{{"socket", mc.Socket}, {"xdp (" + mc.XDPAttach + ")", mc.XDP}} {
		fmt.Fprintf(w, "  %s mode, %d workers:\n", m.name, m.r.Sockets)
		writePhase(w, "    ", "drain", m.r.Drain)
		writePhase(w, "    ", "collector", m.r.Full)
		fmt.Fprintf(w, "    ratio      %.3f (collector / drain); drain CPU %.1f ns/datagram\n", m.r.Ratio, m.r.DrainCPUNsPerDatagram)
	}
	fmt.Fprintf(w, "  socket / xdp CPU: drain %.2fx per datagram, collector %.2fx per report; collector reports/s xdp / socket %.2f\n",
		mc.DrainCPURatio, mc.CollectorCPURatio, mc.RateRatio)
	fmt.Fprintf(w, "  XDP program: %.1f ns per frame (collector phase); DTA reports written in the kernel: %d\n", mc.BPFNsPerFrame, mc.KernelDTAReports)
}

func writePhase(w io.Writer, indent, name string, r Phase) {
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
