// Package buildinfo reads intake's version from the build information the Go toolchain
// embeds in the binary: for `intake version` (internal/cli) and the labels of
// intake_build_info (ingest).
package buildinfo

import "runtime/debug"

// Info is what the build recorded. Revision, Time and Modified are empty when the build
// recorded no VCS information (go build -buildvcs=false, or a build outside a checkout).
type Info struct {
	// Version is the main module's version: a tag, or "(devel)" for a build from a
	// checkout; "" when the binary has no build information.
	Version string
	// Revision is the VCS revision (a full commit hash), Time its commit time (RFC 3339).
	Revision, Time string
	// Modified: the work tree had changes the revision does not hold.
	Modified bool
	// GoVersion is the toolchain's version (go1.26.8).
	GoVersion string
}

// Read returns the binary's build information; ok is false when it has none.
func Read() (i Info, ok bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{}, false
	}
	i.Version, i.GoVersion = bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i, true
}
