//go:build !linux

package dta

import "os"

// allocate sets f's size: fallocate is Linux's (alloc_linux.go); here the file is sparse,
// and a page its filesystem cannot supply later is a fault that fault.go recovers.
func allocate(f *os.File, _ string, size int64) error { return f.Truncate(size) }
