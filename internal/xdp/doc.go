// Package xdp owns intake's kernel fast path (docs/xdp.md): an XDP program that parses each
// frame arriving on an interface and redirects the UDP datagrams to one port into AF_XDP
// sockets, one per receive queue, and the AF_XDP sockets themselves (UMEM, fill and rx rings),
// which a receive worker of package ingest reads in batches without a system call per
// datagram. It is INTCollector's fast path (§III: parse in XDP, hand the rest to user space)
// on commodity Linux. Everything the program does not match passes to the kernel untouched;
// every frame's outcome is counted in a per-CPU map (Outcome).
//
// The program also does work of the processors itself, so that only what changed goes up:
// with DTAStores it writes DTA reports into the stores (dta.kernel, DTA §4), and with a
// DetectState it parses reports (TR v0.5, v1.0, v2.0 carrying INT-MD v1.0 or v2.x) and runs
// package detect's event detection on them (detect.kernel, INTCollector §III-D), lifting
// only the events through a BPF ring buffer.
//
// The program is attached through a bpf_link owned by the process: when the process ends,
// crashed or not, the kernel detaches it, so no program outlives its collector.
package xdp
