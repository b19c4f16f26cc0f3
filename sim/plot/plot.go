// Package plot draws the figures of intake's paper reproductions as small, self-contained SVG
// line charts: sim/dtasim's DART Figs. 3-4 and DTA Figs. 12-13 (query success against load
// factor and key age, DART §5.1-5.2, DTA §6.5.2-6.5.3) and sim/labelsim's INT-label Figs. 6-19
// (INT-label §6.2). The SVG is written by hand so that the reproductions need nothing beyond
// the standard library; docs/dta-results.md and docs/label-results.md show the output.
//
// A chart is one plot area with a frame, grid lines at round tick values, a title, axis
// labels and a legend below the plot, in as many columns as the series names allow. An axis
// has a fixed range or the data's, widened on the value axis to round ticks (and to zero when
// zero is near). Series of up to MaxMarkers points get a marker at each point; dashed series
// and shaded x-intervals (the best N per load of DART Fig. 3) are available.
package plot

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

// Band shades the x-interval [From, To] of the plot area in the colour of series Series.
type Band struct {
	From, To float64
	Series   int
}

// Axis is one axis of a chart.
type Axis struct {
	Label string
	// Min and Max fix the axis's range when Max > Min; otherwise the range is the data's.
	Min, Max float64
	// Percent writes the tick values as percentages of 1 (0.2 is 20%).
	Percent bool
}

// Chart is one figure.
type Chart struct {
	Title  string
	X, Y   Axis
	Series []Series
	Bands  []Band
}

// MaxMarkers is the most points a series may have and still get a marker at each: beyond it
// a series is a sampled curve rather than a few measured points.
const MaxMarkers = 30

// Palette is the series colours, in order (matplotlib's tab10).
var Palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Geometry, in pixels: the plot area starts at (left, top) and is plotW × plotH; below it come
// the x tick labels, the x axis label and the legend rows.
const (
	width      = 640.0
	left       = 70.0
	right      = 20.0
	top        = 40.0
	plotW      = width - left - right
	plotH      = 280.0
	legendTop  = top + plotH + 56 // baseline of the first legend row
	legendRow  = 18.0
	charWidth  = 6.8 // a generous mean advance of the 12 px sans-serif font
	legendLine = 22.0
	maxTicks   = 6
)

// SVG returns the chart as an SVG document.
func (c *Chart) SVG() []byte {
	var b bytes.Buffer
	c.WriteTo(&b)
	return b.Bytes()
}

// WriteTo writes the chart as an SVG document to w.
func (c *Chart) WriteTo(w io.Writer) (int64, error) {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	var xs, ys []float64
	for _, s := range c.Series {
		xs, ys = append(xs, s.X...), append(ys, s.Y...)
	}
	x0, x1, xt := xScale(c.X, xs)
	y0, y1, yt := yScale(c.Y, ys)
	px := func(v float64) float64 { return left + (v-x0)/(x1-x0)*plotW }
	py := func(v float64) float64 { return top + (1-(v-y0)/(y1-y0))*plotH }

	cols, colW := legendColumns(c.Series)
	rows := (len(c.Series) + cols - 1) / cols
	height := legendTop + float64(max(rows, 1)-1)*legendRow + 16

	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="24" text-anchor="middle" font-size="14">%s</text>`+"\n", width/2, html.EscapeString(c.Title))
	for _, bd := range c.Bands {
		a, z := px(math.Max(bd.From, x0)), px(math.Min(bd.To, x1))
		if z > a {
			p(`<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" opacity="0.12"/>`+"\n", a, top, z-a, plotH, color(bd.Series))
		}
	}
	xf, yf := tickFormat(xt, c.X.Percent), tickFormat(yt, c.Y.Percent)
	for _, v := range yt {
		p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, left+plotW, py(v), py(v), left-6, py(v)+4, yf(v))
	}
	for _, v := range xt {
		p(`<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="black"/><text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n",
			px(v), px(v), top+plotH, top+plotH+4, px(v), top+plotH+17, xf(v))
	}
	p(`<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", left, top, plotW, plotH)
	p(`<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", left+plotW/2, top+plotH+35, html.EscapeString(c.X.Label))
	p(`<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+plotH/2, html.EscapeString(c.Y.Label))

	for i, s := range c.Series {
		col, dash := color(i), ""
		if s.Dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		n := min(len(s.X), len(s.Y))
		p(`<polyline fill="none" stroke="%s" stroke-width="2"%s stroke-linejoin="round" points="`, col, dash)
		for k := range n {
			if k > 0 {
				b.WriteByte(' ')
			}
			p("%.1f,%.1f", px(s.X[k]), py(s.Y[k]))
		}
		b.WriteString(`"/>` + "\n")
		markers := n <= MaxMarkers
		if markers {
			for k := range n {
				p(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", px(s.X[k]), py(s.Y[k]), col)
			}
		}
		lx, ly := left+float64(i%cols)*colW, legendTop+float64(i/cols)*legendRow
		p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`, lx, lx+legendLine, ly-4, ly-4, col, dash)
		if markers {
			p(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`, lx+legendLine/2, ly-4, col)
		}
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+legendLine+5, ly, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

func color(i int) string { return Palette[((i%len(Palette))+len(Palette))%len(Palette)] }

// legendColumns returns how many legend entries fit side by side below the plot, and the
// width of a column.
func legendColumns(series []Series) (int, float64) {
	longest := 0
	for _, s := range series {
		longest = max(longest, len([]rune(s.Name)))
	}
	colW := legendLine + 5 + float64(longest)*charWidth + 20
	cols := max(1, min(len(series), int((width-left-8)/colW), 4))
	if cols > 1 {
		colW = (width - left - 8) / float64(cols)
	}
	return cols, colW
}

// xScale returns the x range and its ticks: the fixed range, or the data's from its least to
// its greatest value, with round ticks inside it (whole numbers when the data is).
func xScale(a Axis, data []float64) (lo, hi float64, ticks []float64) {
	if a.Max > a.Min {
		return a.Min, a.Max, ticksIn(a.Min, a.Max, step(a.Max-a.Min, integral(data)))
	}
	lo, hi = bounds(data)
	s := step(hi-lo, integral(data))
	return lo, hi, ticksIn(lo, hi, s)
}

// yScale returns the y range and its ticks: the fixed range, or the data's widened to round
// ticks at both ends, and down to zero when the data is positive and its least value is at
// most half its greatest.
func yScale(a Axis, data []float64) (lo, hi float64, ticks []float64) {
	if a.Max > a.Min {
		return a.Min, a.Max, ticksIn(a.Min, a.Max, step(a.Max-a.Min, false))
	}
	lo, hi = bounds(data)
	if lo >= 0 && lo <= hi/2 {
		lo = 0
	}
	s := step(hi-lo, integral(data))
	lo, hi = snap(math.Floor(lo/s+1e-9)*s), snap(math.Ceil(hi/s-1e-9)*s)
	if hi <= lo {
		hi = lo + s
	}
	return lo, hi, ticksIn(lo, hi, s)
}

// bounds returns the least and greatest finite value, [0, 1] when there is none, and a range
// of one around a single value.
func bounds(data []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	switch {
	case lo > hi:
		return 0, 1
	case lo == hi:
		return lo - 0.5, hi + 0.5
	}
	return lo, hi
}

func integral(data []float64) bool {
	for _, v := range data {
		if v != math.Trunc(v) {
			return false
		}
	}
	return len(data) > 0
}

// step is the tick spacing for a span: 1, 2, 2.5 or 5 times a power of ten, giving at most
// maxTicks intervals; at least 1 when whole is set.
func step(span float64, whole bool) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / maxTicks
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	s := 10 * p
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*p >= raw*(1-1e-9) {
			s = m * p
			break
		}
	}
	if whole && s < 1 {
		s = 1
	}
	return s
}

// ticksIn returns the multiples of s in [lo, hi].
func ticksIn(lo, hi, s float64) []float64 {
	var t []float64
	for k := math.Ceil(lo/s - 1e-9); k*s <= hi+s*1e-9; k++ {
		t = append(t, snap(k*s))
	}
	return t
}

// snap rounds away the binary error of a multiple of a decimal step (95 × 0.01 is
// 0.9500000000000001), so that a tick is the round number it stands for.
func snap(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if r == 0 {
		return 0 // not -0, which would print as "-0"
	}
	return r
}

// tickFormat writes tick values with as many decimals as their spacing needs, as percent
// when asked, and in exponent form when they are very large or very small.
func tickFormat(ticks []float64, percent bool) func(float64) string {
	scale, suffix := 1.0, ""
	if percent {
		scale, suffix = 100, "%"
	}
	if len(ticks) < 2 {
		return func(v float64) string { return strconv.FormatFloat(v*scale, 'g', 4, 64) + suffix }
	}
	s := (ticks[1] - ticks[0]) * scale
	big := math.Max(math.Abs(ticks[0]), math.Abs(ticks[len(ticks)-1])) * scale
	if big >= 1e6 || s < 1e-4 {
		return func(v float64) string { return strconv.FormatFloat(v*scale, 'g', 3, 64) + suffix }
	}
	dec := 0
	for ; dec < 6 && math.Abs(s*math.Pow(10, float64(dec))-math.Round(s*math.Pow(10, float64(dec)))) > 1e-6; dec++ {
	}
	return func(v float64) string { return strconv.FormatFloat(v*scale, 'f', dec, 64) + suffix }
}
