package config

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/intake-int/intake/budget"
	"github.com/intake-int/intake/dta"
)

// Budget sums what every component will take at the sizes configured (docs/config.md,
// "Budget"): each component's own Budget, and the DTA stores, computed here from the
// package's region headers.
func (c *Config) Budget() budget.Budget {
	in := c.Ingest()
	b := in.Budget()
	// The bus consumers that will read detect.ring events: the event log (with the API),
	// the export pipeline, the Redis sink (with the flow cache), the DTA event list.
	consumers := 0
	if c.Detect.Enabled {
		consumers++ // export pipeline
		if c.HTTP.Address != "" {
			consumers++ // event log
		}
		if c.FlowCache.Enabled && c.Export.Redis.Enabled() {
			consumers++
		}
	}
	b = append(b, c.Detect.Budget(consumers)...)
	b = append(b, c.FlowCache.Budget(in.Workers())...)
	b = append(b, dtaBudget(&c.DTA)...)
	return b
}

// dtaCacheEntry is the size of an entry of the translator's postcard cache.
const dtaCacheEntry = 128

// dtaBudget is the DTA stores' files in data_dir (each a 4 KiB header and its data, sizes
// from the region headers, docs/dta-layout.md) and epochs' copies of them, and the
// translator's postcard cache. On tmpfs the files are memory too; a store already there at
// its size needs no new space.
func dtaBudget(c *dta.Config) budget.Budget {
	if !c.Enabled {
		return nil
	}
	const header = 4096
	stores := []struct {
		file, part, note string
		h                dta.Header
	}{
		{dta.FileKW, "key-write store", fmt.Sprintf("%d slots", c.KeyWrite.Slots), dta.KWHeader(c.KeyWrite, c.Seed)},
		{dta.FilePaths, "paths store", fmt.Sprintf("%d slots", c.Paths.Slots), dta.KWHeader(c.Paths, c.Seed)},
		{dta.FileKI, "key-increment store", fmt.Sprintf("%d counters", c.KeyIncrement.Slots), dta.KIHeader(c.KeyIncrement, c.Seed)},
		{dta.FilePostcard, "postcard store", fmt.Sprintf("%d chunks, %d values", c.Postcard.Chunks, c.Postcard.Values), dta.PostcardHeader(c.Postcard, c.Seed)},
		{dta.FileAppend, "append store", fmt.Sprintf("%d lists × %d entries", c.Append.Lists, c.Append.Entries), dta.AppendHeader(c.Append)},
	}
	tmpfs := budget.OnTmpfs(c.DataDir)
	var b budget.Budget
	var all int64
	for _, s := range stores {
		size := budget.Add(header, dataLen(s.h))
		all = budget.Add(all, size)
		var present int64
		if fi, err := os.Stat(filepath.Join(c.DataDir, s.file)); err == nil && fi.Mode().IsRegular() && fi.Size() == size {
			present = size
		}
		it := budget.Item{Component: "dta", Part: s.part, Disk: size, Present: present, Path: c.DataDir,
			Note: s.file + ": " + s.note}
		if tmpfs {
			it.Memory = size - present
			it.Note += " (tmpfs: memory)"
		}
		if present > 0 {
			it.Note += ", present"
		}
		b = append(b, it)
	}
	if c.Epochs.Period > 0 {
		size := budget.Mul(int64(c.Epochs.Retain), all)
		it := budget.Item{Component: "dta", Part: "epochs", Disk: size, Path: c.DataDir,
			Note: fmt.Sprintf("%d snapshots of every store", c.Epochs.Retain)}
		if tmpfs {
			it.Memory = size
		}
		b = append(b, it)
	}
	b = append(b, budget.Item{Component: "dta", Part: "postcard cache", Memory: budget.Mul(int64(c.Postcard.Cache), dtaCacheEntry),
		Note: fmt.Sprintf("%d entries × %d B", c.Postcard.Cache, dtaCacheEntry)})
	return b
}

// dataLen recomputes a header's data length without the overflow of its own uint64
// products (validated factors, unvalidated product).
func dataLen(h dta.Header) int64 {
	slots, stride := int64(min(h.Slots, 1<<62)), int64(h.SlotBytes)
	switch h.Primitive {
	case dta.PrimPostcard:
		return budget.Add(budget.Mul(slots, stride), budget.Mul(int64(min(h.Capacity, 1<<62)), 8))
	case dta.PrimAppend:
		return budget.Add(budget.Mul(slots, 64), budget.Mul(slots, int64(min(h.Capacity, 1<<62)), stride))
	}
	return budget.Mul(slots, stride)
}

// CheckBudget refuses a configuration that needs more memory or disk than m has, with the
// breakdown (a *budget.Error).
func (c *Config) CheckBudget(m budget.Machine) error {
	return c.Budget().Check(m)
}
