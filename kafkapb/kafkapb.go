// Package kafkapb owns the schema of intake's Kafka messages: intake.proto, the Go generated
// from it (intake.pb.go, committed: building intake needs no protoc), the schema version
// every message carries, and the reading side that `intake consume` and consumers in Go use
// (Decode, Row). docs/kafka.md describes the topics and fields.
package kafkapb

//go:generate protoc --go_out=. --go_opt=paths=source_relative intake.proto

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// SchemaVersion is the version of intake.proto this package writes, in every message's
// schema_version.
const SchemaVersion = 1

// MaxHops is the most hops a Report message carries (hops_total says how many the report
// had).
const MaxHops = 8

// Decode reads one message in either encoding: JSON (protojson, a value starting with '{')
// or protobuf. A message without a body, or of a schema version newer than SchemaVersion,
// is an error: its fields may mean something this reader does not know.
func Decode(b []byte) (*Message, error) {
	m := &Message{}
	var err error
	if IsJSON(b) {
		err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
	} else {
		err = proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m)
	}
	if err != nil {
		return nil, fmt.Errorf("kafkapb: %w", err)
	}
	switch v := m.GetSchemaVersion(); {
	case v == 0:
		return nil, errors.New("kafkapb: no schema_version")
	case v > SchemaVersion:
		return nil, fmt.Errorf("kafkapb: schema_version %d is newer than this reader's %d", v, SchemaVersion)
	}
	if m.GetBody() == nil {
		return nil, errors.New("kafkapb: message without a body")
	}
	return m, nil
}

// IsJSON reports whether b is a JSON-encoded message: a protobuf Message starts with a
// field tag (schema_version's is 0x08), never with '{' (field 15, wire type 3, unused).
func IsJSON(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c == '{'
	}
	return false
}

// JSON is the protojson form of m that the json encoding writes and `intake consume
// --json` prints: field names as in intake.proto, zero values left out.
func JSON(m *Message) ([]byte, error) {
	return protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
}

// Kind names the message's body: report, event, snapshot or flow.
func Kind(m *Message) string {
	switch m.GetBody().(type) {
	case *Message_Report:
		return "report"
	case *Message_Event:
		return "event"
	case *Message_Snapshot:
		return "snapshot"
	case *Message_Flow:
		return "flow"
	}
	return ""
}

// Columns are the header of Row's table.
var Columns = []string{"KIND", "TIME", "KEY", "WHAT", "VALUE"}

// Row is m as one table line (Columns): its kind, its time (Unix ns), what it is keyed on
// (a flow 5-tuple, a switch, a DTA key or list), and a summary.
func Row(m *Message) []string {
	switch b := m.GetBody().(type) {
	case *Message_Report:
		return reportRow(b.Report)
	case *Message_Event:
		return eventRow("event", b.Event)
	case *Message_Snapshot:
		return eventRow("snapshot", b.Snapshot)
	case *Message_Flow:
		f := b.Flow
		path := make([]string, len(f.GetHops()))
		for i, h := range f.GetHops() {
			path[i] = strconv.FormatUint(uint64(h.GetNodeId()), 10)
		}
		return []string{"flow", strconv.FormatInt(f.GetLastNs(), 10), FlowString(f.GetFlow()),
			fmt.Sprintf("%s path=%s", f.GetReason(), strings.Join(path, ":")),
			"packets=" + strconv.FormatUint(f.GetPackets(), 10)}
	}
	return []string{"?", "", "", "", ""}
}

func reportRow(r *Report) []string {
	row := []string{"report", strconv.FormatInt(r.GetRecvTimeNs(), 10), "", "", ""}
	switch {
	case r.GetDta() != nil:
		d := r.GetDta()
		row[2], row[3] = "dta key "+hex.EncodeToString(d.GetKey()), "dta "+d.GetOp()
		switch d.GetOp() {
		case "append":
			row[2] = "dta list " + strconv.FormatUint(uint64(d.GetListId()), 10)
		case "key-write", "key-increment":
			row[3] += " redundancy=" + strconv.FormatUint(uint64(d.GetRedundancy()), 10)
		case "postcard":
			row[3] += " hop=" + strconv.FormatUint(uint64(d.GetHop()), 10)
		}
		row[4] = "data=" + hex.EncodeToString(d.GetData())
		if d.GetOp() == "key-increment" {
			row[4] = "counter=" + strconv.FormatUint(d.GetCounter(), 10)
		}
	case r.GetFormat() == "int-label":
		ls := r.GetLabels()
		sw := uint32(0)
		if len(ls) > 0 {
			sw = ls[len(ls)-1].GetSwitchId() // the newest item's: the message key's switch
		}
		row[2] = "switch " + strconv.FormatUint(uint64(sw), 10)
		row[3] = "int-label items=" + strconv.FormatUint(uint64(r.GetLabelsTotal()), 10)
		if r.GetLabelSpecific() {
			row[3] += " specific"
		}
		items := make([]string, len(ls))
		for i, l := range ls {
			items[i] = fmt.Sprintf("%d:%d>%d q=%d lat=%d t=%d", l.GetSwitchId(), l.GetIngressPort(), l.GetEgressPort(),
				l.GetDeqQdepth(), l.GetDeqTimedelta(), l.GetEgressTs())
		}
		row[4] = strings.Join(items, "; ")
	default:
		row[2] = FlowString(r.GetFlow())
		if row[2] == "" {
			row[2] = "node " + strconv.FormatUint(uint64(r.GetNodeId()), 10)
		}
		row[3] = fmt.Sprintf("%s node=%d seq=%d", r.GetFormat(), r.GetNodeId(), r.GetSeq())
		row[4] = "hops=" + strconv.FormatUint(uint64(r.GetHopsTotal()), 10)
	}
	return row
}

func eventRow(kind string, e *Event) []string {
	key := FlowString(e.GetFlow())
	if e.GetSwitchId() != 0 || key == "" {
		if key != "" {
			key += " "
		}
		key += "switch " + strconv.FormatUint(uint64(e.GetSwitchId()), 10)
	}
	what := e.GetKind() + " " + e.GetMeasurement()
	if e.GetMember() != "" {
		what += " member=" + e.GetMember()
	}
	return []string{kind, strconv.FormatInt(e.GetTimeNs(), 10), key, what, strconv.FormatUint(e.GetValue(), 10)}
}

// FlowString is k as "src:sport>dst:dport/proto" ("" for no flow; an address of a length
// other than 4 or 16 bytes shows as "invalid AddrPort").
func FlowString(k *FlowKey) string {
	if k == nil {
		return ""
	}
	return netip.AddrPortFrom(addr(k.GetSrc()), uint16(k.GetSrcPort())).String() + ">" +
		netip.AddrPortFrom(addr(k.GetDst()), uint16(k.GetDstPort())).String() + "/" +
		strconv.FormatUint(uint64(k.GetProto()), 10)
}

func addr(b []byte) netip.Addr {
	a, _ := netip.AddrFromSlice(b)
	return a
}
