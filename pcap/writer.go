package pcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// Resolution is the timestamp resolution of a classic pcap file.
type Resolution uint8

const (
	Microsecond Resolution = iota
	Nanosecond
)

// writerSnaplen is the snapshot length a Writer declares and truncates to.
const writerSnaplen = 262144

// Writer writes a classic pcap file (little-endian, as libpcap writes on the hosts intake
// runs on). It is for building captures — golden files, replays of generated traffic — so it
// favours a simple, deterministic output over speed.
type Writer struct {
	w    io.Writer
	nano bool
	hdr  [16]byte
}

// NewWriter writes the file header for packets of the given link type and resolution.
func NewWriter(w io.Writer, link LinkType, res Resolution) (*Writer, error) {
	var h [24]byte
	magic := uint32(magicMicro)
	if res == Nanosecond {
		magic = magicNano
	}
	binary.LittleEndian.PutUint32(h[0:], magic)
	binary.LittleEndian.PutUint16(h[4:], 2)
	binary.LittleEndian.PutUint16(h[6:], 4)
	binary.LittleEndian.PutUint32(h[16:], writerSnaplen)
	binary.LittleEndian.PutUint32(h[20:], uint32(link))
	if _, err := w.Write(h[:]); err != nil {
		return nil, err
	}
	return &Writer{w: w, nano: res == Nanosecond}, nil
}

// WritePacket writes one packet captured at t. Data longer than the snapshot length (256 KiB)
// is truncated, its original length kept. Times before 1970 or after 2106 do not fit the
// format and are an error.
func (w *Writer) WritePacket(t time.Time, data []byte) error {
	sec := t.Unix()
	if sec < 0 || sec > 1<<32-1 {
		return fmt.Errorf("pcap: time %v does not fit a pcap record", t)
	}
	frac := uint32(t.Nanosecond())
	if !w.nano {
		frac /= 1000
	}
	orig := len(data)
	if len(data) > writerSnaplen {
		data = data[:writerSnaplen]
	}
	binary.LittleEndian.PutUint32(w.hdr[0:], uint32(sec))
	binary.LittleEndian.PutUint32(w.hdr[4:], frac)
	binary.LittleEndian.PutUint32(w.hdr[8:], uint32(len(data)))
	binary.LittleEndian.PutUint32(w.hdr[12:], uint32(orig))
	if _, err := w.w.Write(w.hdr[:]); err != nil {
		return err
	}
	_, err := w.w.Write(data)
	return err
}
