//go:build !linux

package bench

import "time"

// Stand-ins for bench ingest's Linux readers (host_linux.go): off Linux bench ingest
// refuses before measuring anything, since the receive path (ingest.CheckReceivePath) and the
// sender (gen.CheckSend) are Linux's.

// softnetDrops: no /proc/net/softnet_stat; 0, as where the file is unreadable.
func softnetDrops() uint64 { return 0 }

// processCPU: not measured; 0.
func processCPU() time.Duration { return 0 }

// systemCPU: not measured; 0.
func systemCPU() (busy, all time.Duration) { return 0, 0 }
