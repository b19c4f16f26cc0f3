package xdp

import "fmt"

// DTA is what the program needs to handle DTA reports itself (dta.kernel): the listener's
// wire widths (decoder.dta) and the geometry of the Key-Write, Key-Increment and Append
// stores, which must be the user-space stores' so that both write the same slots
// (docs/dta-layout.md). The program writes single Key-Write, Key-Increment and Append
// reports; everything else (batches, Postcarding, reports the translator would count as
// bad) goes to user space.
type DTA struct {
	HeaderLen, KeyLen, DataLen int
	Seed                       uint64
	KWSlots                    int // a power of two; 0: Key-Write reports go to user space
	KWMaxN, KWCheckBits        int
	KWValueBytes               int // at most 4: one 8-byte slot (the kernel writes a slot with one store)
	KISlots                    int // a power of two; 0: Key-Increment reports go to user space
	KIMaxN                     int
	// APLists and APEntries are the Append store's lists and entries per list (a power of
	// two, at least 2); entries are 4 bytes (append.value_bytes at most 4). 0 lists: Append
	// reports go to user space.
	APLists, APEntries int
}

// APBytes is the Append store's data: the lists' headers, then their rings.
func (d *DTA) APBytes() int { return d.APLists*64 + d.APLists*d.APEntries*4 }

// Check reports what the program cannot do with d.
func (d *DTA) Check() error {
	switch {
	case d.HeaderLen != 2 && d.HeaderLen != 3:
		return fmt.Errorf("header length %d: 2 or 3", d.HeaderLen)
	case d.KeyLen < 1 || d.KeyLen > 64:
		return fmt.Errorf("key length %d: 1-64", d.KeyLen)
	case d.DataLen < 1 || d.DataLen > 32:
		return fmt.Errorf("data length %d: 1-32", d.DataLen)
	case d.KWSlots > 0 && (d.KWValueBytes < 1 || d.KWValueBytes > 4):
		return fmt.Errorf("key-write value_bytes %d: the kernel writes slots of one word, value_bytes 1-4", d.KWValueBytes)
	case d.KWSlots&(d.KWSlots-1) != 0 || d.KISlots&(d.KISlots-1) != 0 || d.KWSlots > 1<<31 || d.KISlots > 1<<31:
		return fmt.Errorf("slots %d, %d: powers of two up to 2^31", d.KWSlots, d.KISlots)
	case d.APLists < 0 || d.APLists > 0 && (d.APEntries < 2 || d.APEntries&(d.APEntries-1) != 0 || d.APBytes() > 1<<34):
		return fmt.Errorf("append: %d lists of %d entries: entries a power of two, at least 2, and at most 16 GiB in all", d.APLists, d.APEntries)
	case d.KWMaxN > 255 || d.KIMaxN > 255 || d.KWCheckBits < 0 || d.KWCheckBits > 32:
		return fmt.Errorf("redundancy %d, %d or checksum bits %d out of range", d.KWMaxN, d.KIMaxN, d.KWCheckBits)
	}
	return nil
}
