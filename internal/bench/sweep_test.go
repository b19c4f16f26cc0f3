package bench

import (
	"slices"
	"testing"
)

// SweepChart draws one line per sweep and mode series, named with the sweep's label, the
// later sweeps dashed, at the points' CPU percent; it refuses sweeps of different parameters.
func TestSweepChart(t *testing.T) {
	var k, s Sweep
	k.Param, k.Mode, k.Label, k.Conditions = "hops", ModeKernel, "detection", "tr2.0, 1 flow"
	for _, v := range []float64{1, 6} {
		k.Add(v, "socket", 2000, 10000, 0) // 2000 ns × 10,000/s = 2 % of a core
		k.Add(v, "xdp", 1000, 10000, 0)
		k.Add(v, "kernel", 500*v, 10000, 0.5)
	}
	s.Param, s.Mode = "hops", "socket"
	s.Add(3, "socket", 100, 1e6, 0)
	c, err := SweepChart("Fig. 11", []Sweep{k, s})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ser := range c.Series {
		names = append(names, ser.Name)
	}
	if want := []string{"socket mode, detection", "xdp mode, detection", "kernel mode, detection", "socket mode"}; !slices.Equal(names, want) {
		t.Fatalf("series %q, want %q", names, want)
	}
	if ser := c.Series[2]; !slices.Equal(ser.X, []float64{1, 6}) || !slices.Equal(ser.Y, []float64{0.5, 3}) || ser.Dashed {
		t.Errorf("kernel series %v %v dashed %v, want [1 6] [0.5 3] solid", ser.X, ser.Y, ser.Dashed)
	}
	if ser := c.Series[3]; !slices.Equal(ser.Y, []float64{10}) || !ser.Dashed {
		t.Errorf("second sweep %v dashed %v, want [10] dashed", ser.Y, ser.Dashed)
	}
	if c.Subtitle != "tr2.0, 1 flow" || c.X.Label != "hops per report" || k.Points[1].Loss["kernel"] != 0.5 {
		t.Errorf("subtitle %q, x %q, loss %v", c.Subtitle, c.X.Label, k.Points[1].Loss)
	}
	s.Param = "flows"
	if _, err := SweepChart("x", []Sweep{k, s}); err == nil || err.Error() != "sweeps of hops and flows in one figure" {
		t.Errorf("mixed parameters: %v", err)
	}
}

// An event-rate sweep is drawn at the events each series' detector raised, not at the
// values asked for; ParseSweep takes events as whole numbers.
func TestSweepChartEvents(t *testing.T) {
	var s Sweep
	s.Param, s.Mode = "events", ModeKernel
	for _, v := range []float64{0, 100} {
		for _, m := range SweepSeries(ModeKernel) {
			s.Add(v, m, 1000, 10000, 0)
			s.SetEvents(m, 0.98*v)
		}
	}
	c, err := SweepChart("Fig. 11", []Sweep{s})
	if err != nil {
		t.Fatal(err)
	}
	if ser := c.Series[2]; ser.Name != "kernel mode" || !slices.Equal(ser.X, []float64{0, 98}) || !slices.Equal(ser.Y, []float64{1, 1}) {
		t.Errorf("kernel series %q %v %v, want at x [0 98], y [1 1]", ser.Name, ser.X, ser.Y)
	}
	if c.X.Label != "events per second the detector raised (measured; --events sets them)" {
		t.Errorf("x axis %q", c.X.Label)
	}
	if p, v, err := ParseSweep("events=0,10,1000"); err != nil || p != "events" || !slices.Equal(v, []string{"0", "10", "1000"}) {
		t.Errorf("events=0,10,1000: %q %q %v", p, v, err)
	}
	if _, _, err := ParseSweep("events=1.5"); err == nil || err.Error() != `events: "1.5": want a whole number` {
		t.Errorf("events=1.5: %v", err)
	}
}
