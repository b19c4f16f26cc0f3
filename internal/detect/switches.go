package detect

// SwitchSample is what the detector knows of one switch, as the history samples it
// (package history, through the collector): the largest latest queue occupancy and tx
// utilization among its queue and port keys updated at or after the sample's since, and its
// dropped-packet reports counted so far (every reason; a drop key that expired or was
// evicted starts again from 0).
type SwitchSample struct {
	Switch   uint32
	Updated  bool // some queue, port or drop key of the switch was updated since
	QueueMax uint64
	TxMax    uint64
	Drops    uint64
}

// Switches calls fn with a sample of every switch the detector has keys of, in no
// particular order. It runs on the normal path: each shard is locked while it is walked,
// one at a time. The switch keys of detect.kernel, which live in the XDP program's maps,
// are not read.
func (d *Detector) Switches(since int64, fn func(*SwitchSample)) {
	for _, s := range d.shards {
		sws := map[uint32]*SwitchSample{}
		s.mu.Lock()
		for i := s.sl.head; i >= 0; i = s.sl.l[i].next {
			en := &s.se[i]
			if en.key.kind != kQueue && en.key.kind != kPort && en.key.kind != kDrop {
				continue
			}
			x := sws[en.key.sw]
			if x == nil {
				x = &SwitchSample{Switch: en.key.sw}
				sws[en.key.sw] = x
			}
			fresh := en.last >= since
			switch {
			case en.key.kind == kDrop:
				x.Drops += en.v[0].cur
			case en.has&1 == 0 || !fresh:
			case en.key.kind == kQueue:
				x.QueueMax = max(x.QueueMax, en.v[0].cur)
			default:
				x.TxMax = max(x.TxMax, en.v[0].cur)
			}
			x.Updated = x.Updated || fresh
		}
		s.mu.Unlock()
		for _, x := range sws {
			fn(x)
		}
	}
}
