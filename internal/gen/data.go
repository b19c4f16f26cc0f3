package gen

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// Data mode (intake gen --data): instead of reports, the generator's INT-MD stacks travel
// inside real UDP data packets, inserted as an INT source and its transit switches would
// (wire.Encoder.InsertINT), so that an INT sink (intake's sinks[], docs/sink.md) has
// something to strip. The frames go out of an interface through an AF_PACKET socket
// (data_linux.go).

// DataConfig says what data packets gen builds and where they go.
type DataConfig struct {
	// Iface is the interface the frames leave by.
	Iface string
	// To is the data packets' destination; From their source (invalid: Iface's first
	// address of To's family). Each generator flow sends from its own source port.
	To   netip.AddrPort
	From netip.Addr
	// SrcMAC is the frames' source (nil: Iface's); DstMAC the next hop's (nil: To's entry in
	// the IPv4 neighbour table, /proc/net/arp).
	SrcMAC, DstMAC net.HardwareAddr
	// Marking is the DSCP or UDP port that marks INT (wire.Marking); NPT is the v2.x shim's
	// NPT with port marking (1 or 2).
	Marking wire.Marking
	NPT     uint8
	// HostINT inserts Intel host-int's shim Type 3 (INT v0.5 only).
	HostINT bool
}

// Validate checks dc against the stream's configuration and fills in what it can find out
// about Iface: From, SrcMAC and DstMAC.
func (dc *DataConfig) Validate(c Config) error {
	v := c.intVersion()
	switch {
	case dc.Iface == "":
		return fmt.Errorf("data: no interface")
	case !dc.To.IsValid() || dc.To.Port() == 0:
		return fmt.Errorf("data-to: want IP:PORT, the data packets' destination")
	case !c.isReport() || c.Mode != "md" || c.Batch != 1:
		return fmt.Errorf("data: data packets carry INT-MD stacks: --format tr0.5, tr1.0 or tr2.0 (its INT version, or --int-version), --mode md and --batch 1")
	case dc.HostINT && v != telemetry.INT05:
		return fmt.Errorf("host-int: Intel host-int's shim carries INT v0.5, not %s (--int-version 0.5)", v)
	case dc.Marking.Port != 0 && v == telemetry.INT10:
		return fmt.Errorf("int-port: INT v1.0 is marked by DSCP only")
	case dc.Marking.Port != 0 && dc.HostINT:
		return fmt.Errorf("int-port: host-int is marked by DSCP only")
	case dc.Marking.Port != 0 && v == telemetry.INT2x && dc.NPT != 1 && dc.NPT != 2:
		return fmt.Errorf("npt: %d: port marking of INT v2.x is NPT 1 (the shim keeps the port) or 2 (a UDP header is inserted)", dc.NPT)
	case dc.Marking.Port == 0 && dc.NPT != 0:
		return fmt.Errorf("npt: %d: NPT 1 and 2 mark by port: give --int-port", dc.NPT)
	case dc.Marking.DSCP > 0x3f:
		return fmt.Errorf("dscp: 0x%x: a DSCP has 6 bits", dc.Marking.DSCP)
	}
	ifi, err := net.InterfaceByName(dc.Iface)
	if err != nil {
		return fmt.Errorf("data: interface %q: %v", dc.Iface, err)
	}
	if dc.SrcMAC == nil {
		dc.SrcMAC = ifi.HardwareAddr
	}
	if len(dc.SrcMAC) != 6 {
		return fmt.Errorf("data: interface %s has no Ethernet address", dc.Iface)
	}
	to := dc.To.Addr().Unmap()
	if !dc.From.IsValid() {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() == to.Is4() && !p.Addr().IsLinkLocalUnicast() {
				dc.From = p.Addr()
				break
			}
		}
		if !dc.From.IsValid() {
			return fmt.Errorf("data: interface %s has no IPv%d address to send from", dc.Iface, map[bool]int{true: 4, false: 6}[to.Is4()])
		}
	}
	if dc.From.Is4() != to.Is4() {
		return fmt.Errorf("data: from %v to %v: one address family, please", dc.From, to)
	}
	if dc.DstMAC == nil {
		if dc.DstMAC, err = neighbour(to, dc.Iface); err != nil {
			return err
		}
	}
	return nil
}

// neighbour returns the Ethernet address of the IPv4 neighbour a on dev, from the kernel's
// neighbour table (/proc/net/arp). IPv6 neighbours are not read: give --data-mac.
func neighbour(a netip.Addr, dev string) (net.HardwareAddr, error) {
	hint := fmt.Errorf("data-mac: no neighbour entry for %v on %s to take the next hop's MAC from: give --data-mac (ip neigh show dev %s)", a, dev, dev)
	if !a.Is4() {
		return nil, hint
	}
	b, err := os.ReadFile("/proc/net/arp")
	if err != nil {
		return nil, hint
	}
	// IP address, HW type, Flags, HW address, Mask, Device
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 6 && f[0] == a.String() && f[5] == dev && f[2] != "0x0" {
			return net.ParseMAC(f[3])
		}
	}
	return nil, hint
}

// DataFrames builds the Ethernet frames of the first n datagrams of g's stream as data
// packets (dc validated): each is a UDP datagram from dc.From (the report's flow's source
// port) to dc.To whose payload is the datagram's index (8 bytes, big endian) followed by
// zeros to Config.Payload bytes, with the report's INT header and stack inserted. fn gets
// each frame and the report whose stack it carries (valid during the call only).
func DataFrames(g *Generator, dc *DataConfig, n uint64, fn func(i uint64, frame []byte, r *telemetry.Report) error) error {
	enc, err := wire.NewEncoder(g.WireConfig())
	if err != nil {
		return err
	}
	var plain, frame []byte
	var ins telemetry.Report
	return g.Walk(n, func(i uint64, _ []byte, rs []telemetry.Report) error {
		r := &rs[0]
		plain = dc.plainFrame(plain[:0], r.Flow.SrcPort, i, max(8, g.Config().Payload))
		ins = telemetry.Report{INT: r.INT, NHops: r.NHops, Hops: r.Hops}
		ins.Inner.EncapArg = uint16(dc.NPT)
		if dc.HostINT {
			ins.INT.ShimType, ins.INT.SourceSeq = 3, uint32(i)
		}
		if frame, err = enc.InsertINT(frame[:0], plain, &ins, dc.Marking); err != nil {
			return fmt.Errorf("gen: data packet %d: %w", i, err)
		}
		return fn(i, frame, &ins)
	}, nil)
}

// plainFrame appends a UDP data packet without INT. Its UDP checksum is a placeholder that
// InsertINT computes over the packet as sent.
func (dc *DataConfig) plainFrame(b []byte, sport uint16, i uint64, payload int) []byte {
	be := binary.BigEndian
	b = append(b, dc.DstMAC...)
	b = append(b, dc.SrcMAC...)
	from, to := dc.From.Unmap(), dc.To.Addr().Unmap()
	n := 8 + payload
	if to.Is4() {
		b = be.AppendUint16(b, 0x0800)
		b = append(b, 0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protoUDP, 0, 0)
		be.PutUint16(b[len(b)-10:], uint16(20+n))
		b = append(b, from.AsSlice()...)
		b = append(b, to.AsSlice()...)
	} else {
		b = be.AppendUint16(b, 0x86dd)
		b = append(b, 0x60, 0, 0, 0, byte(n>>8), byte(n), protoUDP, 64)
		b = append(b, from.AsSlice()...)
		b = append(b, to.AsSlice()...)
	}
	b = be.AppendUint16(b, sport)
	b = be.AppendUint16(b, dc.To.Port())
	b = be.AppendUint16(b, uint16(n))
	b = be.AppendUint16(b, 0xffff)
	b = be.AppendUint64(b, i)
	return append(b, make([]byte, payload-8)...)
}
