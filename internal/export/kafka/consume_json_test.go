package kafka

import (
	"testing"

	"github.com/intake-int/intake/kafkapb"
)

// TestJSONLineReadable: consume's JSON writes times in RFC 3339 and addresses as text, a DTA
// key and data in hex. Before, times were Unix ns strings and addresses and bytes base64.
func TestJSONLineReadable(t *testing.T) {
	for _, c := range []struct {
		m    *kafkapb.Message
		want string
	}{
		{&kafkapb.Message{SchemaVersion: 1, Body: &kafkapb.Message_Event{Event: &kafkapb.Event{TimeNs: 1_700_000_000_123_456_789, Kind: "change",
			Measurement: "flow_latency", Flow: &kafkapb.FlowKey{Src: []byte{10, 0, 0, 1}, Dst: []byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, SrcPort: 1000, DstPort: 80, Proto: 17}, Value: 5}}},
			`{"topic":"t","partition":0,"offset":0,"key":"01","message":{"event":{"flow":{"dst":"2001:db8::1","dst_port":80,"proto":17,"src":"10.0.0.1","src_port":1000},"kind":"change","measurement":"flow_latency","time":"2023-11-14T22:13:20.123456789Z","value":"5"},"schema_version":1}}`},
		{&kafkapb.Message{SchemaVersion: 1, Body: &kafkapb.Message_Report{Report: &kafkapb.Report{RecvTimeNs: 1, Format: "dta",
			Dta: &kafkapb.DTA{Op: "key-write", Key: []byte{10, 0, 0, 1}, Data: []byte{0xde, 0xad}}}}},
			`{"topic":"t","partition":0,"offset":0,"key":"01","message":{"report":{"dta":{"data":"dead","key":"0a000001","op":"key-write"},"format":"dta","recv_time":"1970-01-01T00:00:00.000000001Z"},"schema_version":1}}`},
		{&kafkapb.Message{SchemaVersion: 1, Body: &kafkapb.Message_Flow{Flow: &kafkapb.FlowRecord{FirstNs: 2, LastNs: 3, Reason: "idle"}}},
			`{"topic":"t","partition":0,"offset":0,"key":"01","message":{"flow":{"first":"1970-01-01T00:00:00.000000002Z","last":"1970-01-01T00:00:00.000000003Z","reason":"idle"},"schema_version":1}}`},
	} {
		b, err := (&Consumed{Topic: "t", Key: []byte{1}, Msg: c.m}).JSONLine()
		if err != nil || string(b) != c.want {
			t.Errorf("%v\n%s\nwant\n%s", err, b, c.want)
		}
	}
}
