// Package partition is the one hash that maps a key to the collector that owns it (DART §3,
// DTA §3: each key belongs to one collector, chosen by a hash that reporters and queries
// agree on), and the key each report is partitioned by. It is a leaf beside telemetry, so
// that the collector's cluster routing, the generator and the emulated fabric send and route
// by owner with one code and nothing else. docs/scale-out.md specifies the hash for switches
// and load balancers.
//
// The hash is CRC-32C (Castagnoli) of the key's bytes, and the owner is the member at index
// hash mod N in cluster.members. The keys:
//   - a flow (telemetry reports with a parsed inner 5-tuple, flow queries): IPv4 src(4)
//     dst(4) sport(2, big endian) dport(2) proto(1), 13 bytes; IPv6 src(16) dst(16) sport
//     dport proto, 37 bytes. This is DTA's 5-tuple key (dta.FlowKeyBytes), so a flow's DTA
//     postcards and its reports have one owner;
//   - a DTA Key-Write, Key-Increment or Postcarding report: its key bytes as sent;
//   - a DTA Append report: its list id, 4 bytes big endian;
//   - an INT-label export: the switch id of its first item (0 without items), 4 bytes big
//     endian;
//   - a telemetry report without a flow: the reporting node's id, 4 bytes big endian.
package partition

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/intake-int/intake/telemetry"
)

// MaxMembers bounds the members a key is partitioned among (cluster.members, the
// generator's and the fabric's --collectors).
const MaxMembers = 1024

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Hash is the partitioning hash of a key: CRC-32C (Castagnoli, the iSCSI polynomial, as
// switch ASICs and SSE4.2 compute it) of its bytes.
func Hash(key []byte) uint32 { return crc32.Checksum(key, castagnoli) }

// Owner is the index of the member among n that owns key: Hash(key) mod n.
func Owner(key []byte, n int) int {
	if n <= 1 {
		return 0
	}
	return int(Hash(key) % uint32(n))
}

// KeyBuf holds the bytes of any key the package builds (the longest: a DTA key).
type KeyBuf [telemetry.MaxDTAKey]byte

// FlowKey writes flow k's key into b: 13 bytes for IPv4, 37 for IPv6, DTA's 5-tuple key
// (telemetry.FlowKey.KeyBytes).
func FlowKey(b *KeyBuf, k *telemetry.FlowKey) []byte { return k.KeyBytes(b[:]) }

// IDKey writes a switch id or a DTA list id into b: 4 bytes, big endian.
func IDKey(b *KeyBuf, id uint32) []byte {
	binary.BigEndian.PutUint32(b[:], id)
	return b[:4]
}

// ReportKey writes the key r is partitioned by into b (see the package doc).
func ReportKey(b *KeyBuf, r *telemetry.Report) []byte {
	switch r.Format {
	case telemetry.FormatDTA:
		if r.DTA.Op == telemetry.DTAAppend {
			return IDKey(b, r.DTA.ListID)
		}
		return append(b[:0], r.DTA.KeyBytes()...)
	case telemetry.FormatLabel:
		return IDKey(b, labelSwitch(r))
	}
	if r.Has&telemetry.HasFlow != 0 {
		return FlowKey(b, &r.Flow)
	}
	return IDKey(b, r.NodeID)
}

// labelSwitch is the switch an INT-label export is partitioned by: the switch id of its
// first item on the wire (the newest), 0 for an export without items. The export names no
// exporting node on the wire, so that is the first switch id a load balancer can read.
func labelSwitch(r *telemetry.Report) uint32 {
	if r.NLabels == 0 {
		return 0
	}
	return uint32(r.Labels[0].SwitchID)
}

// ReportOwner is the index of the member among n that owns r.
func ReportOwner(r *telemetry.Report, n int) int {
	var b KeyBuf
	return Owner(ReportKey(&b, r), n)
}
