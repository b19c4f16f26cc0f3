//go:build unix

package budget

import (
	"path/filepath"

	"golang.org/x/sys/unix"
)

// statfs runs statfs on path's nearest existing ancestor (the directory a store will be
// created in may not exist yet).
func statfs(path string) (unix.Statfs_t, bool) {
	p := filepath.Clean(path)
	for {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil {
			return st, true
		}
		up := filepath.Dir(p)
		if up == p {
			return st, false
		}
		p = up
	}
}

// FreeBytes returns the bytes an unprivileged user may still write on the filesystem
// holding path, -1 when unknown.
func FreeBytes(path string) int64 {
	st, ok := statfs(path)
	if !ok {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
