//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package cli

import (
	"io"
	"os"
)

// IsTerminal reports whether w is a character device, the nearest this system's check
// comes to a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
