package dtasim

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// The figures at a small scale: every point within sampling error of the analysis, the
// callback sees each point in order, and the chart has one series per N (or size) and a
// band per load.
func TestFigures(t *testing.T) {
	var seen []LoadPoint
	pts, c, err := LoadFigure(1<<12, 32, 4, "", nil, func(p LoadPoint) { seen = append(seen, p) })
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 4*len(Loads) || len(seen) != len(pts) || len(c.Series) != 4 || len(c.Bands) != len(Loads) {
		t.Fatalf("%d points, %d seen, %d series, %d bands", len(pts), len(seen), len(c.Series), len(c.Bands))
	}
	for i, p := range pts {
		if p != seen[i] {
			t.Errorf("point %d: %+v, callback %+v", i, p, seen[i])
		}
		if q := int(p.Load * (1 << 12)); math.Abs(p.Success-p.Expected) > 5*StdErr(p.Expected, q)+1e-9 {
			t.Errorf("%+v: outside sampling error", p)
		}
	}
	const scale = 1.0 / (1 << 17) // 1024 slots
	runs, c, err := AgingFigure(scale, 2, "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three runs and the papers' three sets of points, the 30 GiB ones of both repeated in
	// the zoomed panel below; the x axis is later paths at full scale (millions), so the
	// papers' 10⁷ and 10⁸ are at 10 and 100 and the first bucket's middle at 0.5.
	if len(runs) != 3 || len(c.Series) != 9 || runs[0].Result.Config.Slots != 1024 || !runs[0].Scaled || len(runs[2].Result.Buckets) != 100 {
		t.Fatalf("aging: %d runs, %d series, %+v", len(runs), len(c.Series), runs[0].Result.Config)
	}
	for i, like := range []int{2, 3, 6} {
		if z := c.Series[6+i]; z.Panel != 1 || z.Like != like || z.Points != c.Series[like-1].Points {
			t.Errorf("zoomed series %d: %+v", i, z)
		}
	}
	if p := c.Series[3]; !p.Points || p.X[0] != 10 || p.X[1] != 100 || p.Y[0] != 0.993 || p.Y[1] != 0.445 || c.Series[0].X[0] != 0.5 || c.Series[0].X[99] != 99.5 {
		t.Errorf("paper's 3 GiB points %+v, first run's x %v…%v", p, c.Series[0].X[0], c.Series[0].X[99])
	}
	if !strings.Contains(string(c.SVG()), "30 GiB N=4 (keys /10 at equal load)") {
		t.Error("aging chart without its legend")
	}
	if _, _, err := AgingFigure(0.3, 2, "", nil, nil); !errors.Is(err, ErrScale) {
		t.Errorf("scale 0.3: %v", err)
	}
}
