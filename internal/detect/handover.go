package detect

import (
	"fmt"
	"unsafe"

	"github.com/intake-int/intake/telemetry"
)

// A processor of a consumer group (package group, docs/scale-out.md) hands the flows of a
// partition it gives up to the partition's next owner, so that their detection carries on
// (no new_key again, the same reference values and levels): SnapshotFlows gives the
// entries of the flows it selects as images, AdoptFlow puts an image in a detector. An image
// is the flow entry's memory (key, times, reports, path and its hash, the latency and every
// hop's reference and latest value, the above bits): processors of one intake build and
// architecture exchange them, and FlowImageSize tells a loader whether an image fits.
// Switch keys are not handed over: each member keeps those of the reports it owns.

const flowImageSize = int(unsafe.Sizeof(flowEntry{}))

// FlowImageSize is the size of a flow entry image in bytes.
func (d *Detector) FlowImageSize() int { return flowImageSize }

// SnapshotFlows passes the image of every flow for which take(key) is true to emit, with
// its key (emit keeps neither), and removes those flows when remove is set. It returns the
// number of flows.
func (d *Detector) SnapshotFlows(take func(*telemetry.FlowKey) bool, remove bool, emit func(k *telemetry.FlowKey, img []byte)) int {
	n := 0
	for _, s := range d.shards {
		s.mu.Lock()
		for i := s.fl.head; i >= 0; {
			next := s.fl.l[i].next
			if e := &s.fe[i]; take(&e.key) {
				emit(&e.key, unsafe.Slice((*byte)(unsafe.Pointer(e)), flowImageSize))
				n++
				if remove {
					s.removeFlow(i)
				}
			}
			i = next
		}
		s.mu.Unlock()
	}
	return n
}

// AdoptFlow puts the flow of image img in the detector, replacing its entry if it has one
// (a full shard gives up its least recently updated flow, as for a new flow).
func (d *Detector) AdoptFlow(img []byte) error {
	if len(img) != flowImageSize {
		return fmt.Errorf("detect: a flow image of %d bytes, this detector's are %d (another intake build)", len(img), flowImageSize)
	}
	var e flowEntry
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&e)), flowImageSize), img)
	if e.h != telemetry.FlowHash(&e.key) || e.reports == 0 {
		return fmt.Errorf("detect: a flow image that is not one (its hash does not match its key, or no reports)")
	}
	s := d.shards[shardOf(e.h, d.mask)]
	s.mu.Lock()
	en, _ := s.flow(e.h, &e.key, e.last)
	*en = e
	s.mu.Unlock()
	return nil
}
