//go:build race

package flowcache

// prefetch is a no-op under the race detector; see prefetch.go.
func (t *table) prefetch(off int, tag uint32) uint64 { return 0 }
