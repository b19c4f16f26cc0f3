package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The host readers of a measurement; host_other.go has the stand-ins for the systems where
// bench ingest refuses to run (the receive path and the sender are Linux's).

// softnetDrops is the host's count of packets dropped because a CPU's input backlog was full
// (/proc/net/softnet_stat, second column, summed over CPUs): where loopback datagrams are
// lost before any socket sees them. 0 where the file is unreadable.
func softnetDrops() uint64 {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		return 0
	}
	var n uint64
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			if v, err := strconv.ParseUint(f[1], 16, 32); err == nil {
				n += v
			}
		}
	}
	return n
}

// processCPU is this process's user plus system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// systemCPU is the whole machine's busy CPU time (/proc/stat, the cpu line: user, nice,
// system, irq, softirq and steal; USER_HZ ticks of 10 ms): what sender, collector and the
// kernel's receive work cost together; all adds the idle and iowait time, so that busy / all
// over an interval is the share of the machine that was busy. 0 where the file is unreadable.
func systemCPU() (busy, all time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	var ticks, idle uint64
	for i := 1; i <= 8; i++ { // user nice system idle iowait irq softirq steal
		v, _ := strconv.ParseUint(f[i], 10, 64)
		if i == 4 || i == 5 {
			idle += v
		} else {
			ticks += v
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond, time.Duration(ticks+idle) * 10 * time.Millisecond
}
