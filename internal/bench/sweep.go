package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/intake-int/intake/internal/sim/plot"
)

// A sweep is INTCollector's Figs. 10 and 11 measured on intake: `bench ingest --sweep
// PARAM=V1,V2,...` repeats one mode's measurement for each value of one load parameter (the
// report rate, or at a fixed rate the hops, flows, per-hop fields, the share of reports
// with new values, or the event rate), and SweepChart draws CPU against it, one line per
// receive mode (and per sweep, when several are drawn together: with and without event
// detection).

// SweepParams are the parameters a sweep may vary: bench ingest's --pps and the generator's
// --hops, --flows, --fields, --vary (the draw model's probability that a report carries new
// values: events, but not at a rate it sets) and --events (events a second, each one change
// that the detector's default rules raise one event for, values otherwise constant).
var SweepParams = []string{"pps", "hops", "flows", "fields", "vary", "events"}

// sweepAxis is the x axis label of each parameter.
var sweepAxis = map[string]string{"pps": "datagrams per second sent", "hops": "hops per report",
	"flows": "flows", "fields": "per-hop fields", "vary": "share of reports with new values (--vary)",
	"events": "events per second the detector raised (measured; --events sets them)"}

// ParseSweep parses a --sweep value, PARAM=V1,V2,...: a parameter of SweepParams and at least
// one value, each a non-negative number (a whole one for hops, flows and fields), in the
// order given.
func ParseSweep(s string) (string, []string, error) {
	param, list, ok := strings.Cut(s, "=")
	if !ok || !slices.Contains(SweepParams, param) {
		return "", nil, fmt.Errorf("%q: want PARAM=V1,V2,... with PARAM one of %s", s, strings.Join(SweepParams, ", "))
	}
	vals := strings.Split(list, ",")
	for _, v := range vals {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || f < 0:
			return "", nil, fmt.Errorf("%s: %q: want a non-negative number", param, v)
		case param != "pps" && param != "vary" && f != float64(int(f)):
			return "", nil, fmt.Errorf("%s: %q: want a whole number", param, v)
		case param == "vary" && f > 1:
			return "", nil, fmt.Errorf("vary: %q: want a probability, 0 to 1", v)
		}
	}
	return param, vals, nil
}

// SweepPoint is one value's measurement: per series (a receive mode), the CPU it used in
// percent of one core, the reports per second it took, and its loss.
type SweepPoint struct {
	Value       float64            `json:"value"`
	CPUPercent  map[string]float64 `json:"cpu_percent"`
	ReportsPerS map[string]float64 `json:"reports_per_s"`
	Loss        map[string]float64 `json:"loss"`
	// EventsPerS is the events the series' detector raised (new keys apart) per second sent,
	// from its own counters: the event rate measured.
	EventsPerS map[string]float64 `json:"events_per_s,omitempty"`
}

// Sweep is a whole sweep: what was varied, the conditions it ran in, and the points.
type Sweep struct {
	Param string `json:"param"`
	// Label names the sweep in a figure of several ("detection", "no detection").
	Label string `json:"label,omitempty"`
	// Mode is the receive mode measured (socket, xdp, kernel); CPU says which CPU the points
	// are: the collector process's, and with an XDP program (xdp, kernel) its run time too
	// (the kernel's BPF statistics: work the kernel does for the collector).
	Mode       string       `json:"mode"`
	CPU        string       `json:"cpu"`
	Conditions string       `json:"conditions"`
	Points     []SweepPoint `json:"points"`
}

// Add appends the point of value v with one series' figures: cpuNs per report at reportsPerS.
func (s *Sweep) Add(v float64, series string, cpuNs, reportsPerS, loss float64) {
	if n := len(s.Points); n == 0 || s.Points[n-1].Value != v {
		s.Points = append(s.Points, SweepPoint{Value: v, CPUPercent: map[string]float64{}, ReportsPerS: map[string]float64{},
			Loss: map[string]float64{}})
	}
	p := &s.Points[len(s.Points)-1]
	p.CPUPercent[series] = cpuNs * reportsPerS / 1e7
	p.ReportsPerS[series], p.Loss[series] = reportsPerS, loss
}

// SetEvents sets the events per second that series raised at the last point added.
func (s *Sweep) SetEvents(series string, eventsPerS float64) {
	p := &s.Points[len(s.Points)-1]
	if p.EventsPerS == nil {
		p.EventsPerS = map[string]float64{}
	}
	p.EventsPerS[series] = eventsPerS
}

// SweepSeries are the series names of a mode's sweep, in the order drawn.
func SweepSeries(mode string) []string {
	switch mode {
	case ModeKernel:
		return []string{"socket", "xdp", "kernel"}
	case "xdp":
		return []string{"socket", "xdp"}
	}
	return []string{"socket"}
}

// SweepChart draws sweeps of one parameter: CPU (percent of one core) against the parameter,
// a line per sweep and series ("kernel mode, detection"; the second sweep's and later dashed),
// the conditions of the first as the subtitle. An event-rate sweep's x is each series' events
// raised a second as its detector counted them.
func SweepChart(title string, sweeps []Sweep) (*plot.Chart, error) {
	if len(sweeps) == 0 {
		return nil, fmt.Errorf("no sweep to draw")
	}
	param := sweeps[0].Param
	c := &plot.Chart{Title: title, X: plot.Axis{Label: sweepAxis[param]}, Y: plot.Axis{Label: "CPU, % of one core"},
		Subtitle: sweeps[0].Conditions}
	for i, s := range sweeps {
		if s.Param != param {
			return nil, fmt.Errorf("sweeps of %s and %s in one figure", param, s.Param)
		}
		for _, name := range SweepSeries(s.Mode) {
			ser := plot.Series{Name: name + " mode", Dashed: i > 0}
			if s.Label != "" {
				ser.Name += ", " + s.Label
			}
			for _, p := range s.Points {
				if v, ok := p.CPUPercent[name]; ok {
					x := p.Value
					if e, ok := p.EventsPerS[name]; ok && param == "events" {
						x = e // the event rate measured, not the one asked for
					}
					ser.X, ser.Y = append(ser.X, x), append(ser.Y, v)
				}
			}
			if len(ser.X) > 0 {
				c.Series = append(c.Series, ser)
			}
		}
	}
	return c, nil
}
