package ingest

import (
	"encoding/binary"
	"fmt"

	"github.com/intake-int/intake/internal/cbpf"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Spreading one exporter over the workers (docs/ingest.md, "Spreading one exporter").
//
// SO_REUSEPORT picks a listener's socket by a hash of the datagram's addresses and ports:
// one switch sends from one address and port, so all of it lands on one socket and one
// worker, however many the listener has. With spread: flow, a classic BPF program attached
// to the listener's sockets (SO_ATTACH_REUSEPORT_CBPF) picks the socket instead: the one of
// the datagram's owner key (a report's flow, a DTA key or list, an INT-label switch, a
// report's node when it carries no flow: the keys of package partition), so that one
// exporter's datagrams use every worker and the reports of one flow stay on one worker, in
// order. Where the program cannot tell one report's key (several reports in one datagram,
// an inner packet it does not walk, a datagram that is no report), it returns no socket and
// the kernel falls back to its hash of the source: such datagrams keep their exporter's
// order on one worker. The program reads the packet only; it needs no privilege.

// Spread modes of a socket listener.
const (
	SpreadFlow   = "flow"   // by owner key, through the reuseport program (the default)
	SpreadSource = "source" // by the kernel's hash of the source address and port
)

// spreadNone is what the program returns for a datagram it does not place: an index beyond
// the sockets, which makes the kernel fall back to its hash.
const spreadNone = 0xffffffff

// spreadSeed and the multipliers define SpreadHash; the program computes the same.
const (
	spreadSeed  = 0x811c9dc5
	spreadPrime = 0x01000193
	fmixK1      = 0x85ebca6b
	fmixK2      = 0xc2b2ae35
)

// SpreadHash is the hash the reuseport program places a datagram by: FNV-1a over the key's
// big-endian 32-bit words (the last zero-padded), then Murmur3's 32-bit finalizer. The
// socket is SpreadHash(key) mod sockets. It is not partition.Hash (CRC-32C), so that a
// member's keys, all one residue of CRC-32C mod members, still spread over its sockets.
func SpreadHash(key []byte) uint32 {
	h := uint32(spreadSeed)
	for len(key) > 0 {
		var w [4]byte
		n := copy(w[:], key)
		key = key[n:]
		h = (h ^ binary.BigEndian.Uint32(w[:])) * spreadPrime
	}
	h ^= h >> 16
	h *= fmixK1
	h ^= h >> 13
	h *= fmixK2
	h ^= h >> 16
	return h
}

// Scratch words of the program.
const (
	mNode  = 0 // the report's node id: its key when it carries no flow
	mKey   = 1 // mKey..mKey+9: the flow key's words (IPv6: 10)
	mOff   = 11
	mL4    = 12
	mProto = 13
	mHash  = 14
	mTmp   = 15
)

// spreadProgram returns the reuseport program of a listener of input in that reads with
// decoder configuration dc and has n sockets.
func spreadProgram(in wire.Input, dc wire.Config, n int) ([]cbpf.Raw, error) {
	g := &spreadGen{n: uint32(n)}
	switch in {
	case wire.InputReport:
		g.report(dc.Quirks)
	case wire.InputINTMD:
		// A data packet as a sink sees it: an Ethernet frame, no node.
		g.p.LdImm(0)
		g.p.St(mNode)
		g.p.St(mOff)
		g.inner()
	case wire.InputDTA:
		g.dta(dc.DTA)
	case wire.InputLabel:
		g.label()
	default:
		return nil, fmt.Errorf("no spread program for input %v", in)
	}
	return g.p.Assemble()
}

type spreadGen struct {
	p cbpf.Prog
	n uint32
}

// need jumps to fail unless the datagram holds at least k bytes.
func (g *spreadGen) need(k uint32, fail string) {
	g.p.LdLen()
	g.p.Jge(k, "", fail)
}

// needAt jumps to fail unless the datagram holds at least M[m]+k bytes. It leaves X = M[m].
func (g *spreadGen) needAt(m int, k uint32, fail string) {
	g.p.LdLen()
	g.p.St(mTmp)
	g.p.LdMem(m)
	g.p.ALU(cbpf.Add, k)
	g.p.LdxMem(mTmp)
	g.p.JgtX(fail, "")
	g.p.LdxMem(m)
}

// hashMem hashes the words M[from..from+count-1] and returns the socket.
func (g *spreadGen) hashMem(from, count int) {
	p := &g.p
	p.LdImm(spreadSeed)
	for i := 0; i < count; i++ {
		p.LdxMem(from + i)
		p.ALUX(cbpf.Xor)
		p.ALU(cbpf.Mul, spreadPrime)
	}
	g.finish()
}

// finish applies the finalizer to the hash in A and returns A mod n.
func (g *spreadGen) finish() {
	p := &g.p
	for _, step := range []struct{ shift, mul uint32 }{{16, fmixK1}, {13, fmixK2}, {16, 0}} {
		p.St(mHash)
		p.ALU(cbpf.Rsh, step.shift)
		p.LdxMem(mHash)
		p.ALUX(cbpf.Xor)
		if step.mul != 0 {
			p.ALU(cbpf.Mul, step.mul)
		}
	}
	p.ALU(cbpf.Mod, g.n)
	p.RetA()
}

// report writes the program of a report listener: the inner packet of one TR v0.5, v1.0
// or v2.0 report, walked as package wire walks it up to the first L4 header.
func (g *spreadGen) report(q wire.Quirks) {
	p := &g.p
	g.need(1, "none.ret")
	p.LdAbs(1, 0)
	p.ALU(cbpf.Rsh, 4)
	p.Jeq(2, "tr20", "")
	p.Jeq(0, "tr05", "")
	p.Jeq(1, "", "none.ret")
	if q.TR05Ver1 || q.INTCollectorGen {
		// The v0.5 layout sent with Ver 1 (wire's tr05Layout): a second nibble of at most 2,
		// and the v0.5 reserved bits zero.
		g.need(4, "tr10")
		p.LdAbs(1, 0)
		p.ALU(cbpf.And, 0x0f)
		p.Jgt(2, "tr10", "")
		p.LdAbs(1, 1)
		p.Jset(0x1f, "tr10", "")
		p.LdAbs(1, 2)
		p.Jeq(0, "", "tr10")
		p.LdAbs(1, 3)
		p.Jset(0xc0, "tr10", "tr05")
	}

	// TR v1.0: a 4*Length byte header, then the packet NProt names.
	p.Label("tr10")
	g.need(16, "none.ret")
	p.LdAbs(4, 4)
	p.St(mNode)
	p.LdAbs(1, 0)
	p.ALU(cbpf.And, 0x0f)
	p.Jge(4, "tr10.len", "")
	if !q.INTCollectorGen {
		p.Ja("none.ret")
	} else {
		// Length below 4: 4 + popcount(RepMdBits), the 6 bits b[1]&0x1f, b[2]>>7.
		p.LdAbs(1, 1)
		p.ALU(cbpf.And, 0x1f)
		p.ALU(cbpf.Lsh, 1)
		p.St(mTmp)
		p.LdAbs(1, 2)
		p.ALU(cbpf.Rsh, 7)
		p.LdxMem(mTmp)
		p.ALUX(cbpf.Or)
		p.St(mTmp)
		p.LdImm(4)
		p.St(mOff)
		for bit := uint32(0); bit < 6; bit++ {
			p.LdMem(mTmp)
			p.ALU(cbpf.Rsh, bit)
			p.ALU(cbpf.And, 1)
			p.LdxMem(mOff)
			p.ALUX(cbpf.Add)
			p.St(mOff)
		}
		p.LdMem(mOff)
	}
	p.Label("tr10.len")
	p.ALU(cbpf.Lsh, 2)
	p.St(mOff)
	p.LdAbs(1, 1)
	p.ALU(cbpf.Rsh, 5)
	p.Jeq(0, "eth", "")
	p.Jeq(1, "ipv4", "")
	p.Jeq(2, "ipv6", "none.ret")

	// TR v0.5: the 12-byte header, a drop or switch-local header by NProto, then Ethernet;
	// NProto 4 (host-int) a sink node id, then IPv4. Only the drop and local headers name
	// the node.
	p.Label("tr05")
	g.need(12, "none.ret")
	p.LdImm(0)
	p.St(mNode)
	p.LdAbs(1, 0)
	p.ALU(cbpf.And, 0x0f)
	p.Jeq(0, "tr05.0", "")
	p.Jeq(1, "tr05.1", "")
	p.Jeq(2, "tr05.2", "")
	p.Jeq(4, "tr05.4", "none.ret")
	for _, c := range []struct {
		label    string
		off      uint32
		node     bool
		nextLink string
	}{{"tr05.0", 12, false, "eth"}, {"tr05.1", 24, true, "eth"}, {"tr05.2", 28, true, "eth"}, {"tr05.4", 16, false, "ipv4"}} {
		p.Label(c.label)
		if c.off > 12 {
			g.need(c.off, "none.ret")
		}
		if c.node {
			p.LdAbs(4, 12)
			p.St(mNode)
		}
		p.LdImm(c.off)
		p.St(mOff)
		p.Ja(c.nextLink)
	}

	// TR v2.0: the 8-byte group header, one individual report filling the datagram (several
	// have several keys: the source's hash keeps their order), its metadata, then the inner
	// packet by InType.
	p.Label("tr20")
	g.need(12, "none.ret")
	p.LdAbs(4, 4)
	p.St(mNode)
	p.LdAbs(1, 9) // Report Length, in words
	p.Jeq(0xff, "tr20.one", "")
	p.ALU(cbpf.Lsh, 2)
	p.ALU(cbpf.Add, 12)
	p.St(mTmp)
	p.LdLen()
	p.LdxMem(mTmp)
	p.ALUX(cbpf.Sub) // len - end: 0 when one report fills the datagram
	p.Jeq(0, "tr20.one", "none.ret")
	p.Label("tr20.one")
	p.LdImm(12)
	p.St(mOff)
	p.LdAbs(1, 8)
	p.ALU(cbpf.Rsh, 4) // RepType
	p.Jeq(0, "tr20.in", "")
	p.Jeq(1, "", "none.ret")
	p.LdAbs(1, 10) // MD Length, in words
	p.ALU(cbpf.Lsh, 2)
	p.ALU(cbpf.Add, 12+8)
	p.St(mOff)
	g.needAt(mOff, 0, "none.ret")
	p.Label("tr20.in")
	p.LdAbs(1, 8)
	p.ALU(cbpf.And, 0x0f) // InType
	p.Jeq(3, "eth", "")
	p.Jeq(4, "ipv4", "")
	p.Jeq(5, "ipv6", "")
	p.Jeq(0, "node", "")
	p.Jeq(2, "node", "none.ret") // no packet: the node's key; TLV lists and the rest: none

	g.inner()
}

// inner writes the walk of the inner packet at M[mOff]: Ethernet (up to two VLAN tags),
// IPv4 or IPv6 (without extension headers), the TCP or UDP ports. Where package wire
// finds no flow (a cut or broken header, no IP), the report's key is its node's.
func (g *spreadGen) inner() {
	p := &g.p
	p.Label("eth")
	g.needAt(mOff, 14, "node")
	p.LdInd(2, 12)
	p.St(mProto) // the EtherType, for now
	p.Txa()
	p.ALU(cbpf.Add, 14)
	p.St(mOff)
	for i := 0; i < 3; i++ {
		done := p.Fresh("et")
		p.LdMem(mProto)
		vlan := p.Fresh("vlan")
		p.Jeq(0x8100, vlan, "")
		p.Jeq(0x88a8, vlan, "")
		p.Jeq(0x9100, vlan, done)
		p.Label(vlan)
		if i == 2 {
			p.Ja("node") // a third tag: wire's TooMany
			p.Label(done)
			break
		}
		g.needAt(mOff, 4, "node")
		p.LdInd(2, 2)
		p.St(mProto)
		p.Txa()
		p.ALU(cbpf.Add, 4)
		p.St(mOff)
		p.Label(done)
	}
	p.LdMem(mProto)
	p.Jeq(0x0800, "ipv4", "")
	p.Jeq(0x86dd, "ipv6", "node")

	p.Label("ipv4")
	g.needAt(mOff, 20, "node")
	p.LdInd(1, 0)
	p.ALU(cbpf.Rsh, 4)
	p.Jeq(4, "", "node")
	p.LdInd(1, 0)
	p.ALU(cbpf.And, 0x0f)
	p.ALU(cbpf.Lsh, 2)
	p.Jge(20, "", "node")
	p.ALUX(cbpf.Add)
	p.St(mL4)
	g.needAt(mL4, 0, "node") // the options are there
	p.LdxMem(mOff)
	p.LdInd(4, 12)
	p.St(mKey)
	p.LdInd(4, 16)
	p.St(mKey + 1)
	p.LdInd(1, 9)
	p.St(mProto)
	p.LdImm(0)
	p.St(mKey + 2)
	p.LdInd(2, 6)
	p.Jset(0x1fff, "v4.hash", "") // not the first fragment: no ports
	g.flowHash(2, "v4.hash")

	p.Label("ipv6")
	g.needAt(mOff, 40, "node")
	p.LdInd(1, 0)
	p.ALU(cbpf.Rsh, 4)
	p.Jeq(6, "", "node")
	for i := uint32(0); i < 8; i++ {
		p.LdInd(4, 8+4*i)
		p.St(mKey + int(i))
	}
	p.LdInd(1, 6)
	p.St(mProto)
	// Extension headers: wire walks them; the program leaves such a datagram to the source's
	// hash (consistent for a flow whose packets all carry them).
	for _, ext := range []uint32{0, 43, 44, 51, 60, 135, 139, 140} {
		p.Jeq(ext, "none.ret", "")
	}
	p.Txa()
	p.ALU(cbpf.Add, 40)
	p.St(mL4)
	p.LdImm(0)
	p.St(mKey + 8)
	g.flowHash(8, "v6.hash")

	p.Label("node")
	p.LdMem(mNode)
	p.St(mKey)
	g.hashMem(mKey, 1)
	p.Label("none.ret")
	p.Ret(spreadNone)
}

// flowHash ends a flow's key: its ports as word n (M[mKey+n] holds 0 for none), labelled
// hash for a walk that has no ports to read, the protocol as word n+1; then it hashes the
// key's n+2 words.
func (g *spreadGen) flowHash(n int, hash string) {
	p := &g.p
	g.ports(mKey+n, hash)
	p.Label(hash)
	p.LdMem(mProto)
	p.ALU(cbpf.Lsh, 24)
	p.St(mKey + n + 1)
	g.hashMem(mKey, n+2)
}

// ports stores the source and destination ports at M[mL4] into M[m] as one word, where
// wire keeps them: UDP with its 8-byte header; TCP cut short of its 20-byte header but with
// the 4 port bytes, or whole with a data offset of at least 20 bytes that the datagram
// holds. It jumps to done; M[m] stays 0 otherwise.
func (g *spreadGen) ports(m int, done string) {
	p := &g.p
	load, udp := p.Fresh("ports"), p.Fresh("udp")
	p.LdMem(mProto)
	p.Jeq(6, "", udp)
	g.needAt(mL4, 4, done)
	g.needAt(mL4, 20, load)
	p.LdInd(1, 12)
	p.ALU(cbpf.Rsh, 4)
	p.ALU(cbpf.Lsh, 2) // the data offset
	p.Jge(20, "", done)
	p.ALUX(cbpf.Add)
	p.St(mTmp)
	p.LdLen()
	p.LdxMem(mTmp)
	p.JgeX(load, done)
	p.Label(udp)
	p.LdMem(mProto)
	p.Jeq(17, "", done)
	g.needAt(mL4, 8, done)
	p.Label(load)
	p.LdxMem(mL4)
	p.LdInd(4, 0)
	p.St(m)
	p.Ja(done)
}

// dta writes the program of a DTA listener: the key of one primitive (a batch of one
// counts), or an Append's list id, at the offsets the configured widths give.
func (g *spreadGen) dta(c wire.DTAConfig) {
	p := &g.p
	hl, kl, dl := uint32(c.HeaderLen), uint32(c.KeyLen), uint32(c.DataLen)
	g.need(hl, "none.ret")
	p.LdAbs(1, hl-1)
	p.Jset(0x01, "batch", "")
	g.dtaOps(hl, kl, dl, "one")
	p.Label("batch")
	g.need(hl+1, "none.ret")
	p.LdAbs(1, hl)
	p.Jeq(1, "", "none.ret") // several primitives: the source's hash keeps their order
	g.dtaOps(hl+1, kl, dl, "batch1")
	p.Label("none.ret")
	p.Ret(spreadNone)
}

// dtaOps writes the dispatch on the opcode for sub-headers at base.
func (g *spreadGen) dtaOps(base, kl, dl uint32, prefix string) {
	p := &g.p
	p.LdAbs(1, 0)
	p.Jeq(uint32(telemetry.DTAKeyWrite), prefix+".kw", "")
	p.Jeq(uint32(telemetry.DTAKeyIncrement), prefix+".ki", "")
	p.Jeq(uint32(telemetry.DTAPostcard), prefix+".pc", "")
	p.Jeq(uint32(telemetry.DTAAppend), prefix+".ap", "none.ret")
	for _, c := range []struct {
		label    string
		key, end uint32
	}{
		{prefix + ".kw", base + 1, base + 1 + kl + dl},
		{prefix + ".ki", base + 1, base + 1 + kl + 8},
		{prefix + ".pc", base, base + kl + 1 + dl},
	} {
		p.Label(c.label)
		g.need(c.end, "none.ret")
		g.hashBytes(c.key, kl)
	}
	p.Label(prefix + ".ap")
	g.need(base+4+dl, "none.ret")
	g.hashBytes(base, 4)
}

// hashBytes hashes the n bytes at off as SpreadHash does and returns the socket.
func (g *spreadGen) hashBytes(off, n uint32) {
	p := &g.p
	p.LdImm(spreadSeed)
	p.St(mHash)
	for i := uint32(0); i < n; i += 4 {
		switch n - i {
		case 1:
			p.LdAbs(1, off+i)
			p.ALU(cbpf.Lsh, 24)
		case 2:
			p.LdAbs(2, off+i)
			p.ALU(cbpf.Lsh, 16)
		case 3:
			p.LdAbs(1, off+i+2)
			p.ALU(cbpf.Lsh, 8)
			p.St(mTmp)
			p.LdAbs(2, off+i)
			p.ALU(cbpf.Lsh, 16)
			p.LdxMem(mTmp)
			p.ALUX(cbpf.Or)
		default:
			p.LdAbs(4, off+i)
		}
		p.LdxMem(mHash)
		p.ALUX(cbpf.Xor)
		p.ALU(cbpf.Mul, spreadPrime)
		p.St(mHash)
	}
	p.LdMem(mHash)
	g.finish()
}

// label writes the program of an INT-label listener: the switch of the export's first item
// (cluster's key for an export), 0 for an export without items.
func (g *spreadGen) label() {
	p := &g.p
	g.need(2, "none.ret")
	p.LdAbs(1, 1)
	p.Jeq(0, "", "items")
	p.LdImm(0)
	p.St(mKey)
	g.hashMem(mKey, 1)
	p.Label("items")
	g.need(3, "none.ret")
	p.LdAbs(1, 2)
	p.St(mKey)
	g.hashMem(mKey, 1)
	p.Label("none.ret")
	p.Ret(spreadNone)
}
