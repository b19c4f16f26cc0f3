package main

import (
	"math"
	"strconv"
	"strings"
)

// The print_*.go files write the API's answers and the collector's counters as the verbs
// print them for people; the runtime packages give only the data (their JSON types). Flows
// are written with telemetry.FlowString, the notation the API's parsers read back.

// sum adds a breakdown's counts.
func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// pathText writes a path of switch ids, first hop first: "3 > 1 > 7".
func pathText(p []uint32) string {
	s := make([]string, len(p))
	for i, id := range p {
		s[i] = strconv.FormatUint(uint64(id), 10)
	}
	return strings.Join(s, " > ")
}

// nanos writes a duration in nanoseconds in the unit that reads best, to three significant
// digits: 850 ns (a fraction, as of a mean, to three: 10.5 ns), 20.4 µs, 1.25 ms, 2.00 s.
func nanos(ns float64) string {
	a := ns
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 1e9:
		return sig(ns/1e9) + " s"
	case a >= 1e6:
		return sig(ns/1e6) + " ms"
	case a >= 1e3:
		return sig(ns/1e3) + " µs"
	}
	if ns == math.Trunc(ns) || a < 1 {
		return strconv.FormatFloat(ns, 'f', 0, 64) + " ns"
	}
	return sig(ns) + " ns" // a mean: 10.5 ns
}

// nanosOf writes an optional duration in nanoseconds as nanos does, "-" when absent.
func nanosOf[T uint64 | float64](p *T) string {
	if p == nil {
		return "-"
	}
	return nanos(float64(*p))
}

// sig writes v (at least 1 in magnitude) to three significant digits.
func sig(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 99.95:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 9.995:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
