package plot

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
		// ... reaching out to the round tick within half a step of an end.
		{"interval", Axis{}, []float64{10, 100}, false, 0, 100, []float64{0, 20, 40, 60, 80, 100}},
		{"interval-far", Axis{}, []float64{0.8, 2.4}, false, 0.8, 2.5, []float64{1, 1.5, 2, 2.5}},
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
	if cols, _, _ := legendColumns(c.Series, 560); cols < 2 || cols >= len(c.Series) {
		t.Errorf("%d legend columns for %d series", cols, len(c.Series))
	}
}

// box is a text's extent, estimated as the layout estimates it.
type box struct {
	text                   string
	x0, y0, x1, y1         float64
	rotated, insideFrameOK bool
}

// textBoxes returns every text of an SVG the package wrote, with its estimated extent.
func textBoxes(t *testing.T, svg []byte) (w, h float64, boxes []box) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var cur *xml.StartElement
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return w, h, boxes
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if e.Name.Local == "svg" {
				w, h = attrF(e, "width"), attrF(e, "height")
			}
			if e.Name.Local == "text" {
				cur = &e
			}
		case xml.CharData:
			if cur == nil {
				continue
			}
			s := string(e)
			tw := textWidth(s)
			if attr(*cur, "font-size") == "14" {
				tw *= 14.0 / 12
			}
			var b box
			if tr := attr(*cur, "transform"); tr != "" {
				var tx, ty float64
				if _, err := fmt.Sscanf(tr, "translate(%g %g) rotate(-90)", &tx, &ty); err != nil {
					t.Fatalf("transform %q: %v", tr, err)
				}
				b = box{s, tx - 10, ty - tw/2, tx + 3, ty + tw/2, true, false}
			} else {
				x, y := attrF(*cur, "x"), attrF(*cur, "y")
				switch attr(*cur, "text-anchor") {
				case "middle":
					x -= tw / 2
				case "end":
					x -= tw
				}
				b = box{text: s, x0: x, y0: y - 10, x1: x + tw, y1: y + 3}
			}
			boxes = append(boxes, b)
			cur = nil
		case xml.EndElement:
			cur = nil
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func attrF(e xml.StartElement, name string) float64 {
	v, _ := strconv.ParseFloat(attr(e, name), 64)
	return v
}

// Charts with wide tick labels, percent axes, stacked panels, bars and long legends: no text
// leaves the picture and no two texts overlap.
func TestNoOverlap(t *testing.T) {
	line := func(name string, ys ...float64) Series {
		s := Series{Name: name}
		for i, y := range ys {
			s.X, s.Y = append(s.X, float64(10*(i+1))), append(s.Y, y)
		}
		return s
	}
	charts := map[string]Chart{
		"counts": {Title: "Labeled packets (Fig. 7) and labeling times (Fig. 8) vs labeling interval", X: Axis{Label: "T (ms)"}, Y: Axis{Label: "count"},
			Series: []Series{line("Base A labeled packets", 5380, 3800, 1200), line("Base B labeling times", 11500, 6700, 1500)}},
		"large": {Title: "big", X: Axis{Label: "x"}, Y: Axis{Label: "bytes per second"},
			Series: []Series{line("a", 1.2e9, 3.4e9, 9.9e9)}},
		"tiny": {Title: "tiny", X: Axis{Label: "x"}, Y: Axis{Label: "E[Z]"},
			Series: []Series{line("a", 0.0000012, 0.0000034, 0.0000099)}},
		"panels": {Title: "Coverage and INT bandwidth occupation vs background rate", X: Axis{Label: "rate per sender (Mb/s)"}, Y: Axis{Label: "coverage"},
			Panels: []Axis{{Label: "INT bandwidth occupation", Percent: true}},
			Series: []Series{line("Base A coverage", 0.93, 0.99, 1), {Name: "Base A occupation", X: []float64{10, 20, 30}, Y: []float64{0.04, 0.01, 0.003}, Panel: 1}}},
		"bars": {Title: "Impact of the probability function (Base B)", X: Axis{Label: "probability function"}, Y: Axis{Label: "count"},
			Categories: []string{"F1", "F2", "F3"}, Series: []Series{line("labeled packets", 1300, 1600, 1700), line("labeling times", 2900, 2800, 2700)}},
		"legend": {Title: "Key-Write aging: 5-hop path traces, 32-bit checksums", X: Axis{Label: "key age (percentile of keys inserted after it)", Min: 0, Max: 100},
			Y:      Axis{Label: "query success", Min: 0, Max: 1, Percent: true},
			Series: []Series{line("3 GiB N=2", 1, 0.4), line("30 GiB N=2 (keys /10 at equal load)", 1, 0.98), line("30 GiB N=4 (keys /10 at equal load) and a name longer than the picture is wide", 1, 0.99)}},
	}
	for name, c := range charts {
		w, h, boxes := textBoxes(t, c.SVG())
		if len(boxes) < 5 {
			t.Fatalf("%s: %d texts", name, len(boxes))
		}
		for i, a := range boxes {
			if a.x0 < 0 || a.y0 < 0 || a.x1 > w || a.y1 > h {
				t.Errorf("%s: %q at [%.0f,%.0f]-[%.0f,%.0f] leaves the %.0f×%.0f picture", name, a.text, a.x0, a.y0, a.x1, a.y1, w, h)
			}
			for _, z := range boxes[i+1:] {
				if a.x0 < z.x1 && z.x0 < a.x1 && a.y0 < z.y1 && z.y0 < a.y1 {
					t.Errorf("%s: %q and %q overlap", name, a.text, z.text)
				}
			}
		}
	}
}

// A series that a later one covers is drawn wider beneath it; one that is apart keeps the
// normal width; every series has its own marker shape.
func TestCovered(t *testing.T) {
	c := Chart{X: Axis{Label: "x"}, Y: Axis{Label: "y"}, Series: []Series{
		{Name: "under", X: []float64{1, 2, 3, 4}, Y: []float64{1, 1, 1, 0.5}},
		{Name: "apart", X: []float64{1, 2, 3, 4}, Y: []float64{0, 0.1, 0.2, 0.3}},
		{Name: "over", X: []float64{1, 2, 3, 4}, Y: []float64{1, 1, 1, 0.9}},
	}}
	svg := string(c.SVG())
	for _, want := range []string{
		`stroke="#1f77b4" stroke-width="4.0"`, `stroke="#ff7f0e" stroke-width="2.0"`, `stroke="#2ca02c" stroke-width="2.0"`,
		`<circle`, `<rect x=`, `<polygon`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s in\n%s", want, svg)
		}
	}
}

// A bar chart has a bar per series and category, standing on zero, and the categories as
// tick labels.
func TestBars(t *testing.T) {
	c := Chart{X: Axis{Label: "x"}, Y: Axis{Label: "y"}, Categories: []string{"F1", "F2"},
		Series: []Series{{Name: "a", Y: []float64{10, 20}}, {Name: "b", Y: []float64{5, 0}}}}
	svg := string(c.SVG())
	if n := strings.Count(svg, `stroke="white"/>`); n != 4 {
		t.Errorf("%d bars, want 4\n%s", n, svg)
	}
	for _, want := range []string{">F1</text>", ">F2</text>", ">0</text>", ">20</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s", want)
		}
	}
	if strings.Contains(svg, "<polyline") {
		t.Error("a bar chart drew lines")
	}
}

// Every committed figure renders to PNG (librsvg's rsvg-convert, Debian's librsvg2-bin) at
// the SVG's size. PLOT_PNG_DIR=dir keeps the PNGs there, for looking at them.
func TestRenderPNG(t *testing.T) {
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		t.Skip("rsvg-convert not found (apt-get install librsvg2-bin)")
	}
	svgs, _ := filepath.Glob("../../../docs/label-plots/*.svg")
	more, _ := filepath.Glob("../../../docs/dta-fig-*.svg")
	svgs = append(svgs, more...)
	if len(svgs) < 13 {
		t.Fatalf("%d figures in docs", len(svgs))
	}
	dir := os.Getenv("PLOT_PNG_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, f := range svgs {
		out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(f), ".svg")+".png")
		if b, err := exec.Command(bin, "-o", out, f).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", f, err, b)
		}
		svg, _ := os.ReadFile(f)
		w, h, _ := textBoxes(t, svg)
		png, err := os.ReadFile(out)
		if err != nil || len(png) < 24 || string(png[1:4]) != "PNG" {
			t.Fatalf("%s: not a PNG (%v)", out, err)
		}
		pw, ph := binary.BigEndian.Uint32(png[16:]), binary.BigEndian.Uint32(png[20:])
		if float64(pw) != w || float64(ph) != h {
			t.Errorf("%s: %d×%d, the SVG is %.0f×%.0f", out, pw, ph, w, h)
		}
	}
}

func TestTickFormat(t *testing.T) {
	for _, c := range []struct {
		ticks   []float64
		percent bool
		want    string
	}{
		{[]float64{0, 0.2, 0.4}, false, "0.0 0.2 0.4"},
		{[]float64{0.95, 0.96}, false, "0.95 0.96"},
		{[]float64{0, 0.02, 0.04}, true, "0% 2% 4%"},
		{[]float64{0, 0.005, 0.01}, true, "0.0% 0.5% 1.0%"},
		{[]float64{0, 2000, 12000}, false, "0 2000 12000"},
		{[]float64{0, 50000, 100000}, false, "0k 50k 100k"},
		{[]float64{0, 2e9, 1e10}, false, "0G 2G 10G"},
		{[]float64{0, 2e-6, 4e-6}, false, "0e-6 2e-6 4e-6"},
	} {
		f := tickFormat(c.ticks, c.percent)
		var got []string
		for _, v := range c.ticks {
			got = append(got, f(v))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("%v percent %v: %q, want %q", c.ticks, c.percent, g, c.want)
		}
	}
}

// A points-only series draws markers and no line, and its legend entry has no line; the
// subtitle's words are all written, under the title, and push the plot area down.
func TestPointsAndSubtitle(t *testing.T) {
	c := Chart{Title: "t", Series: []Series{{Name: "paper", X: []float64{1, 2, 3}, Y: []float64{1, 2, 3}, Points: true}}}
	plain := string(c.SVG())
	if strings.Contains(plain, "<polyline") || strings.Contains(plain, "<line x1=\"") && strings.Contains(plain, "stroke-width=\"2.0\"") {
		t.Errorf("points drew a line:\n%s", plain)
	}
	c.Subtitle = strings.Repeat("setup words ", 30)
	sub := string(c.SVG())
	if n := strings.Count(sub, "setup") + strings.Count(sub, "words"); n != 60 {
		t.Errorf("%d of 60 subtitle words", n)
	}
	if !strings.Contains(sub, `font-size="11" fill="#444"`) || len(wrap(c.Subtitle, minWidth-2*right)) < 2 {
		t.Errorf("subtitle not wrapped:\n%s", sub)
	}
	if strings.Count(sub, "\n") <= strings.Count(plain, "\n") {
		t.Error("no subtitle lines")
	}
}

// A twin axis: the right-hand series get their own scale over the first plot area (their
// values do not stretch the left axis), ticks and a title on the right, inside the picture.
func TestTwinAxis(t *testing.T) {
	c := Chart{Title: "t", Y: Axis{Label: "left"}, Right: Axis{Label: "right title"}, Series: []Series{
		{Name: "a", X: []float64{0, 1}, Y: []float64{0.9, 1}},
		{Name: "b", X: []float64{0, 1}, Y: []float64{100, 300}, Right: true},
	}}
	svg := string(c.SVG())
	for _, want := range []string{">right title</text>", ">300</text>", ">1.00</text>"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no %s in\n%s", want, svg)
		}
	}
	if !strings.Contains(svg, ">0.98</text>") || strings.Count(svg, ">200</text>") != 1 {
		t.Errorf("the left axis was stretched to the right-hand series:\n%s", svg)
	}
	w, _, boxes := textBoxes(t, []byte(svg))
	for _, b := range boxes {
		if b.x1 > w {
			t.Errorf("text %q leaves the picture (%v > %v)", b.text, b.x1, w)
		}
	}
}
