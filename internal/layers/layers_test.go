// Package layers holds the test that keeps the module's import graph equal to its map
// (docs/design.md, "Layout"): every package may import only what its line below allows,
// the standard library aside. A new package, or a new import, is a decision to write down
// here and in the map.
package layers

import (
	"bytes"
	"cmp"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
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
	"telemetry":                  nil,
	"internal/budget":            {sys},
	"internal/metrics":           {prom},
	"pcap":                       nil,
	"internal/prefetch":          nil,
	"internal/wbuf":              nil,
	"internal/cbpf":              nil,
	"internal/smallfile/...":     {sys},
	"internal/benchclock":        nil,
	"internal/buildinfo":         nil,
	"internal/confkey":           nil,
	"internal/cli":               {"internal/buildinfo", sys},
	"wire":                       {"telemetry"},
	"event":                      {"internal/metrics", "telemetry"},
	"record":                     {"event", "telemetry"},
	"partition":                  {"telemetry"},
	"kafkapb":                    {protobuf},
	"internal/xdp":               {"event", "telemetry", ebpf, sys},
	"api":                        {"internal/budget", "internal/smallfile", "internal/metrics", "telemetry"},
	"internal/budget/budgettest": {"internal/budget"},

	// The receive path and the processors: each registers on api, none imports another.
	"internal/ingest":    {"api", "internal/budget", "internal/buildinfo", "internal/cbpf", "internal/confkey", "internal/prefetch", "internal/metrics", "pcap", "telemetry", "wire", "internal/xdp", sys},
	"internal/capture":   {"internal/ingest", "pcap", "telemetry", "wire"},
	"internal/detect":    {"api", "internal/budget", "event", "internal/prefetch", "internal/metrics", "telemetry"},
	"internal/dta":       {"api", "internal/budget", "event", "internal/prefetch", "internal/metrics", "telemetry", sys},
	"internal/flowcache": {"api", "internal/budget", "event", "internal/prefetch", "internal/metrics", "record", "telemetry", sys},
	"internal/label":     {"api", "internal/budget", "internal/metrics", "telemetry"},

	// The sinks: fed through their interfaces (events, records, latest values, histograms,
	// reports), they know no processor.
	"internal/export/...": {"internal/export/...", "kafkapb", "internal/wbuf", "internal/budget", "event", "internal/ingest", "internal/smallfile", "internal/metrics", "record", "telemetry",
		redis, franz, protobuf, snappy},

	// Beside the processors: the cluster's routing, the console's pages, the tools.
	"internal/cluster": {"api", "partition", "telemetry"},
	"internal/history": {"api", "internal/budget", "internal/metrics", "record", "telemetry"},
	"internal/console": {"api"},
	// The consumer group's roles: an inlet is a processor of the receive path, a processor
	// feeds it; both route queries through the cluster's router.
	"internal/group":  {"internal/cluster", "internal/ingest", "internal/metrics", "partition", "telemetry", "internal/wbuf", franz},
	"internal/fabric": {"api", "internal/label", "partition", "telemetry", "wire"},
	"internal/gen":    {"internal/cli", "partition", "telemetry", "wire", sys},

	// The configuration file: every component's section.
	"internal/config": {"api", "internal/budget", "internal/cluster", "internal/detect", "internal/dta", "internal/export/...", "internal/flowcache", "internal/group", "internal/history", "internal/ingest", "internal/confkey", "internal/smallfile", "internal/label", "wire", yaml},

	// The composition root and what runs it.
	"internal/collector": {"api", "internal/cluster", "internal/config", "internal/console", "internal/detect", "internal/dta", "event", "internal/export/...", "internal/flowcache", "internal/group", "internal/history", "internal/ingest", "internal/label",
		"internal/metrics", "pcap", "record", "telemetry", "wire", "internal/xdp"},
	"internal/bench":        {"internal/collector", "internal/config", "internal/detect", "event", "internal/gen", "internal/ingest", "internal/sim/plot", "internal/xdp", sys}, // detect, event: the events a phase raised
	"internal/sim/plot":     nil,
	"internal/sim/dtasim":   {"internal/dta", "internal/sim/plot"},
	"internal/sim/labelsim": {"internal/fabric", "internal/label", "internal/sim/plot", "telemetry"},

	// The commands and the test tools may import anything of the module.
	"cmd/...":               {"..."},
	"internal/testutil/...": {"...", redis, sys, franz},
	"internal/tools/...":    {"...", franz},
	"internal/kfaketest":    {"..."},
	"internal/docstest":     {"..."},
	"internal/layers":       nil,
}

// TestLayers fails on any import a package's line in allow does not grant, and on any
// package without a line.
func TestLayers(t *testing.T) {
	// go test caches a passing result by the files the test opens, and go list's reads are
	// in another process: look at every Go file so that a changed import reruns the test.
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != "../.." {
			return cmp.Or(err, fs.SkipDir)
		}
		if strings.HasSuffix(p, ".go") {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
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
	g, _ := lookup("internal/detect")
	if granted(g, module+"/internal/cluster") {
		t.Error("detect may import cluster")
	}
	if !granted(g, module+"/event") {
		t.Error("detect may not import event")
	}
	g, _ = lookup("internal/export/kafka")
	if !granted(g, franz+"/pkg/kgo") || granted(g, module+"/internal/flowcache") {
		t.Error("export/kafka's grants are wrong")
	}
	if _, ok := lookup("newpkg"); ok {
		t.Error("a package without a line has grants")
	}
}
