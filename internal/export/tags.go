package export

import (
	"strconv"

	"github.com/intake-int/intake/event"
)

// Tag is one key=value label of a point or a series: the line-protocol sinks' tags and the
// Prometheus sinks' labels are the same (KeyTags).
type Tag struct{ K, V string }

// KeyTags returns the tags of e's metric key, sorted by tag key: src, dst, sport, dport,
// proto for flow keys; switch_id; queue_id, port, buffer_id, reason or hw_id.
func KeyTags(dst []Tag, e *event.Event) []Tag {
	k := &e.Key
	m := e.Measurement
	if m == event.BufferOccupancy {
		dst = append(dst, Tag{"buffer_id", strconv.Itoa(int(k.Buffer))})
	}
	if m.HasFlow() {
		dst = append(dst, Tag{"dport", strconv.Itoa(int(k.Flow.DstPort))}, Tag{"dst", k.Flow.DstAddr().String()})
	}
	if m == event.SeqGaps {
		dst = append(dst, Tag{"hw_id", strconv.Itoa(int(k.HWID))})
	}
	if m == event.TxUtilization {
		dst = append(dst, Tag{"port", strconv.FormatUint(uint64(k.Port), 10)})
	}
	if m.HasFlow() {
		dst = append(dst, Tag{"proto", strconv.Itoa(int(k.Flow.Proto))})
	}
	if m == event.QueueOccupancy || m == event.QueueCongestion {
		dst = append(dst, Tag{"queue_id", strconv.Itoa(int(k.Queue))})
	}
	if m == event.Drops {
		dst = append(dst, Tag{"reason", strconv.Itoa(int(k.Reason))})
	}
	if m.HasFlow() {
		dst = append(dst, Tag{"sport", strconv.Itoa(int(k.Flow.SrcPort))}, Tag{"src", k.Flow.SrcAddr().String()})
	}
	if m.HasSwitch() {
		dst = append(dst, Tag{"switch_id", strconv.FormatUint(uint64(k.Switch), 10)})
	}
	return dst
}

// SortTags sorts ts by key (insertion sort: a handful of tags, no allocation).
func SortTags(ts []Tag) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].K < ts[j-1].K; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}
