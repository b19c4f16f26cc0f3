package dta

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f (a store of path) every block of its size bytes with fallocate (mode 0:
// the file grows to size, its data stays), so that no write into the mapping later meets a
// page the filesystem cannot supply (SIGBUS): a full filesystem refuses the store here,
// with the space it wants and the space there is. A filesystem without fallocate gets the
// file's size alone, sparse, as before (fault.go then catches what it cannot supply).
func allocate(f *os.File, path string, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSPC):
			free := "unknown"
			var st unix.Statfs_t
			if unix.Fstatfs(int(f.Fd()), &st) == nil {
				free = fmt.Sprintf("%d bytes", int64(st.Bavail)*int64(st.Bsize))
			}
			return fmt.Errorf("%s: the store needs %d bytes and its filesystem has %s free: refused (free space there, or make the dta stores smaller): %w", path, size, free, err)
		case errors.Is(err, unix.EOPNOTSUPP):
			return f.Truncate(size)
		default:
			return fmt.Errorf("%s: fallocate %d bytes: %w", path, size, err)
		}
	}
}
