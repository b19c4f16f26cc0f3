package labelsim

import (
	"strconv"
	"strings"

	"github.com/intake-int/intake/internal/sim/plot"
)

// Chart draws the figure: one line per series, markers at the measured points, the analysis
// dashed, the paper's own points as markers without a line, the conditions as a subtitle;
// axes follow the paper's figure where it fixes them (Fig. 11's and Fig. 12's coverage),
// the data's otherwise. Figs. 6 and 10 put coverage on the left axis and INT bandwidth on a
// right-hand one, as the paper does, each axis fitted to its own quantity (near 1 and near 0
// on one axis, neither would show its differences), and Fig. 18 its two counts; Fig. 22
// stacks its panels (a) and (b).
// Figs. 17 and 19 are counts per category (labeling
// times 1-5; F1, F2, F3), drawn as grouped bars.
func (f *Figure) Chart() *plot.Chart {
	c := &plot.Chart{Title: f.Title, Subtitle: f.Conditions, X: plot.Axis{Label: f.XLabel}, Y: plot.Axis{Label: f.YLabel}}
	for _, s := range f.Series {
		c.Series = append(c.Series, plot.Series{Name: s.Name, X: s.X, Y: s.Y, Dashed: s.Analysis, Points: s.Paper})
	}
	switch f.ID {
	case "fig10":
		twinAxes(c, "coverage", plot.Axis{Label: "INT bandwidth (Mb/s)"}, "INT bandwidth")
	case "fig22":
		// The paper's panels (a) packets and (b) extra bits, stacked on one hops axis.
		twoPanels(c, "packets", plot.Axis{Label: "extra bits"}, "bits")
	case "fig18":
		// The paper's two axes, on which its "cross point" is drawn (a property of the two
		// scales, not of the counts: docs/label-results.md).
		twinAxes(c, "labeled packets", plot.Axis{Label: "labeling times"}, "labeling times")
	case "fig11":
		c.Y.Min, c.Y.Max = 0.82, 1.02 // the authors' plot
	case "fig12":
		c.Y.Min, c.Y.Max = 0.85, 1 // room for A/B falling to 0.88
	case "fig6":
		twinAxes(c, "coverage", plot.Axis{Label: "INT bandwidth occupation", Percent: true}, "occupation")
	case "fig17":
		if len(f.Series) > 0 {
			for _, x := range f.Series[0].X {
				c.Categories = append(c.Categories, strconv.FormatFloat(x, 'g', -1, 64))
			}
		}
	case "fig19":
		c.X.Label = "probability function"
		c.Categories = []string{"F1", "F2", "F3"}
		if strings.Contains(f.Conditions, "F3 inferred") {
			c.Categories[2] = "F3 (time only, inferred)"
		}
	}
	return c
}

// twoPanels stacks a second plot area, lower, under c's, labels the first one's y axis
// top, and moves the series whose names contain in into the second.
func twoPanels(c *plot.Chart, top string, lower plot.Axis, in string) {
	c.Y.Label = top
	c.Panels = []plot.Axis{lower}
	for i := range c.Series {
		if strings.Contains(c.Series[i].Name, in) {
			c.Series[i].Panel = 1
		}
	}
}

// twinAxes draws the series whose names contain in on a right-hand axis over the same plot
// area, as the paper's Figs. 6 and 10 do, each axis fitted to its own quantity.
func twinAxes(c *plot.Chart, left string, right plot.Axis, in string) {
	c.Y.Label, c.Right = left, right
	for i := range c.Series {
		if strings.Contains(c.Series[i].Name, in) {
			c.Series[i].Right = true
			c.Series[i].Name += " (right axis)"
		}
	}
}
