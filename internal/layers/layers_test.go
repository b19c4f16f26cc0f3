// Package layers holds the test that keeps the module's import graph equal to its map
// (docs/design.md, "Layout"): every package may import only what its line below allows,
// the standard library aside. A new package, or a new import, is a decision to write down
// here and in the map.
package layers

import (
	"bytes"
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/intake-int/intake"

// Third-party modules, by what they are for.
const (
	sys      = "golang.org/x/sys"
	yaml     = "go.yaml.in/yaml"
	ebpf     = "github.com/cilium/ebpf"
	prom     = "github.com/prometheus"
	redis    = "github.com/redis/go-redis"
	franz    = "github.com/twmb/franz-go"
	protobuf = "google.golang.org/protobuf"
	snappy   = "github.com/golang/snappy"
)

// allow maps each package of the module (its path inside the module; "x/..." is x and
// everything below it) to what it may import: packages of the module, the same way, and
// third-party module paths (a prefix). The floors, from the bottom: the formats and
// counters; the floor's services (api, event, record, partition, xdp); the receive path and
// the processors; the sinks and the tools beside the collector; the configuration; the
// composition root; the commands.
var allow = map[string][]string{
	// The floor: formats, the Report, counters, small helpers.
	"telemetry":              nil,
	"budget":                 {sys},
	"metrics":                {prom},
	"pcap":                   nil,
	"internal/prefetch":      nil,
	"internal/cbpf":          nil,
	"internal/smallfile/...": {sys},
	"internal/benchclock":    nil,
	"internal/buildinfo":     nil,
	"internal/confkey":       nil,
	"internal/cli":           {"internal/buildinfo", sys},
	"wire":                   {"telemetry"},
	"event":                  {"metrics", "telemetry"},
	"record":                 {"event", "telemetry"},
	"partition":              {"telemetry"},
	"xdp":                    {"event", "telemetry", ebpf, sys},
	"api":                    {"budget", "internal/smallfile", "metrics", "telemetry"},
	"budget/budgettest":      {"budget"},

	// The receive path and the processors: each registers on api, none imports another.
	"ingest":    {"api", "budget", "internal/buildinfo", "internal/cbpf", "internal/confkey", "internal/prefetch", "metrics", "pcap", "telemetry", "wire", "xdp", sys},
	"capture":   {"ingest", "pcap", "telemetry", "wire"},
	"detect":    {"api", "budget", "event", "internal/prefetch", "metrics", "telemetry"},
	"dta":       {"api", "budget", "event", "internal/prefetch", "metrics", "telemetry", sys},
	"flowcache": {"api", "budget", "event", "internal/prefetch", "metrics", "record", "telemetry", sys},
	"label":     {"api", "budget", "metrics", "telemetry"},

	// The sinks: fed through their interfaces (events, records, latest values, histograms,
	// reports), they know no processor.
	"export/...": {"export/...", "budget", "event", "ingest", "internal/smallfile", "metrics", "record", "telemetry",
		redis, franz, protobuf, snappy},

	// Beside the processors: the cluster's routing, the console's pages, the tools.
	"cluster": {"api", "partition", "telemetry"},
	"console": {"api"},
	"fabric":  {"api", "label", "partition", "telemetry", "wire"},
	"gen":     {"internal/cli", "partition", "telemetry", "wire", sys},

	// The configuration file: every component's section.
	"config": {"api", "budget", "cluster", "detect", "dta", "export/...", "flowcache", "ingest", "internal/confkey", "internal/smallfile", "label", "wire", yaml},

	// The composition root and what runs it.
	"collector": {"api", "cluster", "config", "console", "detect", "dta", "event", "export/...", "flowcache", "ingest", "label",
		"metrics", "pcap", "record", "telemetry", "wire", "xdp"},
	"bench":        {"collector", "config", "gen", "ingest", "xdp"},
	"sim/plot":     nil,
	"sim/dtasim":   {"dta", "sim/plot"},
	"sim/labelsim": {"fabric", "label", "sim/plot", "telemetry"},

	// The commands and the test tools may import anything of the module.
	"cmd/...":               {"..."},
	"internal/testutil/...": {"...", redis, sys, franz},
	"internal/tools/...":    {"...", franz},
	"internal/kfaketest":    {"..."},
	"internal/layers":       nil,
}

// TestLayers fails on any import a package's line in allow does not grant, and on any
// package without a line.
func TestLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := strings.CutPrefix(f[0], module+"/")
		if !ok {
			continue // the module's root has no package
		}
		n++
		grants, ok := lookup(pkg)
		if !ok {
			t.Errorf("%s: not on the map: give it a line in allow (and in docs/design.md, \"Layout\")", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				continue // the standard library
			}
			if !granted(grants, imp) {
				t.Errorf("%s imports %s: not allowed by its line in allow (docs/design.md, \"Layout\")", pkg, imp)
			}
		}
	}
	if n < 30 {
		t.Fatalf("go list found %d packages: not run in the module?", n)
	}
}

// lookup returns the grants of pkg: its own line, or the nearest "x/..." above it.
func lookup(pkg string) ([]string, bool) {
	if g, ok := allow[pkg]; ok {
		return g, true
	}
	for p := pkg; p != "."; p = path.Dir(p) {
		if g, ok := allow[p+"/..."]; ok {
			return g, true
		}
	}
	return nil, false
}

// granted reports whether grants let a package import imp.
func granted(grants []string, imp string) bool {
	rel, inModule := strings.CutPrefix(imp, module+"/")
	for _, g := range grants {
		if !inModule {
			// A third-party module path; a prefix, so that versioned paths (go-redis/v9) and
			// a module's packages are covered.
			if strings.Contains(g, ".") && strings.HasPrefix(imp, g) {
				return true
			}
			continue
		}
		if g == "..." || g == rel {
			return true
		}
		if base, ok := strings.CutSuffix(g, "/..."); ok && (rel == base || strings.HasPrefix(rel, base+"/")) {
			return true
		}
	}
	return false
}

// TestLayersCatches: the check refuses an import outside a line (detect importing cluster,
// which would put a processor above the cluster's routing), and grants what a line lists.
func TestLayersCatches(t *testing.T) {
	g, _ := lookup("detect")
	if granted(g, module+"/cluster") {
		t.Error("detect may import cluster")
	}
	if !granted(g, module+"/event") {
		t.Error("detect may not import event")
	}
	g, _ = lookup("export/kafka")
	if !granted(g, franz+"/pkg/kgo") || granted(g, module+"/flowcache") {
		t.Error("export/kafka's grants are wrong")
	}
	if _, ok := lookup("newpkg"); ok {
		t.Error("a package without a line has grants")
	}
}
