package dta

import (
	"bytes"
	"fmt"
	"html"
)

// Series is one line of a plot.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// PlotSVG draws line series on linear axes (y in [0, 1] as percent), in the style of the
// papers' figures: a small, self-contained SVG written by hand. bands, when set, shades
// x-intervals with the colour of series index (the best N per interval of DART Fig. 3).
func PlotSVG(title, xlabel, ylabel string, xmax float64, series []Series, bands [][3]float64) []byte {
	const W, H, L, R, T, B = 640.0, 400.0, 60.0, 150.0, 40.0, 50.0
	pw, ph := W-L-R, H-T-B
	x := func(v float64) float64 { return L + v/xmax*pw }
	y := func(v float64) float64 { return T + (1-v)*ph }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for _, bd := range bands {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" opacity="0.12"/>`+"\n", x(bd[0]), T, x(bd[1])-x(bd[0]), ph, palette[int(bd[2])%len(palette)])
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", L+pw/2, html.EscapeString(title))
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="black"/>`+"\n", L, T, pw, ph)
	for i := 0; i <= 5; i++ {
		v := float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", L, L+pw, y(v), y(v), L-5, y(v)+4, v*100)
		xv := xmax * v
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%.3g</text>`+"\n", x(xv), T+ph+16, xv)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", L+pw/2, H-10, html.EscapeString(xlabel))
	fmt.Fprintf(&b, `<text transform="translate(15 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", T+ph/2, html.EscapeString(ylabel))
	for i, s := range series {
		col := palette[i%len(palette)]
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="`, col, dash)
		for j := range s.X {
			fmt.Fprintf(&b, "%.1f,%.1f ", x(s.X[j]), y(s.Y[j]))
		}
		b.WriteString(`"/>` + "\n")
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="2"%s/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			L+pw+10, L+pw+30, T+15+18*float64(i), T+15+18*float64(i), col, dash, L+pw+35, T+19+18*float64(i), html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
