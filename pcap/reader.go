package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// Packet is one captured frame. Data aliases the Reader's buffer and is valid until the
// next call to Next.
type Packet struct {
	Data      []byte
	Time      time.Time // capture time, UTC (zero for pcapng simple packet blocks)
	Link      LinkType
	OrigLen   int   // length on the wire; more than len(Data) when the capture was truncated
	Interface int   // pcapng interface index (0 in classic pcap)
	Offset    int64 // file offset of the record or block
}

// Classic pcap magic numbers, as read in the file's own byte order.
const (
	magicMicro  = 0xa1b2c3d4
	magicNano   = 0xa1b23c4d
	blockSHB    = 0x0a0d0d0a
	byteOrderBE = 0x1a2b3c4d
	byteOrderLE = 0x4d3c2b1a // the byte-order magic read big-endian from a little-endian file
)

// pcapng block types.
const (
	blockIDB = 0x00000001
	blockOPB = 0x00000002 // obsolete packet block
	blockSPB = 0x00000003
	blockEPB = 0x00000006
)

// maxBlock bounds a pcapng block that the Reader parses (rather than skips): a packet of
// MaxPacket plus room for options.
const maxBlock = MaxPacket + 64<<10

type iface struct {
	link    LinkType
	snaplen uint32
	units   uint64 // timestamp units per second
	offset  int64  // if_tsoffset, seconds
}

// Reader reads packets from a classic pcap or pcapng file.
type Reader struct {
	br     *bufio.Reader
	off    int64 // file offset of the next unread byte
	ng     bool  // pcapng
	le     bool  // current section/file is little-endian
	nano   bool  // classic: nanosecond timestamps
	link   LinkType
	ifaces []iface
	hdr    [28]byte
	buf    []byte
}

// NewReader reads the file header of a classic pcap or pcapng file from r and returns a
// Reader positioned at the first packet.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{br: bufio.NewReaderSize(r, 64<<10)}
	if err := rd.read(rd.hdr[:4]); err != nil {
		return nil, &FormatError{Format: "pcap", Block: "file header", Msg: "no magic number", Err: eofUnexpected(err)}
	}
	be := binary.BigEndian.Uint32(rd.hdr[:4])
	le := binary.LittleEndian.Uint32(rd.hdr[:4])
	switch {
	case be == blockSHB:
		rd.ng = true
		if err := rd.readSHB(0); err != nil {
			return nil, err
		}
		return rd, nil
	case be == magicMicro || be == magicNano:
		rd.nano = be == magicNano
	case le == magicMicro || le == magicNano:
		rd.le, rd.nano = true, le == magicNano
	default:
		return nil, &FormatError{Format: "pcap", Block: "file header", Msg: fmt.Sprintf("magic 0x%08x is neither pcap nor pcapng", be)}
	}
	if err := rd.read(rd.hdr[4:24]); err != nil {
		return nil, &FormatError{Format: "pcap", Block: "file header", Msg: "truncated", Err: eofUnexpected(err)}
	}
	if major := rd.u16(rd.hdr[4:]); major != 2 {
		return nil, &FormatError{Format: "pcap", Block: "file header", Msg: fmt.Sprintf("version %d.%d, want 2.x", major, rd.u16(rd.hdr[6:]))}
	}
	// The upper bits of the link-type word may carry the FCS length; the link type proper
	// is the low 16 bits.
	rd.link = LinkType(rd.u32(rd.hdr[20:]) & 0xffff)
	return rd, nil
}

// LinkType returns the link type of a classic pcap file, or of the first interface of a
// pcapng section (0 when it has none yet).
func (rd *Reader) LinkType() LinkType {
	if rd.ng {
		if len(rd.ifaces) > 0 {
			return rd.ifaces[0].link
		}
		return 0
	}
	return rd.link
}

// Next returns the next packet, io.EOF after the last one, or a *FormatError. A file that
// ends inside a record or block is an error wrapping io.ErrUnexpectedEOF.
func (rd *Reader) Next() (Packet, error) {
	if rd.ng {
		return rd.nextNG()
	}
	start := rd.off
	if err := rd.read(rd.hdr[:16]); err != nil {
		if err == io.EOF {
			return Packet{}, io.EOF
		}
		return Packet{}, &FormatError{Format: "pcap", Block: "record header", Offset: start, Msg: "truncated", Err: eofUnexpected(err)}
	}
	sec, frac := rd.u32(rd.hdr[0:]), rd.u32(rd.hdr[4:])
	incl, orig := rd.u32(rd.hdr[8:]), rd.u32(rd.hdr[12:])
	if incl > MaxPacket {
		return Packet{}, &FormatError{Format: "pcap", Block: "record", Offset: start, Msg: fmt.Sprintf("captured length %d exceeds %d", incl, MaxPacket)}
	}
	ns := int64(frac)
	if !rd.nano {
		ns *= 1000
	}
	data := rd.grow(int(incl))
	if err := rd.read(data); err != nil {
		return Packet{}, &FormatError{Format: "pcap", Block: "record", Offset: start, Msg: fmt.Sprintf("truncated inside %d bytes of packet data", incl), Err: eofUnexpected(err)}
	}
	return Packet{Data: data, Time: time.Unix(int64(sec), ns).UTC(), Link: rd.link, OrigLen: int(orig), Offset: start}, nil
}

func (rd *Reader) nextNG() (Packet, error) {
	for {
		start := rd.off
		if err := rd.read(rd.hdr[:4]); err != nil {
			if err == io.EOF {
				return Packet{}, io.EOF
			}
			return Packet{}, rd.ngErr("block header", start, "truncated", eofUnexpected(err))
		}
		typ := rd.u32(rd.hdr[0:])
		if typ == blockSHB { // a new section, possibly of the other byte order
			if err := rd.readSHB(start); err != nil {
				return Packet{}, err
			}
			continue
		}
		if err := rd.read(rd.hdr[4:8]); err != nil {
			return Packet{}, rd.ngErr(blockName(typ), start, "truncated", eofUnexpected(err))
		}
		total := rd.u32(rd.hdr[4:])
		name := blockName(typ)
		if total < 12 || total%4 != 0 {
			return Packet{}, rd.ngErr(name, start, fmt.Sprintf("block total length %d is not a multiple of 4 of at least 12", total), nil)
		}
		bodyLen := int64(total) - 12
		switch typ {
		case blockIDB, blockEPB, blockSPB, blockOPB:
		default:
			// Unknown, name-resolution, statistics, ... blocks: skip by length.
			if n, err := rd.br.Discard(int(bodyLen)); err != nil {
				rd.off += int64(n)
				return Packet{}, rd.ngErr(name, start, fmt.Sprintf("truncated inside %d-byte block", total), eofUnexpected(err))
			}
			rd.off += bodyLen
			if err := rd.trailer(name, start, total); err != nil {
				return Packet{}, err
			}
			continue
		}
		if bodyLen > maxBlock {
			return Packet{}, rd.ngErr(name, start, fmt.Sprintf("block total length %d exceeds %d", total, maxBlock+12), nil)
		}
		body := rd.grow(int(bodyLen))
		if err := rd.read(body); err != nil {
			return Packet{}, rd.ngErr(name, start, fmt.Sprintf("truncated inside %d-byte block", total), eofUnexpected(err))
		}
		if err := rd.trailer(name, start, total); err != nil {
			return Packet{}, err
		}
		switch typ {
		case blockIDB:
			if err := rd.parseIDB(body, start); err != nil {
				return Packet{}, err
			}
			continue
		case blockEPB, blockOPB:
			return rd.parsePacket(typ, body, start)
		case blockSPB:
			return rd.parseSPB(body, start)
		}
	}
}

// readSHB reads a section header block whose type word has already been read at start.
func (rd *Reader) readSHB(start int64) error {
	const name = "section header block"
	if err := rd.read(rd.hdr[4:12]); err != nil {
		return rd.ngErr(name, start, "truncated", eofUnexpected(err))
	}
	switch binary.BigEndian.Uint32(rd.hdr[8:]) {
	case byteOrderBE:
		rd.le = false
	case byteOrderLE:
		rd.le = true
	default:
		return rd.ngErr(name, start, fmt.Sprintf("byte-order magic 0x%08x", binary.BigEndian.Uint32(rd.hdr[8:])), nil)
	}
	total := rd.u32(rd.hdr[4:])
	if total < 28 || total%4 != 0 || total-12 > maxBlock {
		return rd.ngErr(name, start, fmt.Sprintf("block total length %d", total), nil)
	}
	body := rd.grow(int(total) - 16) // after type, length and magic, before the trailer
	if err := rd.read(body); err != nil {
		return rd.ngErr(name, start, "truncated", eofUnexpected(err))
	}
	if err := rd.trailer(name, start, total); err != nil {
		return err
	}
	if major := rd.u16(body); major != 1 {
		return rd.ngErr(name, start, fmt.Sprintf("version %d.%d, want 1.x", major, rd.u16(body[2:])), nil)
	}
	rd.ifaces = rd.ifaces[:0] // interfaces are per section
	return nil
}

// trailer reads and checks the trailing copy of a block's total length.
func (rd *Reader) trailer(name string, start int64, total uint32) error {
	if err := rd.read(rd.hdr[24:28]); err != nil {
		return rd.ngErr(name, start, "truncated before the trailing block length", eofUnexpected(err))
	}
	if t := rd.u32(rd.hdr[24:]); t != total {
		return rd.ngErr(name, start, fmt.Sprintf("trailing block length %d differs from %d", t, total), nil)
	}
	return nil
}

func (rd *Reader) parseIDB(b []byte, start int64) error {
	const name = "interface description block"
	if len(b) < 8 {
		return rd.ngErr(name, start, "shorter than 8 bytes", nil)
	}
	ifc := iface{link: LinkType(rd.u16(b)), snaplen: rd.u32(b[4:]), units: 1e6}
	for opts := b[8:]; len(opts) >= 4; {
		code, n := rd.u16(opts), int(rd.u16(opts[2:]))
		if code == 0 { // opt_endofopt
			break
		}
		padded := (n + 3) &^ 3
		if 4+padded > len(opts) {
			return rd.ngErr(name, start, fmt.Sprintf("option %d length %d overruns the block", code, n), nil)
		}
		v := opts[4 : 4+n]
		switch code {
		case 9: // if_tsresol
			if n != 1 {
				return rd.ngErr(name, start, fmt.Sprintf("if_tsresol length %d", n), nil)
			}
			exp := v[0] & 0x7f
			if v[0]&0x80 != 0 {
				if exp > 63 {
					return rd.ngErr(name, start, fmt.Sprintf("if_tsresol 2^-%d", exp), nil)
				}
				ifc.units = 1 << exp
			} else {
				if exp > 19 {
					return rd.ngErr(name, start, fmt.Sprintf("if_tsresol 10^-%d", exp), nil)
				}
				ifc.units = 1
				for range exp {
					ifc.units *= 10
				}
			}
		case 14: // if_tsoffset
			if n != 8 {
				return rd.ngErr(name, start, fmt.Sprintf("if_tsoffset length %d", n), nil)
			}
			ifc.offset = int64(rd.u64(v))
		}
		opts = opts[4+padded:]
	}
	rd.ifaces = append(rd.ifaces, ifc)
	return nil
}

// parsePacket handles enhanced (EPB) and obsolete (OPB) packet blocks, which differ only in
// the width of the interface field.
func (rd *Reader) parsePacket(typ uint32, b []byte, start int64) (Packet, error) {
	name := blockName(typ)
	if len(b) < 20 {
		return Packet{}, rd.ngErr(name, start, "shorter than 20 bytes", nil)
	}
	var id int
	if typ == blockEPB {
		id = int(rd.u32(b))
	} else {
		id = int(rd.u16(b))
	}
	if id < 0 || id >= len(rd.ifaces) {
		return Packet{}, rd.ngErr(name, start, fmt.Sprintf("interface %d not described (section has %d)", id, len(rd.ifaces)), nil)
	}
	ifc := &rd.ifaces[id]
	ts := uint64(rd.u32(b[4:]))<<32 | uint64(rd.u32(b[8:]))
	capLen, orig := rd.u32(b[12:]), rd.u32(b[16:])
	if uint64(capLen) > uint64(len(b)-20) {
		return Packet{}, rd.ngErr(name, start, fmt.Sprintf("captured length %d overruns the block", capLen), nil)
	}
	return Packet{Data: b[20 : 20+capLen], Time: ifc.time(ts), Link: ifc.link, OrigLen: int(orig), Interface: id, Offset: start}, nil
}

func (rd *Reader) parseSPB(b []byte, start int64) (Packet, error) {
	const name = "simple packet block"
	if len(rd.ifaces) == 0 {
		return Packet{}, rd.ngErr(name, start, "no interface described in this section", nil)
	}
	if len(b) < 4 {
		return Packet{}, rd.ngErr(name, start, "shorter than 4 bytes", nil)
	}
	ifc := &rd.ifaces[0]
	orig := rd.u32(b)
	n := uint64(orig)
	if s := uint64(ifc.snaplen); s != 0 && s < n {
		n = s
	}
	if n > uint64(len(b)-4) {
		n = uint64(len(b) - 4)
	}
	return Packet{Data: b[4 : 4+n], Link: ifc.link, OrigLen: int(orig), Offset: start}, nil
}

// time converts a timestamp in the interface's units to UTC without allocating.
func (ifc *iface) time(ts uint64) time.Time {
	sec, rem := ts/ifc.units, ts%ifc.units
	hi, lo := bits.Mul64(rem, 1e9)
	ns, _ := bits.Div64(hi, lo, ifc.units) // hi < units because rem < units
	return time.Unix(int64(sec)+ifc.offset, int64(ns)).UTC()
}

func blockName(typ uint32) string {
	switch typ {
	case blockSHB:
		return "section header block"
	case blockIDB:
		return "interface description block"
	case blockEPB:
		return "enhanced packet block"
	case blockSPB:
		return "simple packet block"
	case blockOPB:
		return "packet block"
	}
	return fmt.Sprintf("block 0x%08x", typ)
}

func (rd *Reader) ngErr(block string, off int64, msg string, err error) error {
	return &FormatError{Format: "pcapng", Block: block, Offset: off, Msg: msg, Err: err}
}

// read fills b, keeping the file offset. It returns io.EOF only when nothing was read.
func (rd *Reader) read(b []byte) error {
	n, err := io.ReadFull(rd.br, b)
	rd.off += int64(n)
	return err
}

// grow returns the reusable buffer resized to n bytes.
func (rd *Reader) grow(n int) []byte {
	if cap(rd.buf) < n {
		rd.buf = make([]byte, n, max(n, 2*cap(rd.buf), 2048))
	}
	return rd.buf[:n]
}

// eofUnexpected turns a bare io.EOF in the middle of a structure into io.ErrUnexpectedEOF.
func eofUnexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (rd *Reader) u16(b []byte) uint16 {
	if rd.le {
		return binary.LittleEndian.Uint16(b)
	}
	return binary.BigEndian.Uint16(b)
}

func (rd *Reader) u32(b []byte) uint32 {
	if rd.le {
		return binary.LittleEndian.Uint32(b)
	}
	return binary.BigEndian.Uint32(b)
}

func (rd *Reader) u64(b []byte) uint64 {
	if rd.le {
		return binary.LittleEndian.Uint64(b)
	}
	return binary.BigEndian.Uint64(b)
}
