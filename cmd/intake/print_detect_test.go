package main

import (
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/detect"
)

// TestFlowStateText: `intake query flow`'s text, byte for byte: a hop whose switch has
// several keys of a kind (the largest, "max of"), one (no count) and none ("-"), and a flow
// without an end-to-end latency (no latency line).
func TestFlowStateText(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	q1, q3, b2, p7 := uint16(1), uint16(3), uint8(2), uint32(7)
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	f := detect.FlowState{Src: "10.0.0.1", Dst: "2001:db8::2", Sport: 40000, Dport: 443, Proto: 17, Path: []uint32{1, 2}, PathLen: 2,
		FlowLatency: u64(3100), Reports: 12, FirstSeen: at, LastSeen: at.Add(time.Second),
		Hops: []detect.HopState{{Hop: 1, SwitchID: 1, HopLatency: 1000}, {Hop: 2, SwitchID: 2, HopLatency: 1250000}},
		Queues: []detect.SwitchValue{{SwitchID: 1, QueueID: &q1, QueueOccupancy: u64(5)}, {SwitchID: 1, QueueID: &q3, QueueOccupancy: u64(12)},
			{SwitchID: 2, QueueID: &q1}},
		Ports:   []detect.SwitchValue{{SwitchID: 2, Port: &p7, TxUtilization: u64(40)}},
		Buffers: []detect.SwitchValue{{SwitchID: 1, BufferID: &b2, BufferOccupancy: u64(900)}}}
	var b strings.Builder
	if err := writeFlowState(&b, &f); err != nil {
		t.Fatal(err)
	}
	want := `flow     10.0.0.1:40000 > [2001:db8::2]:443 udp
path     1 > 2 (2 hops, source first)
latency  3.10 µs end to end, latest
reports  12, first seen 2026-01-02T03:04:05.0000006Z, last seen 2026-01-02T03:04:06.0000006Z
HOP  SWITCH  HOP LATENCY latest  SWITCH QUEUE OCCUPANCY max  SWITCH TX UTILIZATION max  SWITCH BUFFER OCCUPANCY max
1    1       1.00 µs             12 (queue 3, max of 2)      -                          900 (buffer 2)
2    2       1.25 ms             -                           40 (port 7)                -
SWITCH ... max: the largest latest value of the switch's queues, ports, buffers, from any flow (each: --json)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	f.FlowLatency, f.Hops = nil, nil
	b.Reset()
	if err := writeFlowState(&b, &f); err != nil {
		t.Fatal(err)
	}
	want = `flow     10.0.0.1:40000 > [2001:db8::2]:443 udp
path     1 > 2 (2 hops, source first)
reports  12, first seen 2026-01-02T03:04:05.0000006Z, last seen 2026-01-02T03:04:06.0000006Z
HOP  SWITCH  HOP LATENCY latest  SWITCH QUEUE OCCUPANCY max  SWITCH TX UTILIZATION max  SWITCH BUFFER OCCUPANCY max
SWITCH ... max: the largest latest value of the switch's queues, ports, buffers, from any flow (each: --json)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
