package budget

import "golang.org/x/sys/unix"

// OnTmpfs reports whether path (or its nearest existing ancestor) is on tmpfs, whose files
// are memory.
func OnTmpfs(path string) bool {
	st, ok := statfs(path)
	return ok && st.Type == unix.TMPFS_MAGIC
}
