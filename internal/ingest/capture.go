package ingest

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/intake-int/intake/pcap"
)

// CaptureSummary is what RunCapture did.
type CaptureSummary struct {
	Frames   uint64        // frames read from the file
	Datagram uint64        // UDP datagrams handed to a listener's worker
	Elapsed  time.Duration // wall time
}

// captureFlush is how many datagrams a capture worker handles between flushes, the stand-in
// for a recvmmsg batch.
const captureFlush = 64

// RunCapture runs the receive path over a capture at full speed: every frame that holds a
// UDP datagram to a listener's port is decoded by that listener's first worker and its
// reports go to the processors, exactly as if it had arrived on the socket; frames that are
// not UDP and datagrams to other ports are counted as ingest drops (not_udp, no_listener)
// on the first listener, datagrams from a source the listener's allow list lacks as
// not_allowed on that listener. RecvTime is the capture timestamp. The processors must be started
// (and are flushed, not stopped, at the end); the Receiver must not be running.
func (rcv *Receiver) RunCapture(rd *pcap.Reader) (CaptureSummary, error) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.running {
		return CaptureSummary{}, errors.New("ingest: RunCapture while the collector is running")
	}
	var byPort [65536]*worker
	for _, l := range rcv.listeners {
		if l.cfg.Port != 0 && byPort[l.cfg.Port] == nil {
			byPort[l.cfg.Port] = l.workers[0]
		}
	}
	first := rcv.listeners[0].workers[0]
	var sum CaptureSummary
	start := time.Now()
	var touched []*worker
	var err error
	for {
		var p pcap.Packet
		p, err = rd.Next()
		if err != nil {
			break
		}
		sum.Frames++
		d, ok := pcap.UDP(p.Data, p.Link)
		if !ok {
			first.drop(DropNotUDP)
			continue
		}
		w := byPort[d.DstPort]
		if w == nil {
			first.drop(DropNoListener)
			continue
		}
		sum.Datagram++
		if w.allow != nil && !w.allow.allowAddr(d.Src) {
			w.local[cPackets]++
			w.local[cBytes] += uint64(len(d.Payload))
			w.drop(DropNotAllowed)
			continue
		}
		now := p.Time.UnixNano()
		if p.Time.IsZero() { // pcapng simple packet blocks carry no time
			now = time.Now().UnixNano()
		}
		w.Datagram(d.Payload, now)
		if w.local[cPackets]%captureFlush == 0 {
			w.endBatch()
		}
		if !w.touched {
			w.touched = true
			touched = append(touched, w)
		}
		if sum.Frames%captureFlush == 0 {
			first.publish()
		}
	}
	for _, w := range touched {
		w.endBatch()
		w.touched = false
	}
	first.publish()
	sum.Elapsed = time.Since(start)
	if err == io.EOF {
		return sum, nil
	}
	return sum, fmt.Errorf("capture: %w", err)
}
