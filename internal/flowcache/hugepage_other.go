//go:build unix && !linux

package flowcache

// adviseHuge: huge-page advice is Linux's.
func adviseHuge([]byte) {}
