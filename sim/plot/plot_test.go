package plot

import (
	"bytes"
	"encoding/xml"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		name   string
		axis   Axis
		data   []float64
		y      bool
		lo, hi float64
		want   []float64
	}{
		// Coverage close to 1: the value axis is not stretched down to zero.
		{"coverage", Axis{}, []float64{0.956, 0.99, 1}, true, 0.95, 1, []float64{0.95, 0.96, 0.97, 0.98, 0.99, 1}},
		// Counts: zero is near, the top goes up to a round tick.
		{"counts", Axis{}, []float64{693, 11523}, true, 0, 12000, []float64{0, 2000, 4000, 6000, 8000, 10000, 12000}},
		// The x axis keeps the data's range; whole-number data gets whole-number ticks.
		{"categories", Axis{}, []float64{1, 2, 3}, false, 1, 3, []float64{1, 2, 3}},
		{"interval", Axis{}, []float64{10, 100}, false, 10, 100, []float64{20, 40, 60, 80, 100}},
		{"fixed", Axis{Min: 0, Max: 1, Percent: true}, []float64{0.3}, true, 0, 1, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{"load", Axis{Min: 0, Max: 2}, nil, false, 0, 2, []float64{0, 0.5, 1, 1.5, 2}},
	} {
		var lo, hi float64
		var ticks []float64
		if c.y {
			lo, hi, ticks = yScale(c.axis, c.data)
		} else {
			lo, hi, ticks = xScale(c.axis, c.data)
		}
		if lo != c.lo || hi != c.hi || !slices.Equal(ticks, c.want) {
			t.Errorf("%s: range [%v, %v] ticks %v, want [%v, %v] %v", c.name, lo, hi, ticks, c.lo, c.hi, c.want)
		}
	}
	f := tickFormat([]float64{0, 0.25, 0.5}, false)
	if got := f(0.25) + " " + f(0.5); got != "0.25 0.50" {
		t.Errorf("format %q", got)
	}
	if got := tickFormat([]float64{0, 0.2}, true)(0.2); got != "20%" {
		t.Errorf("percent format %q", got)
	}
}

// The SVG is well-formed XML whatever the names hold, every series is a polyline, and a
// legend too long for one row takes more rows.
func TestSVG(t *testing.T) {
	c := Chart{
		Title: `a < b & "c"`, X: Axis{Label: "x"}, Y: Axis{Label: "y"},
		Bands: []Band{{0, 1, 0}, {1, 2, 1}},
	}
	for i := range 7 {
		c.Series = append(c.Series, Series{Name: strings.Repeat("n", 10+i) + "<&>", X: []float64{0, 1, 2}, Y: []float64{0, float64(i), 1}, Dashed: i%2 == 1})
	}
	svg := c.SVG()
	d := xml.NewDecoder(bytes.NewReader(svg))
	polylines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, svg)
		}
		if s, ok := tok.(xml.StartElement); ok && s.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != len(c.Series) {
		t.Errorf("%d polylines for %d series", polylines, len(c.Series))
	}
	var w bytes.Buffer
	if n, err := c.WriteTo(&w); err != nil || int(n) != len(svg) || !bytes.Equal(w.Bytes(), svg) {
		t.Errorf("WriteTo: %d %v", n, err)
	}
	if cols, _ := legendColumns(c.Series); cols < 2 || cols >= len(c.Series) {
		t.Errorf("%d legend columns for %d series", cols, len(c.Series))
	}
}
