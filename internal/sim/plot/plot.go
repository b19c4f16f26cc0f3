// Package plot draws the figures of intake's paper reproductions as small, self-contained SVG
// charts: sim/dtasim's DART Figs. 3-4 and DTA Figs. 12-13 (query success against load
// factor and key age, DART §5.1-5.2, DTA §6.5.2-6.5.3) and sim/labelsim's INT-label Figs. 6-19
// (INT-label §6.2). The SVG is written by hand so that the reproductions need nothing beyond
// the standard library; docs/dta-results.md and docs/label-results.md show the output.
//
// A chart is a frame around one plot area, or several stacked on one x axis (quantities of
// different scale, each axis fitted to its own data), with an optional second y axis on the
// right of the first (a twin axis), an optional subtitle under the title, with grid lines at 1-2-5 tick values,
// a title, axis labels and a legend below, in as many columns as the names allow. The margins
// follow the widest tick label, so that no text overlaps another or leaves the picture. An
// axis has a fixed range or the data's, widened to round ticks (and to zero when zero is
// near). A chart with categories draws grouped bars instead of lines. Lines have a marker at
// each point when there are at most MaxMarkers, a different marker shape per series, and a
// series that a later one covers is drawn wider beneath it, so that both stay visible.
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

// Series is one line, or one bar per category, of a chart.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	// Panel is the plot area the series is drawn in: 0 is the chart's Y axis, i > 0 is
	// Chart.Panels[i-1].
	Panel int
	// Like, when above 0, makes the series a repeat of series Like-1 (in another panel, on
	// a zoomed axis): drawn in its colour and marker, and not in the legend again.
	Like int
	// Points draws the series as markers only, without a line (points read off another
	// source, such as a paper's own, laid over the measured curves).
	Points bool
	// Right puts the series on the chart's right-hand axis (Chart.Right), over the first
	// plot area.
	Right bool
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
	Title string
	X, Y  Axis
	// Panels are the y axes of further plot areas stacked below the first, on the same x
	// axis; a series with Panel i > 0 is drawn in the area of Panels[i-1].
	Panels []Axis
	// Categories, when set, make the chart a grouped bar chart: the x axis is the categories
	// in order, and a series' Y[k] is its bar in category k (X is not used).
	Categories []string
	Series     []Series
	Bands      []Band
	// Subtitle, when set, is written under the title in smaller type, wrapped to the
	// picture's width (the setup a figure was measured in).
	Subtitle string
	// Right, when its Label is set, is a second y axis on the right of the first plot area
	// (a twin axis), for the series marked Right.
	Right Axis
}

// MaxMarkers is the most points a series may have and still get a marker at each: beyond it
// a series is a sampled curve rather than a few measured points.
const MaxMarkers = 30

// Palette is the series colours, in order (matplotlib's tab10).
var Palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// Geometry, in pixels. The picture is at least minWidth wide; the plot area starts at
// (left, top), left being wide enough for the y axis title and the widest tick label. Below
// the last plot area come the x tick labels, the x axis label and the legend rows.
const (
	minWidth   = 640.0
	right      = 24.0
	top        = 40.0
	plotH      = 280.0 // one plot area
	panelH     = 170.0 // each of several stacked plot areas
	panelGap   = 18.0
	titleX     = 18.0 // baseline of the rotated y axis title
	legendRow  = 18.0
	legendLine = 26.0
	lineWidth  = 2.0
	maxTicks   = 6
	fontSize   = 12.0
)

// textWidth is a generous estimate of the advance of s in the 12 px sans-serif font (the
// widths of DejaVu Sans, which is what librsvg and most browsers fall back to, rounded up).
func textWidth(s string) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			w += 7.7
		case strings.ContainsRune(".,:;'|!ijlI()[] ", r):
			w += 4.2
		case r >= 'A' && r <= 'Z', r == 'm', r == 'w', r == '%', r == 'M', r == 'W':
			w += 9.6
		default:
			w += 7.4
		}
	}
	return w
}

// layout is where everything of a chart goes.
type layout struct {
	width, height, left, plotW float64
	panels                     []panel
	x0, x1                     float64
	xt                         []float64
	xf                         func(float64) string
	cols                       int
	colW                       float64
	legendTop                  float64
	sub                        []string // the subtitle's lines
	rm                         float64  // the right margin
	twin                       *panel   // the right-hand axis's scale over the first plot area
}

// panelOf is the plot area and scale series s is drawn in.
func (l *layout) panelOf(s Series) panel {
	if s.Right && l.twin != nil {
		return *l.twin
	}
	return l.panels[min(max(s.Panel, 0), len(l.panels)-1)]
}

// panel is one plot area: its top edge, height, y axis and scale.
type panel struct {
	axis   Axis
	top, h float64
	y0, y1 float64
	yt     []float64
	yf     func(float64) string
}

func (l *layout) px(v float64) float64 { return l.left + (v-l.x0)/(l.x1-l.x0)*l.plotW }

func (p *panel) py(v float64) float64 { return p.top + (1-(v-p.y0)/(p.y1-p.y0))*p.h }

func (p *panel) bottom() float64 { return p.top + p.h }

func (c *Chart) layout() *layout {
	l := &layout{sub: wrap(c.Subtitle, minWidth-2*right), rm: right}
	twin := c.Right.Label != ""
	axes := append([]Axis{c.Y}, c.Panels...)
	h := plotH
	if len(axes) > 1 {
		h = panelH
	}
	widest := 0.0
	for i, a := range axes {
		var ys []float64
		for _, s := range c.Series {
			if s.Panel == i && !(twin && s.Right) {
				ys = append(ys, s.Y...)
			}
		}
		if len(c.Categories) > 0 {
			ys = append(ys, 0) // bars stand on zero
		}
		p := panel{axis: a, top: top + float64(len(l.sub))*subtitleRow + float64(i)*(h+panelGap), h: h}
		p.y0, p.y1, p.yt = yScale(a, ys)
		if len(c.Categories) == 0 {
			// A little room beyond the end ticks, so that a line at 100% or at zero is not
			// drawn on the frame.
			pad := (p.y1 - p.y0) * 0.03
			p.y0, p.y1 = p.y0-pad, p.y1+pad
		}
		p.yf = tickFormat(p.yt, a.Percent)
		for _, v := range p.yt {
			widest = max(widest, textWidth(p.yf(v)))
		}
		l.panels = append(l.panels, p)
	}
	// The rotated y title's glyphs reach about fontSize right of its baseline; the tick
	// labels end 6 px left of the frame.
	l.left = math.Ceil(titleX + fontSize/2 + 8 + widest + 6)
	if twin {
		var ys []float64
		for _, s := range c.Series {
			if s.Right {
				ys = append(ys, s.Y...)
			}
		}
		p := l.panels[0]
		p.axis = c.Right
		p.y0, p.y1, p.yt = yScale(c.Right, ys)
		pad := (p.y1 - p.y0) * 0.03
		p.y0, p.y1 = p.y0-pad, p.y1+pad
		p.yf = tickFormat(p.yt, c.Right.Percent)
		w := 0.0
		for _, v := range p.yt {
			w = max(w, textWidth(p.yf(v)))
		}
		l.twin = &p
		// Tick labels 6 px right of the frame, the rotated title beyond them.
		l.rm = math.Ceil(6 + w + 8 + fontSize/2 + titleX)
	}

	cols, colW, legendW := legendColumns(c.Series, minWidth-l.left-l.rm)
	l.width = math.Max(minWidth, l.left+legendW+l.rm)
	l.width = math.Max(l.width, textWidth(c.Title)+2*right)
	l.plotW = l.width - l.left - l.rm
	l.cols, l.colW = cols, colW

	if n := len(c.Categories); n > 0 {
		l.x0, l.x1 = -0.5, float64(n)-0.5
	} else {
		var xs []float64
		for _, s := range c.Series {
			xs = append(xs, s.X...)
		}
		l.x0, l.x1, l.xt = xScale(c.X, xs)
		l.xf = tickFormat(l.xt, c.X.Percent)
		// Tick labels need room side by side: thin the ticks to every other one until they
		// have it.
		for len(l.xt) > 2 {
			w := 0.0
			for _, v := range l.xt {
				w = max(w, textWidth(l.xf(v)))
			}
			if (l.px(l.xt[1])-l.px(l.xt[0]))-w >= 10 {
				break
			}
			var t []float64
			for i := 0; i < len(l.xt); i += 2 {
				t = append(t, l.xt[i])
			}
			l.xt = t
			l.xf = tickFormat(l.xt, c.X.Percent)
		}
	}
	last := l.panels[len(l.panels)-1]
	l.legendTop = last.bottom() + 58
	_, entries := legendSlots(c.Series)
	rows := (entries + cols - 1) / cols
	l.height = l.legendTop + float64(max(rows, 1)-1)*legendRow + 14
	return l
}

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
	l := c.layout()
	first, last := l.panels[0], l.panels[len(l.panels)-1]

	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", l.width, l.height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="24" text-anchor="middle" font-size="14">%s</text>`+"\n", l.width/2, html.EscapeString(c.Title))
	for i, line := range l.sub {
		p(`<text x="%.0f" y="%.0f" text-anchor="middle" font-size="11" fill="#444">%s</text>`+"\n", l.width/2, 24+float64(i+1)*subtitleRow, html.EscapeString(line))
	}
	for _, bd := range c.Bands {
		a, z := l.px(math.Max(bd.From, l.x0)), l.px(math.Min(bd.To, l.x1))
		if z > a {
			p(`<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" opacity="0.12"/>`+"\n", a, first.top, z-a, last.bottom()-first.top, color(bd.Series))
		}
	}
	for _, pn := range l.panels {
		for _, v := range pn.yt {
			p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%s</text>`+"\n",
				l.left, l.left+l.plotW, pn.py(v), pn.py(v), l.left-6, pn.py(v)+4, pn.yf(v))
		}
		label := pn.axis.Label
		p(`<text transform="translate(%.0f %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", titleX, pn.top+pn.h/2, html.EscapeString(label))
	}
	if tw := l.twin; tw != nil {
		for _, v := range tw.yt {
			p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="black"/><text x="%.0f" y="%.1f">%s</text>`+"\n",
				l.left+l.plotW, l.left+l.plotW+4, tw.py(v), tw.py(v), l.left+l.plotW+6, tw.py(v)+4, tw.yf(v))
		}
		p(`<text transform="translate(%.0f %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", l.width-titleX+fontSize/2, tw.top+tw.h/2, html.EscapeString(tw.axis.Label))
	}
	if len(c.Categories) > 0 {
		for k, name := range c.Categories {
			p(`<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", l.px(float64(k)), last.bottom()+17, html.EscapeString(name))
		}
	} else {
		for _, v := range l.xt {
			for _, pn := range l.panels {
				p(`<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="black"/>`, l.px(v), l.px(v), pn.bottom(), pn.bottom()+4)
			}
			p(`<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", l.px(v), last.bottom()+17, l.xf(v))
		}
	}
	p(`<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", l.left+l.plotW/2, last.bottom()+36, html.EscapeString(c.X.Label))

	if len(c.Categories) > 0 {
		c.writeBars(&b, l)
	} else {
		c.writeLines(&b, l)
	}
	for _, pn := range l.panels {
		p(`<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", l.left, pn.top, l.plotW, pn.h)
	}
	b.WriteString("</svg>\n")
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}

// writeBars draws each category's bars side by side, in series order, and the legend.
func (c *Chart) writeBars(b *strings.Builder, l *layout) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	group := l.plotW / float64(len(c.Categories)) * 0.7
	bw := group / float64(max(len(c.Series), 1))
	for i, s := range c.Series {
		pn := l.panelOf(s)
		zero := pn.py(math.Max(pn.y0, math.Min(0, pn.y1)))
		for k := range min(len(c.Categories), len(s.Y)) {
			x := l.px(float64(k)) - group/2 + float64(i)*bw
			y := pn.py(s.Y[k])
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" stroke="white"/>`+"\n", x, math.Min(y, zero), bw, math.Abs(zero-y), color(i))
		}
		lx, ly := l.left+float64(i%l.cols)*l.colW, l.legendTop+float64(i/l.cols)*legendRow
		p(`<rect x="%.1f" y="%.1f" width="%.1f" height="10" fill="%s"/>`, lx+legendLine/2-7, ly-9, 14.0, color(i))
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+legendLine+5, ly, html.EscapeString(s.Name))
	}
}

// writeLines draws every series as a line with its markers, and the legend.
func (c *Chart) writeLines(b *strings.Builder, l *layout) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	under := covered(c.Series, l)
	slot, _ := legendSlots(c.Series)
	for i, s := range c.Series {
		pn := l.panelOf(s)
		st := style(c.Series, i)
		col, dash := color(st), ""
		width := lineWidth + 2*float64(min(under[i], 3))
		if s.Dashed {
			dash = fmt.Sprintf(` stroke-dasharray="%.0f %.0f"`, 3*width, 2*width)
		}
		n := min(len(s.X), len(s.Y))
		if s.Points {
			c.writePoints(b, l, i, st, pn, slot[i])
			continue
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="%.1f"%s stroke-linejoin="round" points="`, col, width, dash)
		for k := range n {
			if k > 0 {
				b.WriteByte(' ')
			}
			p("%.1f,%.1f", l.px(s.X[k]), pn.py(s.Y[k]))
		}
		b.WriteString(`"/>` + "\n")
		markers := n <= MaxMarkers
		r := 3.5 + float64(min(under[i], 3))
		if markers {
			for k := range n {
				b.WriteString(marker(st, l.px(s.X[k]), pn.py(s.Y[k]), r, col))
			}
			b.WriteByte('\n')
		}
		if slot[i] < 0 {
			continue
		}
		lx, ly := l.left+float64(slot[i]%l.cols)*l.colW, l.legendTop+float64(slot[i]/l.cols)*legendRow
		p(`<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`, lx, lx+legendLine, ly-4, ly-4, col, width, dash)
		if markers {
			b.WriteString(marker(st, lx+legendLine/2, ly-4, r, col))
		}
		p(`<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+legendLine+5, ly, html.EscapeString(s.Name))
	}
}

// writePoints draws series i as markers only, and its legend entry as one marker.
func (c *Chart) writePoints(b *strings.Builder, l *layout, i, st int, pn panel, slot int) {
	s, col, r := c.Series[i], color(st), 4.0
	for k := range min(len(s.X), len(s.Y)) {
		b.WriteString(marker(st, l.px(s.X[k]), pn.py(s.Y[k]), r, col))
	}
	b.WriteByte('\n')
	if slot < 0 {
		return
	}
	lx, ly := l.left+float64(slot%l.cols)*l.colW, l.legendTop+float64(slot/l.cols)*legendRow
	b.WriteString(marker(st, lx+legendLine/2, ly-4, r, col))
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+legendLine+5, ly, html.EscapeString(s.Name))
}

// subtitleRow is the line height of the subtitle.
const subtitleRow = 15.0

// wrap splits s into lines of at most width pixels (in the subtitle's 11 px type), at spaces.
func wrap(s string, width float64) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && textWidth(line+" "+w)*11/fontSize > width {
			lines, line = append(lines, line), w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// covered returns, for each series, how many later series (drawn over it) run within two
// pixels of it along half or more of its points: each of those widens its line, so that
// it shows on both sides of the ones above.
func covered(series []Series, l *layout) []int {
	under := make([]int, len(series))
	pos := func(s Series, k int) (float64, float64) {
		pn := l.panelOf(s)
		return l.px(s.X[k]), pn.py(s.Y[k])
	}
	for i, a := range series {
		na := min(len(a.X), len(a.Y))
		if na == 0 {
			continue
		}
		for _, z := range series[i+1:] {
			nz := min(len(z.X), len(z.Y))
			close := 0
			for k := range na {
				ax, ay := pos(a, k)
				// The later series' point at the same x, if it has one: series of a
				// figure share their x values, or are not drawn over each other.
				for m := range nz {
					if zx, zy := pos(z, m); math.Abs(zx-ax) < 0.5 {
						if math.Abs(zy-ay) <= 2 {
							close++
						}
						break
					}
				}
			}
			if close*2 >= na {
				under[i]++
			}
		}
	}
	return under
}

// marker returns the SVG of series i's marker at (x, y): a circle, square, triangle, diamond,
// inverted triangle or cross by series, white-edged so that touching markers stay apart.
func marker(i int, x, y, r float64, col string) string {
	edge := `stroke="white" stroke-width="0.8"`
	switch ((i % 6) + 6) % 6 {
	case 1:
		s := r * 0.9
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" %s/>`, x-s, y-s, 2*s, 2*s, col, edge)
	case 2:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" %s/>`, x, y-1.2*r, x-1.1*r, y+0.8*r, x+1.1*r, y+0.8*r, col, edge)
	case 3:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" %s/>`, x, y-1.25*r, x+1.1*r, y, x, y+1.25*r, x-1.1*r, y, col, edge)
	case 4:
		return fmt.Sprintf(`<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s" %s/>`, x, y+1.2*r, x-1.1*r, y-0.8*r, x+1.1*r, y-0.8*r, col, edge)
	case 5:
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2.2"/>`, x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r, col)
	}
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" %s/>`, x, y, r, col, edge)
}

// style is the index of the series whose colour and marker series i is drawn in.
func style(series []Series, i int) int {
	if l := series[i].Like; l > 0 && l <= len(series) {
		return l - 1
	}
	return i
}

// legendSlots numbers the series that have a legend entry, in order; -1 for repeats.
func legendSlots(series []Series) (slot []int, n int) {
	slot = make([]int, len(series))
	for i, s := range series {
		slot[i] = -1
		if s.Like <= 0 {
			slot[i], n = n, n+1
		}
	}
	return slot, n
}

func color(i int) string { return Palette[((i%len(Palette))+len(Palette))%len(Palette)] }

// legendColumns returns how many legend entries fit side by side in avail pixels (at most
// four), the width of a column, and the width the legend needs: more than avail only when one
// name alone is wider.
func legendColumns(series []Series, avail float64) (cols int, colW, need float64) {
	longest, entries := 0.0, 0
	for _, s := range series {
		if s.Like <= 0 {
			longest, entries = max(longest, textWidth(s.Name)), entries+1
		}
	}
	colW = legendLine + 5 + longest + 20
	cols = max(1, min(entries, int(avail/colW), 4))
	need = float64(cols) * colW
	if cols > 1 {
		colW = avail / float64(cols)
	}
	return cols, colW, need
}

// xScale returns the x range and its ticks: the fixed range, or the data's, reaching out to
// the round tick just beyond either end when that is within half a tick step, with round ticks
// inside it (whole numbers when the data is).
func xScale(a Axis, data []float64) (lo, hi float64, ticks []float64) {
	if a.Max > a.Min {
		return a.Min, a.Max, ticksIn(a.Min, a.Max, step(a.Max-a.Min, integral(data)))
	}
	lo, hi = bounds(data)
	s := step(hi-lo, integral(data))
	if f := snap(math.Floor(lo/s+1e-9) * s); lo-f <= s/2 {
		lo = f
	}
	if c := snap(math.Ceil(hi/s-1e-9) * s); c-hi <= s/2 {
		hi = c
	}
	return lo, hi, ticksIn(lo, hi, s)
}

// yScale returns the y range and its ticks: the fixed range, or the data's widened to round
// ticks at both ends, and down to zero when the data is positive and its least value is at
// most half its greatest. Data close to its ceiling (coverage near 1) keeps a range as
// narrow as its spread, so that the differences show.
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

// step is the tick spacing for a span: 1, 2 or 5 times a power of ten, giving at most
// maxTicks intervals; at least 1 when whole is set.
func step(span float64, whole bool) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / maxTicks
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	s := 10 * p
	for _, m := range []float64{1, 2, 5} {
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

// tickFormat writes an axis's tick values alike: with as many decimals as their spacing
// needs, as percent when asked, and with an SI suffix (k, M, G) or, for tiny values, a power
// of ten common to all when they are very large or very small.
func tickFormat(ticks []float64, percent bool) func(float64) string {
	scale, suffix := 1.0, ""
	if percent {
		scale, suffix = 100, "%"
	}
	s := 1.0
	if len(ticks) >= 2 {
		s = (ticks[1] - ticks[0]) * scale
	}
	big := 0.0
	for _, v := range ticks {
		big = math.Max(big, math.Abs(v*scale))
	}
	switch {
	case !percent && big >= 1e5:
		// At most four digits before the suffix.
		div, unit := 1e3, "k"
		if big >= 1e7 {
			div, unit = 1e6, "M"
		}
		if big >= 1e10 {
			div, unit = 1e9, "G"
		}
		scale, suffix, s = scale/div, unit, s/div
	case s < 1e-4:
		e := math.Floor(math.Log10(s))
		m := math.Pow(10, -e)
		d := decimals(s * m)
		return func(v float64) string {
			return strconv.FormatFloat(v*scale*m, 'f', d, 64) + "e" + strconv.Itoa(int(e)) + suffix
		}
	}
	d := decimals(s)
	return func(v float64) string { return strconv.FormatFloat(v*scale, 'f', d, 64) + suffix }
}

// decimals is how many decimals write multiples of step s exactly.
func decimals(s float64) int {
	d := 0
	for ; d < 6 && math.Abs(s*math.Pow(10, float64(d))-math.Round(s*math.Pow(10, float64(d)))) > 1e-6; d++ {
	}
	return d
}
