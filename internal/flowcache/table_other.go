//go:build !unix

package flowcache

// allocWords returns n zeroed words. Without mmap (Windows) the table is ordinary Go memory
// at every size: a []uint64 holds no pointers, so the garbage collector does not scan it;
// there is no huge-page advice and no mapping to release (unmapWords is never called).
func allocWords(n int) ([]uint64, []byte) { return make([]uint64, n), nil }

// unmapWords: there are no mappings to release.
func unmapWords([]byte) {}
