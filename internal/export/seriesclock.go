package export

import "hash/maphash"

// SeriesClock keeps a sink from writing two points of one series with one timestamp. A
// time-series store keeps one point per series and time (InfluxDB, VictoriaMetrics and
// Prometheus overwrite or refuse the second), so two events of one series that arrive in
// one datagram, one GRO super-datagram or one millisecond would silently lose all but
// one. A sink's points of a series are therefore written in strictly increasing time: a
// point not later than the series' last is written one unit (the sink's precision) after
// it. Points of a series arrive nearly in time order, so the shift is rare and small: the
// reports of one datagram, or of a few microseconds across workers (docs/export.md,
// "Timestamps").
//
// A series is named by a 64-bit hash of its identity (measurement, tags and field names as
// the sink writes them); two series that hash alike are only kept apart less finely. Series
// not written for horizon units are forgotten, so memory follows the live series.
type SeriesClock struct {
	unit    int64 // the sink's time unit in ns: 1 (line protocol in ns), 1e6 (remote write in ms)
	horizon int64 // in units
	last    map[uint64]int64
	newest  int64 // the newest time written, in units
	seed    maphash.Seed
	pruneAt int // prune when last holds this many series
}

// NewSeriesClock returns a clock for a sink writing times in units of unit ns.
func NewSeriesClock(unit int64) *SeriesClock {
	const horizonNs = 60e9 // far beyond any reordering between workers
	return &SeriesClock{unit: unit, horizon: horizonNs / unit, last: map[uint64]int64{},
		seed: maphash.MakeSeed(), pruneAt: 1 << 12}
}

// at returns the time, in the sink's units, at which to write the point of series id
// (its identity's bytes) whose own time is t units.
func (c *SeriesClock) At(id []byte, t int64) int64 {
	h := c.hash(id)
	if last, ok := c.last[h]; ok && t <= last {
		t = last + 1
	}
	c.last[h] = t
	if t > c.newest {
		c.newest = t
	}
	if len(c.last) >= c.pruneAt {
		c.prune()
	}
	return t
}

func (c *SeriesClock) hash(id []byte) uint64 { return maphash.Bytes(c.seed, id) }

// prune forgets the series not written within the horizon of the newest time, and lets the
// map grow to twice what is left before the next prune.
func (c *SeriesClock) prune() {
	for h, t := range c.last {
		if c.newest-t > c.horizon {
			delete(c.last, h)
		}
	}
	c.pruneAt = max(1<<12, 2*len(c.last))
}
