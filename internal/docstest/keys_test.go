package docstest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/config"
)

// leaves are the keys whose values are documented whole, not key by key: what they hold is
// described where the key is.
var leaves = map[string]string{
	"listeners[].decoder": "the decoder section's keys, per listener",
	"decoder.dscp":        "a list of {value, mask}",
	"sinks[].dscp":        "a list of {value, mask}",
}

// configKeys walks t's yaml tags and returns every key a configuration file may give, as
// dotted paths ("flowcache.histograms.bins", "listeners[].port"): the leaves, and a list of
// mappings as "name[].key".
func configKeys(t reflect.Type, path string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, ok := leaves[path]; ok {
		out[path] = true
		return
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeFor[time.Duration]():
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case !f.IsExported() || name == "-":
			case opts == "inline":
				configKeys(f.Type, path, out)
			case name != "":
				configKeys(f.Type, join(path, name), out)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		configKeys(t.Elem(), path+"[]", out)
	default:
		out[path] = true
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

var (
	// heading is a section heading naming its key prefix: "## `export.redis`".
	heading = regexp.MustCompile("^#{2,3} `([a-z_.\\[\\]]+)`")
	// keyCell is a backticked key in a table's first cell.
	keyCell = regexp.MustCompile("`([a-z0-9_.*\\[\\]]+)`")
)

// docKeys reads docs/config.md's key tables: every table whose header's first cell is "key",
// under a heading that names its section ("## `flowcache`"); a first cell may list several
// keys, "`a.b`, `.c`" (a key starting with "." replaces the last part of the one before it),
// and "`x.*`" stands for every key under x. It returns the keys with their line numbers.
func docKeys(t *testing.T) (keys map[string]int, wildcards map[string]int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	keys, wildcards = map[string]int{}, map[string]int{}
	section, inTable := "", false
	for n, l := range strings.Split(string(b), "\n") {
		n++
		if m := heading.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		if strings.HasPrefix(l, "#") {
			section = ""
		}
		if !strings.HasPrefix(l, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(l, "|")
		first := strings.TrimSpace(cells[1])
		if first == "key" {
			inTable = section != ""
			continue
		}
		if !inTable || strings.HasPrefix(first, "---") {
			continue
		}
		prev := ""
		for _, m := range keyCell.FindAllStringSubmatch(first, -1) {
			k := m[1]
			if strings.HasPrefix(k, ".") && prev != "" {
				k = prev[:strings.LastIndex(prev, ".")] + k
			}
			prev = k
			full := join(section, k)
			if w, ok := strings.CutSuffix(full, ".*"); ok {
				wildcards[w] = n
			} else {
				keys[full] = n
			}
		}
	}
	return keys, wildcards
}

// TestConfigDocKeys: every key a configuration file may give (config.Config's yaml tags,
// each component's section included) is in a key table of docs/config.md, and every key
// the tables list exists. A key added to a section without its line in docs/config.md
// fails here.
func TestConfigDocKeys(t *testing.T) {
	code := map[string]bool{}
	configKeys(reflect.TypeFor[config.Config](), "", code)
	if len(code) < 150 {
		t.Errorf("%d configuration keys: the walk is broken", len(code))
	}
	doc, wild := docKeys(t)
	for _, p := range keyProblems(code, doc, wild) {
		t.Error(p)
	}
}

// keyProblems compares the keys of the code with those of the doc (and its wildcards).
func keyProblems(code map[string]bool, doc, wild map[string]int) []string {
	var ps []string
	for k := range code {
		if _, ok := doc[k]; ok {
			continue
		}
		covered := false
		for w := range wild {
			covered = covered || strings.HasPrefix(k, w+".")
		}
		if !covered {
			ps = append(ps, k+": a configuration key docs/config.md does not list (add it to its section's table)")
		}
	}
	for k, line := range doc {
		if !code[k] {
			ps = append(ps, fmt.Sprintf("docs/config.md:%d: %s: no such configuration key", line, k))
		}
	}
	for w, line := range wild {
		found := false
		for k := range code {
			found = found || strings.HasPrefix(k, w+".")
		}
		if !found {
			ps = append(ps, fmt.Sprintf("docs/config.md:%d: %s.*: no such configuration section", line, w))
		}
	}
	slices.Sort(ps)
	return ps
}

// TestConfigDocKeysCatch: a key added to a section without its line in docs/config.md, and
// a line for a key that does not exist, are reported.
func TestConfigDocKeysCatch(t *testing.T) {
	code := map[string]bool{}
	configKeys(reflect.TypeFor[config.Config](), "", code)
	doc, wild := docKeys(t)
	before := keyProblems(code, doc, wild) // TestConfigDocKeys' business
	code["flowcache.new_key"] = true
	doc["flowcache.gone_key"] = 7
	var got []string
	for _, p := range keyProblems(code, doc, wild) {
		if !slices.Contains(before, p) {
			got = append(got, p)
		}
	}
	want := []string{"docs/config.md:7: flowcache.gone_key: no such configuration key",
		"flowcache.new_key: a configuration key docs/config.md does not list (add it to its section's table)"}
	if !slices.Equal(got, want) {
		t.Errorf("%q\nwant %q", got, want)
	}
}
