package labelsim

import (
	"strconv"
	"strings"

	"github.com/intake-int/intake/internal/sim/plot"
)

// Chart draws the figure: one line per series, markers at the measured points, the analysis
// dashed; both axes follow the data. Fig. 6 puts coverage and INT bandwidth occupation in
// two stacked plot areas, each axis fitted to its own quantity (near 1 and near 0 on one axis,
// neither would show its differences). Figs. 17 and 19 are counts per category (labeling
// times 1-5; F1, F2, F3), drawn as grouped bars.
func (f *Figure) Chart() *plot.Chart {
	c := &plot.Chart{Title: f.Title, X: plot.Axis{Label: f.XLabel}, Y: plot.Axis{Label: f.YLabel}}
	for _, s := range f.Series {
		c.Series = append(c.Series, plot.Series{Name: s.Name, X: s.X, Y: s.Y, Dashed: s.Analysis})
	}
	switch f.ID {
	case "fig6":
		c.Y.Label = "coverage"
		c.Panels = []plot.Axis{{Label: "INT bandwidth occupation", Percent: true}}
		for i := range c.Series {
			if strings.HasSuffix(c.Series[i].Name, "occupation") {
				c.Series[i].Panel = 1
			}
		}
	case "fig17":
		if len(f.Series) > 0 {
			for _, x := range f.Series[0].X {
				c.Categories = append(c.Categories, strconv.FormatFloat(x, 'g', -1, 64))
			}
		}
	case "fig19":
		c.X.Label = "probability function"
		c.Categories = []string{"F1", "F2", "F3"}
	}
	return c
}
