package xdptest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// CsumErrors reads this namespace's checksum error counters, keyed "Udp", "Tcp" and "Udp6"
// (InCsumErrors of /proc/net/snmp; Udp6InCsumErrors of /proc/net/snmp6; TCP counts both
// families in one). A packet whose checksum the kernel refuses is dropped and counted here.
func CsumErrors(t testing.TB) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, file := range []string{"/proc/net/snmp", "/proc/net/snmp6"} {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string][]string{}
		s := bufio.NewScanner(f)
		for s.Scan() {
			fields := strings.Fields(s.Text())
			if len(fields) == 2 && fields[0] == "Udp6InCsumErrors" {
				out["Udp6"], _ = strconv.ParseUint(fields[1], 10, 64)
				continue
			}
			if len(fields) < 2 || (fields[0] != "Udp:" && fields[0] != "Tcp:") {
				continue
			}
			proto := strings.TrimSuffix(fields[0], ":")
			if names[proto] == nil {
				names[proto] = fields
				continue
			}
			for j, n := range names[proto] {
				if n == "InCsumErrors" && j < len(fields) {
					out[proto], _ = strconv.ParseUint(fields[j], 10, 64)
				}
			}
		}
		f.Close()
	}
	return out
}
