package group

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/intake-int/intake/telemetry"
)

// A record of the raw topic is a frame: the reports of one partition that an inlet's worker
// decoded within a linger, each with its owner key, so that one Kafka record (one
// acknowledgement, one offset) carries many reports. A record per report would cost the
// inlet what a Kafka record costs the client, several times a report's decoding.
//
//	frame  = version (1 byte, frameVersion) · count (2 bytes, big endian) · entry{count}
//	entry  = key length (1 byte) · key · report length (2 bytes, big endian) · report (telemetry.Report's binary form)
//
// The key is the report's owner key (package partition: the one its partition was chosen
// by), for consumers that re-partition.
//
// Version 2 frames carry reports in their coded form (reportbin.go), which version 1
// readers would misread, hence the new version; version 3 frames carry them in the
// predicted form, which version 2 readers would refuse report by report. The entries are
// laid out as in version 1, and this intake reads all three.

// frameVersion is the first byte of the frames this intake writes; it reads frameVersion1
// and frameVersion2 too.
const (
	frameVersion  = 3
	frameVersion2 = 2
	frameVersion1 = 1
)

// Frame bounds: an inlet ends a frame at frameMaxReports reports or frameMaxBytes bytes.
const (
	frameMaxReports = 1024
	frameMaxBytes   = 64 << 10
	frameHeader     = 3 // the version and the count
)

// beginFrame starts a frame in b[:0], with room for its header.
func beginFrame(b []byte) []byte { return append(b[:0], make([]byte, frameHeader)...) }

// appendEntry appends a report and its key to a frame begun with beginFrame.
func appendEntry(b, key []byte, r *telemetry.Report) []byte {
	b = append(b, byte(len(key)))
	b = append(b, key...)
	at := len(b)
	b = appendReport(append(b, 0, 0), r) // a report's binary form is far below 64 KiB
	binary.BigEndian.PutUint16(b[at:], uint16(len(b)-at-2))
	return b
}

// endFrame writes the header of a frame of count reports.
func endFrame(b []byte, count int) {
	b[0] = frameVersion
	binary.BigEndian.PutUint16(b[1:], uint16(count))
}

// frameKnown reports whether b begins as a frame of a version this intake reads.
func frameKnown(b []byte) bool {
	return len(b) >= frameHeader && b[0] >= frameVersion1 && b[0] <= frameVersion
}

// frameCount returns the number of reports a frame says it holds (0 for a malformed one).
func frameCount(b []byte) int {
	if !frameKnown(b) {
		return 0
	}
	return int(binary.BigEndian.Uint16(b[1:]))
}

// errFrame is a frame that does not hold together.
var errFrame = errors.New("group: a raw record that is not a frame")

// eachEntry calls f with each entry of frame b: its key and its report's bytes. It stops at
// the first entry that does not hold together and returns why; f's error stops it too.
func eachEntry(b []byte, f func(key, report []byte) error) error {
	if !frameKnown(b) {
		return fmt.Errorf("%w: version %d, this intake reads %d to %d", errFrame, firstByte(b), frameVersion1, frameVersion)
	}
	count := frameCount(b)
	b = b[frameHeader:]
	for i := range count {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return fmt.Errorf("%w: entry %d of %d: truncated key", errFrame, i, count)
		}
		key := b[1 : 1+int(b[0])]
		b = b[1+int(b[0]):]
		if len(b) < 2 || int(binary.BigEndian.Uint16(b)) > len(b)-2 {
			return fmt.Errorf("%w: entry %d of %d: truncated report", errFrame, i, count)
		}
		n := int(binary.BigEndian.Uint16(b))
		if err := f(key, b[2:2+n]); err != nil {
			return err
		}
		b = b[2+n:]
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes after its %d entries", errFrame, len(b), count)
	}
	return nil
}
