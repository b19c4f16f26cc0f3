package ingest

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// udpTable reads /proc/net/udp and /proc/net/udp6: the UDP sockets of this network
// namespace.
func udpTable() ([]udpSocket, error) {
	var out []udpSocket
	for _, p := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		f, err := os.Open(p)
		if err != nil {
			if os.IsNotExist(err) { // no IPv6
				continue
			}
			return nil, err
		}
		ss, err := parseUDPTable(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, ss...)
	}
	return out, nil
}

// parseUDPTable parses the kernel's table: a header line, then per socket "sl local_address
// rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...", addresses
// as hex words in host byte order and ports as hex.
func parseUDPTable(r io.Reader) ([]udpSocket, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<16)
	var out []udpSocket
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 {
			continue
		}
		local, err1 := parseProcAddr(fs[1])
		remote, err2 := parseProcAddr(fs[2])
		uid, err3 := strconv.Atoi(fs[7])
		ino, err4 := strconv.ParseUint(fs[9], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return nil, fmt.Errorf("line %q: not a socket entry", sc.Text())
		}
		out = append(out, udpSocket{local: local, remote: remote, inode: ino, uid: uid})
	}
	return out, sc.Err()
}

// parseProcAddr parses "0100007F:1F90" (IPv4) or 32 hex digits and a port (IPv6): each
// 32-bit word of the address is printed in the host's byte order.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a, uint16(port)), nil
}

// socketPID returns a process holding socket inode, 0 when none this process may see.
func socketPID(ino uint64) int {
	want := "socket:[" + strconv.FormatUint(ino, 10) + "]"
	procs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, d := range procs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(d, e.Name())); err == nil && l == want {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
				return pid
			}
		}
	}
	return 0
}
