package docstest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDocSessions runs every terminal session of docs/*.md and the README, a code block
// whose first line is "$ intake ...", from the repository's root, and checks that the lines
// the doc shows after it are lines of what the command prints, in order ("..." stands for
// lines left out). docs/switches.md's `intake decode` hints are checked this way.
func TestDocSessions(t *testing.T) {
	n := 0
	for _, file := range markdownFiles(t) {
		for _, b := range blocks(t, file) {
			lines := strings.Split(strings.TrimSuffix(b.text, "\n"), "\n")
			args, ok := strings.CutPrefix(lines[0], "$ intake ")
			if !ok {
				continue
			}
			n++
			cmd := exec.Command(intakeBinary(t), strings.Fields(args)...)
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: intake %s: %v\n%s", b, args, err, out)
				continue
			}
			got := strings.Split(string(out), "\n")
			for _, want := range lines[1:] {
				if want == "..." {
					continue
				}
				i := indexOf(got, want)
				if i < 0 {
					t.Errorf("%s: intake %s does not print, in this order,\n%s\nit prints:\n%s", b, args, want, out)
					break
				}
				got = got[i+1:]
			}
		}
	}
	if n < 4 {
		t.Errorf("%d sessions found: the extraction is broken", n)
	}
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}
