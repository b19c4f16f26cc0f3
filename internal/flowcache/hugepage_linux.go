package flowcache

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages (advice only: without THP the table still
// works).
func adviseHuge(b []byte) { unix.Madvise(b, unix.MADV_HUGEPAGE) }
