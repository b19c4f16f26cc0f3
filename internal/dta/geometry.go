package dta

import (
	"fmt"
	"math/bits"
)

// A region's header is untrusted: a query process maps files that any process able to write
// the data directory may have written, and the collector reopens what it finds there. Before
// anything is mapped, every geometry field is checked against the bounds a configuration
// allows (Config.Validate: every store intake writes passes), and the data length against
// the one those fields give, computed without overflow; the data area's length is then
// checked against the file's (OpenRegion) and the mapping's (checkAs). Every offset a store
// computes from a key is masked or bounded by this geometry, so it stays inside the mapping.

// Geometry bounds, as Config.Validate's.
const (
	maxSlots      = 1 << 34 // Key-Write, Key-Increment: M
	maxChunks     = 1 << 32 // Postcarding: C
	maxValues     = 1 << 26 // Postcarding: the known-value table
	maxLists      = 1 << 17 // Append
	minEntries    = 64      // Append: entries per list
	maxEntries    = 1 << 30
	maxValueBytes = 32
	maxN          = 8
)

// pow2Upto reports whether n is a power of two no larger than max.
func pow2Upto(n, max uint64) bool { return n != 0 && n&(n-1) == 0 && n <= max }

// mulAdd returns a·b + c and whether it fits 64 bits.
func mulAdd(a, b, c uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	sum, carry := bits.Add64(lo, c, 0)
	return sum, hi == 0 && carry == 0
}

// geometryError names the first header field out of bounds.
func geometryError(field string, v uint64, allowed string) error {
	return fmt.Errorf("%s %d: allowed is %s", field, v, allowed)
}

// check validates h's geometry for its primitive and returns the first field out of bounds,
// or a data length that is not the one the geometry gives.
func (h *Header) check() error {
	var want uint64
	ok := true
	layoutHash := func() error {
		if h.Layout > LayoutCompat || h.Hash != h.Layout { // default ↔ HashIntake, compat ↔ CRC-32
			return fmt.Errorf("layout %d with hash %d: allowed are layout 0 with hash 0 and layout 1 with hash 1", h.Layout, h.Hash)
		}
		return nil
	}
	n := func() error {
		if h.MaxN < 1 || h.MaxN > maxN {
			return geometryError("redundancy", uint64(h.MaxN), "1 to 8")
		}
		return nil
	}
	switch h.Primitive {
	case PrimKeyWrite:
		if err := layoutHash(); err != nil {
			return err
		}
		switch {
		case !pow2Upto(h.Slots, maxSlots):
			return geometryError("slots", h.Slots, "a power of two up to 2^34")
		case h.ValueBytes < 1 || h.ValueBytes > maxValueBytes:
			return geometryError("value_bytes", uint64(h.ValueBytes), "1 to 32")
		case h.SlotBytes != (4+h.ValueBytes+7)&^7:
			return geometryError("slot_bytes", uint64(h.SlotBytes), fmt.Sprintf("%d (4 + value_bytes, rounded up to 8)", (4+h.ValueBytes+7)&^7))
		case h.CheckBits < 1 || h.CheckBits > 32:
			return geometryError("checksum_bits", uint64(h.CheckBits), "1 to 32")
		case h.Layout == LayoutCompat && (h.ValueBytes != 4 || h.CheckBits != 32):
			return fmt.Errorf("compat layout with value_bytes %d, checksum_bits %d: allowed are 4 and 32 (the prototype's slots)", h.ValueBytes, h.CheckBits)
		}
		if err := n(); err != nil {
			return err
		}
		want, ok = mulAdd(h.Slots, uint64(h.SlotBytes), 0)
	case PrimKeyIncrement:
		if err := layoutHash(); err != nil {
			return err
		}
		switch {
		case !pow2Upto(h.Slots, maxSlots):
			return geometryError("slots", h.Slots, "a power of two up to 2^34")
		case h.SlotBytes != 8 || h.ValueBytes != 8:
			return fmt.Errorf("slot_bytes %d, value_bytes %d: allowed are 8 and 8 (64-bit counters)", h.SlotBytes, h.ValueBytes)
		}
		if err := n(); err != nil {
			return err
		}
		want, ok = mulAdd(h.Slots, 8, 0)
	case PrimPostcard:
		switch {
		case h.Layout != LayoutDefault || h.Hash != HashIntake:
			return fmt.Errorf("layout %d with hash %d: allowed is layout 0 with hash 0", h.Layout, h.Hash)
		case !pow2Upto(h.Slots, maxChunks):
			return geometryError("chunks", h.Slots, "a power of two up to 2^32")
		case h.Hops < 1 || h.Hops > MaxHops:
			return geometryError("hops", uint64(h.Hops), "1 to 16")
		case h.SlotBytes != (4*h.Hops+7)&^7:
			return geometryError("slot_bytes", uint64(h.SlotBytes), fmt.Sprintf("%d (4 × hops, rounded up to 8)", (4*h.Hops+7)&^7))
		case h.CheckBits < 1 || h.CheckBits > 32:
			return geometryError("slot_bits", uint64(h.CheckBits), "1 to 32")
		case h.ValueBytes != 4:
			return geometryError("value_bytes", uint64(h.ValueBytes), "4")
		case !pow2Upto(h.Capacity, maxValues):
			return geometryError("values", h.Capacity, "a power of two up to 2^26")
		}
		if err := n(); err != nil {
			return err
		}
		var chunks uint64
		chunks, ok = mulAdd(h.Slots, uint64(h.SlotBytes), 0)
		if ok {
			want, ok = mulAdd(h.Capacity, 8, chunks)
		}
	case PrimAppend:
		switch {
		case h.Layout != LayoutDefault || h.Hash != HashIntake:
			return fmt.Errorf("layout %d with hash %d: allowed is layout 0 with hash 0", h.Layout, h.Hash)
		case h.Slots < 1 || h.Slots > maxLists:
			return geometryError("lists", h.Slots, "1 to 131072")
		case !pow2Upto(h.Capacity, maxEntries) || h.Capacity < minEntries:
			return geometryError("entries", h.Capacity, "a power of two from 64 to 2^30")
		case h.ValueBytes < 1 || h.ValueBytes > maxValueBytes:
			return geometryError("value_bytes", uint64(h.ValueBytes), "1 to 32")
		case h.SlotBytes != (h.ValueBytes+3)&^3:
			return geometryError("slot_bytes", uint64(h.SlotBytes), fmt.Sprintf("%d (value_bytes rounded up to 4)", (h.ValueBytes+3)&^3))
		}
		var ring uint64
		ring, ok = mulAdd(h.Capacity, uint64(h.SlotBytes), listHdrBytes)
		if ok {
			want, ok = mulAdd(h.Slots, ring, 0)
		}
	default:
		return fmt.Errorf("primitive %d: allowed are 1 (key-write), 2 (append), 3 (key-increment) and 4 (postcard)", h.Primitive)
	}
	if !ok {
		return fmt.Errorf("the geometry (%s) is larger than 2^64 bytes", h)
	}
	if want != h.DataLen {
		return fmt.Errorf("data length %d: the geometry (%s) gives %d", h.DataLen, h, want)
	}
	return nil
}

// checkAs checks that r holds a valid region of primitive prim whose data area is the
// mapping's: what every store's constructor requires before it computes an offset.
func (r *Region) checkAs(prim uint32) error {
	h := &r.Hdr
	if h.Primitive != prim {
		return fmt.Errorf("%s: primitive %d is not %s", r.Path, h.Primitive, primNames[prim])
	}
	if err := h.check(); err != nil {
		return fmt.Errorf("%s: %s region: %w", r.Path, primNames[prim], err)
	}
	if uint64(len(r.Data)) != h.DataLen {
		return fmt.Errorf("%s: %d data bytes mapped, the header says %d", r.Path, len(r.Data), h.DataLen)
	}
	return nil
}
