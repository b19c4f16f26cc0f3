// Package pcap owns intake's capture files: a reader for classic pcap and pcapng, a writer
// for classic pcap, and the walk from a captured frame down to its UDP payload.
//
// intake replays and decodes captures (the `decode` and `replay` verbs, golden files in
// testdata/) without libpcap or cgo, and on the hot path of a replay, so the Reader hands out
// one packet at a time from a buffer it reuses, and UDP walks headers in place: neither
// allocates per packet (docs/design.md, hot-path rules). Both treat their input as hostile, as
// every telemetry input is: a malformed file is an error naming the record or block and its
// file offset, never a panic, and a frame that does not hold a whole UDP datagram is simply
// not one.
//
// Formats: classic pcap (both byte orders, microsecond and nanosecond magic) and pcapng
// (section headers of both byte orders, interface description, enhanced, simple and
// obsolete packet blocks; other blocks are skipped by their length; several interfaces, each
// with its own link type and timestamp resolution).
package pcap

import (
	"errors"
	"fmt"
	"strconv"
)

// LinkType is a LINKTYPE_ value from the tcpdump.org registry: what a captured frame starts
// with.
type LinkType uint16

// The link types UDP understands. The Reader passes any other value through.
const (
	LinkNull      LinkType = 0   // BSD loopback: 4-byte host-order address family
	LinkEthernet  LinkType = 1   // Ethernet II, with 802.1Q/802.1ad tags
	LinkRaw       LinkType = 101 // raw IP, version from the first nibble
	LinkLoop      LinkType = 108 // OpenBSD loopback: 4-byte network-order address family
	LinkLinuxSLL  LinkType = 113 // Linux "cooked" capture v1 (16-byte header)
	LinkIPv4      LinkType = 228 // raw IPv4
	LinkIPv6      LinkType = 229 // raw IPv6
	LinkLinuxSLL2 LinkType = 276 // Linux "cooked" capture v2 (20-byte header)
)

var linkNames = map[LinkType]string{
	LinkNull: "null", LinkEthernet: "ethernet", LinkRaw: "raw", LinkLoop: "loop",
	LinkLinuxSLL: "linux-sll", LinkIPv4: "ipv4", LinkIPv6: "ipv6", LinkLinuxSLL2: "linux-sll2",
}

func (l LinkType) String() string {
	if n, ok := linkNames[l]; ok {
		return n
	}
	return "linktype-" + strconv.Itoa(int(l))
}

// MaxPacket is the largest captured length the Reader accepts for one packet. libpcap's own
// limit is 262144; the margin leaves room for odd tools while keeping a corrupt length from
// turning into a huge allocation.
const MaxPacket = 1 << 20

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("malformed capture")

// FormatError says what is wrong with a capture file and where. Truncated files also wrap
// io.ErrUnexpectedEOF.
type FormatError struct {
	Format string // "pcap" or "pcapng"
	Block  string // "file header", "record", "enhanced packet block", ...
	Offset int64  // file offset of the record or block
	Msg    string
	Err    error // the underlying read error, if any
}

func (e *FormatError) Error() string {
	s := fmt.Sprintf("%s: %s at offset %d: %s", e.Format, e.Block, e.Offset, e.Msg)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap lets errors.Is find ErrFormat and the underlying read error.
func (e *FormatError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrFormat, e.Err}
	}
	return []error{ErrFormat}
}
