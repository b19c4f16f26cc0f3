package docstest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/intake-int/intake/internal/config"
)

// root is the repository's root, from this package's directory.
const root = "../.."

// block is one fenced code block of a Markdown file.
type block struct {
	file string // relative to the repository's root
	line int    // of the opening fence, 1-based
	lang string
	text string
}

func (b block) String() string { return b.file + ":" + strconv.Itoa(b.line) }

// blocks returns the fenced code blocks of the Markdown file at path (relative to root).
func blocks(t *testing.T, path string) []block {
	t.Helper()
	f, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var bs []block
	var cur *block
	sc := bufio.NewScanner(bytes.NewReader(f))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		fence := strings.HasPrefix(strings.TrimLeft(l, " "), "```")
		switch {
		case cur == nil && fence:
			cur = &block{file: path, line: n, lang: strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "`"))}
		case cur != nil && fence:
			bs = append(bs, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: a code block that is never closed", path, cur.line)
	}
	return bs
}

// markdownFiles are the pages whose configuration blocks are checked: docs/*.md and the
// README.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(ms) < 10 {
		t.Fatalf("docs/*.md: %v %v", ms, err)
	}
	files := []string{"README.md"}
	for _, m := range ms {
		files = append(files, filepath.Join("docs", filepath.Base(m)))
	}
	return files
}

// fragmentMark is the first line of a YAML block that is part of a configuration (keys to
// merge into one, naming files or hosts that a reader has and the test does not): its keys
// and types are checked, not its values.
const fragmentMark = "# fragment"

// TestDocConfigBlocks loads every ```yaml block of docs/*.md and the README with
// config.Load, what `intake serve --check` runs on its --config file; a block marked
// "# fragment" is decoded strictly (every key known, every value of its key's type). A
// failure names the file and the line of the block.
func TestDocConfigBlocks(t *testing.T) {
	n := 0
	for _, file := range markdownFiles(t) {
		for _, b := range blocks(t, file) {
			if b.lang != "yaml" {
				continue
			}
			n++
			if err := loadBlock(t, b); err != nil {
				t.Errorf("%s: the yaml block does not load as `intake serve --check` loads it: %v\n%s", b, err, b.text)
			}
		}
	}
	if n < 7 {
		t.Errorf("%d yaml blocks in the docs: the extraction is broken", n)
	}
}

// loadBlock loads a block as a configuration file, or checks a fragment's keys and types.
func loadBlock(t *testing.T, b block) error {
	if strings.HasPrefix(b.text, fragmentMark) {
		return decodeFragment(b.text)
	}
	p := filepath.Join(t.TempDir(), "intake.yaml")
	if err := os.WriteFile(p, []byte(b.text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(p)
	return err
}

// decodeFragment decodes text onto a configuration, rejecting unknown keys and values that do
// not fit their key's type, without validating the values.
func decodeFragment(text string) error {
	c := config.Default()
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	return dec.Decode(&c)
}

// TestDocConfigBlocksCatch: a block with an unknown key, or a value out of range, fails; a
// fragment with an unknown key fails too, one naming a file that is not here passes.
func TestDocConfigBlocksCatch(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"flowcache: {rows: 1024}\n", true},
		{"flowcache: {rowz: 1024}\n", false},
		{"flowcache: {rows: 1000}\n", false},
		{fragmentMark + "\nexport: {redis: {url: rediss://r.example:6380, tls_ca: /nonexistent/ca.pem}}\n", true},
		{fragmentMark + "\nexport: {redis: {urll: x}}\n", false},
		{fragmentMark + "\nflowcache: {rows: many}\n", false},
	} {
		err := loadBlock(t, block{file: "x.md", line: 1, lang: "yaml", text: tc.text})
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.text, err, tc.ok)
		}
	}
}
