package history

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/intake-int/intake/record"
	"github.com/intake-int/intake/telemetry"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Period = time.Millisecond }, "period: 1ms: must be between 10ms and 1h"},
		{func(c *Config) { c.Retention = time.Second }, "retention: 1s: must be between the period (10s) and 168h"},
		{func(c *Config) { c.Period, c.Retention = 10*time.Millisecond, time.Hour }, "retention: 1h0m0s: at most 100000 periods of 10ms"},
		{func(c *Config) { c.MaxFlows = -1 }, "max_flows: -1: must be 0-100000"},
		{func(c *Config) { c.MaxSwitches = 0 }, "max_switches: 0: must be 1-65536"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// The ring at the defaults: 360 periods × (256 switches × 56 B + 1000 flows × 64 B),
	// and the last sample's state.
	b := c.Budget()
	if len(b) != 1 || b[0].Memory != 360*(256*56+1000*64)+256*(4*48+120)+1000*(2*96+64+24) {
		t.Errorf("budget %+v", b)
	}
	c.Enabled = false
	if c.Budget() != nil || c.Validate() != nil {
		t.Error("off: a budget or an error")
	}
}

func key(sport uint16) telemetry.FlowKey {
	var k telemetry.FlowKey
	k.SetAddrs(netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
	k.SrcPort, k.DstPort, k.Proto = sport, 80, 17
	return k
}

// TestSampleLimits: a period keeps max_flows flows, those with the most reports in it
// (counted from the previous point of the flow), and max_switches switches (the others
// counted dropped); the ring keeps retention/period periods.
func TestSampleLimits(t *testing.T) {
	cfg := Config{Enabled: true, Period: time.Second, Retention: 3 * time.Second, MaxFlows: 2, MaxSwitches: 2}
	// Cumulative packets per flow at each sample: flow 1 grows by 10, flow 2 by 1, flow 3 by 5.
	var recs []record.Record
	h := New(cfg, Deps{Flows: func(since int64, fn func(*record.Record)) int {
		for i := range recs {
			fn(&recs[i])
		}
		return len(recs)
	}})
	for s := int64(1); s <= 4; s++ {
		recs = []record.Record{
			{Flow: key(1), Packets: uint64(10 * s), Hops: []record.HopRecord{{NodeID: 1}}},
			{Flow: key(2), Packets: uint64(1 * s), Hops: []record.HopRecord{{NodeID: 2}}},
			{Flow: key(3), Packets: 100 + uint64(5*s), Hops: []record.HopRecord{{NodeID: 3}}},
		}
		h.Sample(s * int64(time.Second))
	}
	h.Sample(2 * int64(time.Second)) // not after the newest: ignored
	got := h.Query(0, 1<<62, Filter{})
	var ts []int64
	for _, p := range got.Switches[0].Points {
		ts = append(ts, p.TNS)
	}
	if !reflect.DeepEqual(ts, []int64{2e9, 3e9, 4e9}) || len(got.Switches) != 2 {
		t.Errorf("retention: switch points at %v, %d switches", ts, len(got.Switches))
	}
	// First period: flow 3's 105 and flow 1's 10 (cumulative: no previous point); then
	// flow 1's 10 and flow 3's 5, not flow 2's 1.
	want := map[uint16][]uint64{1: {10, 10, 10}, 3: {5, 5, 5}}
	for _, f := range got.Flows {
		var ps []uint64
		for _, p := range f.Points {
			ps = append(ps, p.Packets)
		}
		if !reflect.DeepEqual(ps, want[f.Flow.Sport]) {
			t.Errorf("flow %d: packets %v, want %v", f.Flow.Sport, ps, want[f.Flow.Sport])
		}
	}
	if len(got.Flows) != 2 || got.Flows[0].Flow.Sport != 1 {
		t.Errorf("flows %+v", got.Flows)
	}
	// Switch 3 was past max_switches in every period.
	if d := h.Drops()["history.switches"]; d != 4 {
		t.Errorf("dropped %d", d)
	}
}
