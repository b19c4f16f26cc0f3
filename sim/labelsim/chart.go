package labelsim

import "github.com/intake-int/intake/sim/plot"

// Chart draws the figure: one line per series, markers at the measured points, the analysis
// dashed; both axes follow the data.
func (f *Figure) Chart() *plot.Chart {
	c := &plot.Chart{Title: f.Title, X: plot.Axis{Label: f.XLabel}, Y: plot.Axis{Label: f.YLabel}}
	for _, s := range f.Series {
		c.Series = append(c.Series, plot.Series{Name: s.Name, X: s.X, Y: s.Y, Dashed: s.Analysis})
	}
	return c
}
