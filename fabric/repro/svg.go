package repro

import (
	"fmt"
	"html"
	"io"
	"math"
)

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// WriteSVG draws the figure as a small line chart (one polyline with markers per series).
func WriteSVG(w io.Writer, f *Figure) error {
	const W, H, L, R, T, B = 640.0, 400.0, 70.0, 20.0, 40.0, 90.0
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), 0.0, math.Inf(-1)
	for _, s := range f.Series {
		for i := range s.X {
			x0, x1 = math.Min(x0, s.X[i]), math.Max(x1, s.X[i])
			y0, y1 = math.Min(y0, s.Y[i]), math.Max(y1, s.Y[i])
		}
	}
	if !(x1 > x0) {
		x1 = x0 + 1
	}
	if !(y1 > y0) {
		y1 = y0 + 1
	}
	y1 *= 1.05
	px := func(x float64) float64 { return L + (x-x0)/(x1-x0)*(W-L-R) }
	py := func(y float64) float64 { return H - B - (y-y0)/(y1-y0)*(H-T-B) }
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	// Legend: three columns, or two when a name would run into the next column.
	cols := 3
	for _, s := range f.Series {
		if len(s.Name) > 26 {
			cols = 2
		}
	}
	rows := (len(f.Series) + cols - 1) / cols
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H+float64(max(rows-2, 0))*16)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="22" text-anchor="middle" font-size="14">%s</text>`+"\n", W/2, html.EscapeString(f.Title))
	p(`<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", L, H-B, W-R, H-B)
	p(`<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", L, T, L, H-B)
	for i := 0; i <= 5; i++ {
		x := x0 + float64(i)/5*(x1-x0)
		y := y0 + float64(i)/5*(y1-y0)
		p(`<text x="%.1f" y="%.0f" text-anchor="middle">%.3g</text>`+"\n", px(x), H-B+16, x)
		p(`<text x="%.0f" y="%.1f" text-anchor="end">%.3g</text>`+"\n", L-6, py(y)+4, y)
		p(`<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`+"\n", L, py(y), W-R, py(y))
	}
	p(`<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (L+W-R)/2, H-B+34, html.EscapeString(f.XLabel))
	p(`<text x="16" y="%.0f" text-anchor="middle" transform="rotate(-90 16 %.0f)">%s</text>`+"\n", (T+H-B)/2, (T+H-B)/2, html.EscapeString(f.YLabel))
	for i, s := range f.Series {
		c := palette[i%len(palette)]
		p(`<polyline fill="none" stroke="%s" stroke-width="1.5" points="`, c)
		for k := range s.X {
			p("%.1f,%.1f ", px(s.X[k]), py(s.Y[k]))
		}
		p(`"/>` + "\n")
		for k := range s.X {
			p(`<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"/>`+"\n", px(s.X[k]), py(s.Y[k]), c)
		}
		lx, ly := L+float64(i%cols)*570/float64(cols), H-B+52+float64(i/cols)*16
		p(`<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n", lx, ly-4, c, lx+16, ly, html.EscapeString(s.Name))
	}
	p("</svg>\n")
	return nil
}
