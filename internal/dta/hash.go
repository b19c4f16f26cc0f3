package dta

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// The hash functions are fixed and documented (docs/dta-layout.md), not per-process random:
// a query process and a reporter must compute the same slot addresses as the translator.
//
// Default layouts: Hash64(seed, key) hashes the key once; copy n lives at
// slot = fmix64(h + (n+1)·φ) mod M, φ = 0x9E3779B97F4A7C15, and the key checksum is the top
// 32 bits of fmix64(h ^ 0xC2B2AE3D27D4EB4F), cut to b bits. Deriving all N addresses from
// one key hash costs one pass over the key, so N only adds a multiply-xorshift per copy.
//
// Compat layout (the public prototype jonlanglet/DTA; docs/dta-layout.md): checksum = CRC-32
// IEEE of the key's 4 bytes little-endian; copy n at CRC-32 IEEE(key LE ‖ byte n) mod M.

const (
	phi     = 0x9E3779B97F4A7C15
	mulK    = 0xBF58476D1CE4E5B9
	mulK2   = 0x94D049BB133111EB
	csumXor = 0xC2B2AE3D27D4EB4F
)

// fmix64 is the splitmix64 finalizer: a bijection with full avalanche.
func fmix64(x uint64) uint64 {
	x ^= x >> 30
	x *= mulK
	x ^= x >> 27
	x *= mulK2
	x ^= x >> 31
	return x
}

// Hash64 is intake's seeded key hash: 8-byte little-endian words folded by multiply and
// rotate, the tail zero-padded, the length mixed in, then fmix64.
func Hash64(seed uint64, key []byte) uint64 {
	h := seed ^ uint64(len(key))*phi
	for len(key) >= 8 {
		h = bits.RotateLeft64(h^binary.LittleEndian.Uint64(key)*mulK, 31) * mulK2
		key = key[8:]
	}
	if len(key) > 0 {
		h = bits.RotateLeft64(h^loadTail(key)*mulK, 31) * mulK2
	}
	return fmix64(h)
}

// hashTail is Hash64 of a key of n bytes (1 to 8) whose little-endian word is w: the hot
// paths hash 4-byte keys and values this way without a loop or a copy.
func hashTail(seed, w uint64, n int) uint64 {
	return fmix64(bits.RotateLeft64((seed^uint64(n)*phi)^w*mulK, 31) * mulK2)
}

// loadTail reads 1 to 7 bytes as a little-endian word, zero-padded, with at most three loads
// instead of a loop over the bytes (the loads overlap; overlapping bytes are equal).
func loadTail(b []byte) uint64 {
	n := len(b)
	if n >= 4 {
		return uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4))
	}
	return uint64(b[0]) | uint64(b[n/2])<<(8*(n/2)) | uint64(b[n-1])<<(8*(n-1))
}

// hashU64 is Hash64 of an 8-byte little-endian word (sim and postcard values).
func hashU64(seed, w uint64) uint64 { return hashTail(seed, w, 8) }

// slotOf is copy n's slot for key hash h in a table of mask+1 slots.
func slotOf(h uint64, n int, mask uint64) uint64 { return fmix64(h+uint64(n+1)*phi) & mask }

// checkOf is the 32-bit key checksum for key hash h.
func checkOf(h uint64) uint32 { return uint32(fmix64(h^csumXor) >> 32) }

// CompatChecksum is the prototype's Key-Write checksum of a 32-bit key.
func CompatChecksum(key uint32) uint32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], key)
	return crc32.ChecksumIEEE(b[:])
}

// CompatSlotHash is the prototype's slot hash of copy n of a 32-bit key (before masking).
func CompatSlotHash(key uint32, n int) uint32 { return compatSlot(CompatChecksum(key), n) }

// compatKey is CompatChecksum of a key given as 4 big-endian bytes (as on the DTA wire): CRC-32
// IEEE over the bytes in little-endian order, reversed here, four table steps without a copy
// (crc32.ChecksumIEEE would make the bytes escape to the heap).
func compatKey(key []byte) uint32 {
	_ = key[3]
	c := ^uint32(0)
	for i := 3; i >= 0; i-- {
		c = crc32.IEEETable[byte(c)^key[i]] ^ c>>8
	}
	return ^c
}

// compatSlot is CompatSlotHash from the key's checksum: CRC-32 of (key ‖ n) continues the
// CRC of the key by one byte, one table step instead of a CRC over five bytes per copy.
func compatSlot(csum uint32, n int) uint32 {
	c := ^csum
	return ^(crc32.IEEETable[byte(c)^byte(n)] ^ c>>8)
}
