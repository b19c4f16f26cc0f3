//go:build linux || darwin || freebsd || netbsd || openbsd

package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal (a TTY), where progress bars and screens that
// redraw belong; a file, a pipe or /dev/null is not.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}
