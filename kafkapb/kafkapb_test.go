package kafkapb

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
)

func sample() *Message {
	return &Message{SchemaVersion: SchemaVersion, Body: &Message_Report{Report: &Report{RecvTimeNs: 5, Format: "tr2.0",
		NodeId: 7, Seq: 9, Flow: &FlowKey{Src: []byte{10, 0, 0, 1}, Dst: []byte{10, 0, 0, 2}, SrcPort: 1000, DstPort: 80, Proto: 6},
		Hops: []*Hop{{NodeId: 1, HopLatency: 300}, {NodeId: 2}}, HopsTotal: 2}}}
}

func TestDecodeBothEncodings(t *testing.T) {
	m := sample()
	pb, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	js, err := JSON(m)
	if err != nil {
		t.Fatal(err)
	}
	// protojson's spacing varies on purpose; compare the parsed message, and the names.
	if !bytes.Contains(js, []byte(`"schema_version":1`)) && !bytes.Contains(js, []byte(`"schema_version": 1`)) {
		t.Fatalf("JSON without schema_version: %s", js)
	}
	for _, b := range [][]byte{pb, js, append([]byte(" \n"), js...)} {
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if !proto.Equal(got, m) {
			t.Fatalf("round trip: %v, want %v", got, m)
		}
	}
	if IsJSON(pb) {
		t.Fatal("protobuf taken for JSON")
	}
	row := strings.Join(Row(m), "|")
	if want := "report|5|10.0.0.1:1000>10.0.0.2:80/6|tr2.0 node=7 seq=9|hops=2"; row != want {
		t.Fatalf("row %q, want %q", row, want)
	}
}

// TestRowContent: the table line of a DTA report, an INT-label export and a member's event
// shows their content.
func TestRowContent(t *testing.T) {
	for _, c := range []struct {
		m    *Message
		want string
	}{
		{&Message{Body: &Message_Report{Report: &Report{RecvTimeNs: 1, Format: "dta", Dta: &DTA{Op: "key-increment",
			Key: []byte{10, 0, 0, 1}, Redundancy: 2, Counter: 7}}}},
			"report|1|dta key 0a000001|dta key-increment redundancy=2|counter=7"},
		{&Message{Body: &Message_Report{Report: &Report{RecvTimeNs: 2, Format: "dta", Dta: &DTA{Op: "postcard",
			Key: []byte{1, 2}, Hop: 3, Data: []byte{0, 9}}}}},
			"report|2|dta key 0102|dta postcard hop=3|data=0009"},
		{&Message{Body: &Message_Report{Report: &Report{RecvTimeNs: 3, Format: "dta", Dta: &DTA{Op: "append", ListId: 4,
			Data: []byte{5}}}}},
			"report|3|dta list 4|dta append|data=05"},
		{&Message{Body: &Message_Report{Report: &Report{RecvTimeNs: 4, Format: "int-label", LabelsTotal: 2, Labels: []*LabelItem{
			{SwitchId: 1, IngressPort: 2, EgressPort: 3, DeqQdepth: 4, DeqTimedelta: 5, EgressTs: 6},
			{SwitchId: 7, IngressPort: 8, EgressPort: 9, DeqQdepth: 10, DeqTimedelta: 11, EgressTs: 12}}}}},
			"report|4|switch 7|int-label items=2|1:2>3 q=4 lat=5 t=6; 7:8>9 q=10 lat=11 t=12"},
		{&Message{Body: &Message_Event{Event: &Event{TimeNs: 5, Kind: "new_key", Measurement: "queue_occupancy", SwitchId: 3,
			Value: 9, Member: "c2"}}},
			"event|5|switch 3|new_key queue_occupancy member=c2|9"},
	} {
		if got := strings.Join(Row(c.m), "|"); got != c.want {
			t.Errorf("row %q, want %q", got, c.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	newer := sample()
	newer.SchemaVersion = SchemaVersion + 1
	noBody := &Message{SchemaVersion: SchemaVersion}
	noVersion := sample()
	noVersion.SchemaVersion = 0
	enc := func(m *Message) []byte { b, _ := proto.Marshal(m); return b }
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{enc(newer), "kafkapb: schema_version 2 is newer than this reader's 1"},
		{enc(noBody), "kafkapb: message without a body"},
		{enc(noVersion), "kafkapb: no schema_version"},
		{[]byte(`{"schema_version":1,"event":{"kind":"change"}}`), ""},
		{[]byte(`{"schema_version":"x"}`), "kafkapb: proto:"},
		{[]byte{0x08}, "kafkapb: proto:"},
	} {
		_, err := Decode(c.b)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.b, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%q: %v, want %s", c.b, err, c.want)
		}
	}
}

// TestGenerated regenerates intake.pb.go with protoc and protoc-gen-go, when both are
// installed, and compares it with the committed file: the schema and the Go agree.
func TestGenerated(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not installed (apt-get install protobuf-compiler)")
	}
	gen, err := exec.LookPath("protoc-gen-go")
	if err != nil {
		home, _ := os.UserHomeDir()
		if gen = filepath.Join(home, "go", "bin", "protoc-gen-go"); !exists(gen) {
			t.Skip("protoc-gen-go not installed (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)")
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(protoc, "--plugin=protoc-gen-go="+gen, "--go_out="+dir, "--go_opt=paths=source_relative", "intake.proto")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "intake.pb.go"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("intake.pb.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(versionless(got), versionless(want)) {
		t.Fatal("intake.pb.go differs from what intake.proto generates: run go generate ./export/kafkapb")
	}
}

// versionless drops the generator's version lines (another protoc writes the same code).
func versionless(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte("// \tprotoc")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// FuzzDecode: any bytes from a topic decode to a message or an error, never a panic, and a
// decoded message survives both encodings and Row.
func FuzzDecode(f *testing.F) {
	m := sample()
	pb, _ := proto.Marshal(m)
	js, _ := JSON(m)
	f.Add(pb)
	f.Add(js)
	for _, b := range []*Message{
		{SchemaVersion: 1, Body: &Message_Event{Event: &Event{Kind: "change", Path: []uint32{1, 2}, Flow: &FlowKey{Src: make([]byte, 16)}}}},
		{SchemaVersion: 1, Body: &Message_Snapshot{Snapshot: &Event{Kind: "periodic", SwitchId: 3}}},
		{SchemaVersion: 1, Body: &Message_Flow{Flow: &FlowRecord{Reason: "idle", Hops: []*HopRecord{{NodeId: 1, Metrics: []string{"hop_latency"}, Latest: []uint64{4}}}}}},
		{SchemaVersion: 1, Body: &Message_Report{Report: &Report{Format: "dta", Dta: &DTA{Op: "key-write", Key: []byte{1}, Data: []byte{2}, Redundancy: 1}}}},
		{SchemaVersion: 1, Body: &Message_Report{Report: &Report{Format: "int-label", Labels: []*LabelItem{{SwitchId: 1, EgressTs: 5}}, LabelsTotal: 1}}},
		{SchemaVersion: 1, Body: &Message_Event{Event: &Event{Kind: "new_key", Member: "c0"}}},
	} {
		b1, _ := proto.Marshal(b)
		b2, _ := JSON(b)
		f.Add(b1)
		f.Add(b2)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if len(Row(m)) != len(Columns) {
			t.Fatalf("row %v", Row(m))
		}
		pb, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Decode(pb)
		if err != nil || !proto.Equal(m, m2) {
			t.Fatalf("protobuf round trip: %v", err)
		}
		js, err := JSON(m)
		if err != nil {
			t.Fatal(err)
		}
		m3, err := Decode(js)
		if err != nil || !proto.Equal(m, m3) {
			t.Fatalf("JSON round trip: %v\n%s", err, js)
		}
	})
}
