package dta

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/internal/budget"
)

// dtaCacheEntry is the size of an entry of the translator's postcard cache.
const dtaCacheEntry = 128

// Budget is the DTA stores' files in data_dir (each a 4 KiB header and its data, sizes
// from the region headers, docs/dta-layout.md) and epochs' copies of them, and the
// translator's postcard cache. On tmpfs the files are memory too; a store already there at
// its size needs no new space. Queries' postcard lookup table is counted at the value table's
// capacity. Each of the workers (and the event list's writer) has an Append batcher: a batch
// of entries for every list.
func (c *Config) Budget(workers int) budget.Budget {
	if !c.Enabled {
		return nil
	}
	const header = 4096
	stores := []struct {
		file, part, note string
		h                Header
	}{
		{FileKW, "key-write store", fmt.Sprintf("%d slots", c.KeyWrite.Slots), KWHeader(c.KeyWrite, c.Seed)},
		{FilePaths, "paths store", fmt.Sprintf("%d slots", c.Paths.Slots), KWHeader(c.Paths, c.Seed)},
		{FileKI, "key-increment store", fmt.Sprintf("%d counters", c.KeyIncrement.Slots), KIHeader(c.KeyIncrement, c.Seed)},
		{FilePostcard, "postcard store", fmt.Sprintf("%d chunks, %d values", c.Postcard.Chunks, c.Postcard.Values), PostcardHeader(c.Postcard, c.Seed)},
		{FileAppend, "append store", fmt.Sprintf("%d lists × %d entries", c.Append.Lists, c.Append.Entries), AppendHeader(c.Append)},
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
		it := budget.Item{Component: "dta", Part: s.part, Disk: size, Present: present, Path: c.DataDir, Outside: true,
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
		it := budget.Item{Component: "dta", Part: "epochs", Disk: size, Path: c.DataDir, Outside: true,
			Note: fmt.Sprintf("%d snapshots of every store", c.Epochs.Retain)}
		if tmpfs {
			it.Memory = size
		}
		b = append(b, it)
	}
	b = append(b, budget.Item{Component: "dta", Part: "postcard lookup", Memory: lookupBytes(int64(c.Postcard.Values)),
		Note: fmt.Sprintf("%d values × 32 B (queries' table of known values, while it is rebuilt)", c.Postcard.Values)})
	b = append(b, budget.Item{Component: "dta", Part: "postcard cache", Memory: budget.Mul(int64(c.Postcard.Cache), dtaCacheEntry),
		Note: fmt.Sprintf("%d entries × %d B", c.Postcard.Cache, dtaCacheEntry)})
	batchers := int64(max(workers, 1))
	if c.INT.EventList >= 0 {
		batchers++
	}
	stride := int64(AppendHeader(c.Append).SlotBytes)
	perBatcher := budget.Mul(int64(c.Append.Lists), budget.Add(budget.Mul(int64(c.Append.Batch), stride), 8))
	b = append(b, budget.Item{Component: "dta", Part: "append batches", Memory: budget.Mul(batchers, perBatcher),
		Note: fmt.Sprintf("%d batchers × %d lists × %d entries × %d B", batchers, c.Append.Lists, c.Append.Batch, stride)})
	if c.INT.EventList >= 0 {
		b = append(b, budget.Item{Component: "event bus", Part: "dta ring", Memory: event.RingBytes(eventRing),
			Note: fmt.Sprintf("%d events (the event list's consumer)", eventRing)})
	}
	return b
}

// dataLen recomputes a header's data length without the overflow of its own uint64
// products (validated factors, unvalidated product).
func dataLen(h Header) int64 {
	slots, stride := int64(min(h.Slots, 1<<62)), int64(h.SlotBytes)
	switch h.Primitive {
	case PrimPostcard:
		return budget.Add(budget.Mul(slots, stride), budget.Mul(int64(min(h.Capacity, 1<<62)), 8))
	case PrimAppend:
		return budget.Add(budget.Mul(slots, 64), budget.Mul(slots, int64(min(h.Capacity, 1<<62)), stride))
	}
	return budget.Mul(slots, stride)
}
