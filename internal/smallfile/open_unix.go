//go:build unix

package smallfile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNonblock opens path for reading with O_NONBLOCK: the open of a FIFO returns at once
// instead of waiting for a writer (Read then refuses it). Regular files ignore the flag.
func openNonblock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// checkPrivate refuses a secret's file that others may read or the group or others write.
func checkPrivate(m fs.FileMode, path string) error {
	if m.Perm()&0o027 == 0 {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf(
		"mode %04o lets other users read or change the secret: chmod 600 %s (or 640: the group may read)", m.Perm(), path)}
}
