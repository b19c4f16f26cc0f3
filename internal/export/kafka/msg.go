package kafka

import (
	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/kafkapb"
	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

// The conversions from intake's values to kafkapb messages (docs/kafka.md, "Schema").

// FlowKeyMessage is k with 4-byte addresses for IPv4, 16 for IPv6.
func FlowKeyMessage(k *telemetry.FlowKey) *kafkapb.FlowKey {
	src, dst := k.SrcAddr(), k.DstAddr()
	return &kafkapb.FlowKey{Src: src.AsSlice(), Dst: dst.AsSlice(), SrcPort: uint32(k.SrcPort), DstPort: uint32(k.DstPort),
		Proto: uint32(k.Proto)}
}

// ReportMessage is a report's summary as a Report message (hops and INT-label items source
// first, as the item holds them).
func ReportMessage(it *kafkaReportItem) *kafkapb.Report {
	m := &kafkapb.Report{RecvTimeNs: it.recv, Format: it.format.String(), NodeId: it.node, Seq: it.seq,
		HwId: uint32(it.hwID), IngressTs: it.ingressTS, HopsTotal: uint32(it.total)}
	if it.hasFlow {
		m.Flow = FlowKeyMessage(&it.flow)
	}
	if it.nhops > 0 {
		m.Hops = make([]*kafkapb.Hop, it.nhops)
		hs := make([]kafkapb.Hop, it.nhops)
		for i := range hs {
			h := &it.hops[i]
			hs[i] = kafkapb.Hop{NodeId: h.node, IngressPort: h.in, EgressPort: h.eg, HopLatency: h.lat,
				QueueId: uint32(h.qid), QueueOccupancy: h.qocc, TxUtil: h.tx, EgressTs: h.egTS}
			m.Hops[i] = &hs[i]
		}
	}
	switch it.format {
	case telemetry.FormatDTA:
		m.Dta = DTAMessage(it.dta())
	case telemetry.FormatLabel:
		m.LabelsTotal, m.LabelSpecific = uint32(it.labelsTotal), it.labelSpecific
		for i := range int(it.nlabels) {
			m.Labels = append(m.Labels, LabelItemMessage(&it.labels()[i]))
		}
	}
	return m
}

// DTAMessage is a DTA primitive as a DTA message: the fields it carries (the others are 0
// in d, so absent).
func DTAMessage(d *telemetry.DTA) *kafkapb.DTA {
	m := &kafkapb.DTA{Op: d.Op.String(), Redundancy: uint32(d.Redundancy), Counter: d.Counter, Hop: uint32(d.Hop),
		ListId: d.ListID, Immediate: d.Immediate, HeaderLen: uint32(d.HeaderLen), Seq: uint32(d.Seq), Retransmit: d.Retransmit}
	if d.KeyLen > 0 {
		m.Key = append([]byte(nil), d.KeyBytes()...)
	}
	if d.DataLen > 0 {
		m.Data = append([]byte(nil), d.DataBytes()...)
	}
	return m
}

// LabelItemMessage is an INT-label item as a LabelItem message.
func LabelItemMessage(l *telemetry.LabelItem) *kafkapb.LabelItem {
	return &kafkapb.LabelItem{SwitchId: uint32(l.SwitchID), IngressPort: uint32(l.IngressPort), EgressPort: uint32(l.EgressPort),
		IngressTs: l.IngressTS, EgressTs: l.EgressTS, EnqTs: l.EnqTS, EnqQdepth: l.EnqQDepth, DeqTimedelta: l.DeqTimedelta,
		DeqQdepth: l.DeqQDepth}
}

// ReportItemMessage is the Report message of r as the sink writes it (tests, tools).
func ReportItemMessage(r *telemetry.Report) *kafkapb.Report {
	var it kafkaReportItem
	fillReportItem(&it, r)
	return ReportMessage(&it)
}

// EventMessage is e as an Event message.
func EventMessage(e *event.Event) *kafkapb.Event {
	m := &kafkapb.Event{TimeNs: e.Time, DevTime: e.DevTime, Kind: e.Kind.String(), Scope: e.Scope.String(),
		Measurement: e.Measurement.String(), SwitchId: e.Key.Switch, Port: e.Key.Port, Queue: uint32(e.Key.Queue),
		Buffer: uint32(e.Key.Buffer), Reason: uint32(e.Key.Reason), HwId: uint32(e.Key.HWID), Prev: e.Prev,
		Value: e.Value, Threshold: e.Threshold}
	if e.Measurement.HasFlow() {
		m.Flow = FlowKeyMessage(&e.Key.Flow)
	}
	if p := e.PathList(); len(p) > 0 {
		m.Path = append([]uint32(nil), p...)
	}
	return m
}

// RecordMessage is an evicted flow record as a FlowRecord message.
func RecordMessage(r *record.Record) *kafkapb.FlowRecord {
	m := &kafkapb.FlowRecord{Flow: FlowKeyMessage(&r.Flow), Reason: r.Reason.String(), Packets: r.Packets,
		FirstNs: r.First, LastNs: r.Last, LatencyLatest: r.LatLatest, LatencySum: r.LatSum, LatencyCount: r.LatCount,
		Truncated: r.Truncated, Hops: make([]*kafkapb.HopRecord, len(r.Hops))}
	for i := range r.Hops {
		h := &r.Hops[i]
		hm := &kafkapb.HopRecord{NodeId: h.NodeID}
		for mt := range record.NumMetrics {
			if h.Count[mt] > 0 {
				hm.Metrics = append(hm.Metrics, mt.String())
				hm.Latest = append(hm.Latest, h.Latest[mt])
				hm.Count = append(hm.Count, h.Count[mt])
				hm.Sum = append(hm.Sum, h.Sum[mt])
			}
		}
		m.Hops[i] = hm
	}
	return m
}
