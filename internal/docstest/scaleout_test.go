//go:build linux

package docstest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/testutil"
)

// TestScaleOutRecipe runs docs/scale-out.md's "Three collectors on one machine" as written:
// its three configuration files, then its commands, from one working directory. The
// members start (each on its own data directory), gen sends to each, and a query through
// one member answers with flows other members own; `serve --check` of a configuration whose
// data directory a running member holds fails, naming that member's pid. The doc's ports
// are used when they are free; otherwise (another process has one) they are rewritten to
// free ones, and the test says so.
func TestScaleOutRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts three collectors")
	}
	var files []block
	var script *block
	for _, b := range blocks(t, "docs/scale-out.md") {
		if b.lang == "yaml" && regexp.MustCompile(`^# c\d\.yaml\n`).MatchString(b.text) {
			files = append(files, b)
		}
		if b.lang == "sh" && strings.Contains(b.text, "intake serve --config c0.yaml") {
			script = &b
		}
	}
	if len(files) != 3 || script == nil {
		t.Fatalf("docs/scale-out.md: %d member files (want c0.yaml, c1.yaml, c2.yaml) and script %v", len(files), script)
	}
	texts := []string{script.text}
	for _, f := range files {
		texts = append(texts, f.text)
	}
	texts = freePorts(t, texts)
	dir := t.TempDir()
	for i, f := range files {
		name := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(f.text, "\n", 2)[0], "#"))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(texts[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := intakeBinary(t)
	outs := map[string]string{}
	var members []*exec.Cmd
	for _, line := range strings.Split(texts[0], "\n") {
		line, _, _ = strings.Cut(line, "#")
		parts := strings.Split(line, "&")
		for i, c := range parts {
			args := strings.Fields(c)
			if len(args) == 0 {
				continue
			}
			if args[0] != "intake" {
				t.Fatalf("%s: %q: not an intake command", script, c)
			}
			if background := i < len(parts)-1; background {
				members = append(members, startMember(t, bin, dir, args[1:]))
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, bin, args[1:]...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			cancel()
			if err != nil {
				t.Fatalf("%s: %s: %v\n%s%s", script, strings.TrimSpace(c), err, stdout.Bytes(), stderr.Bytes())
			}
			outs[args[1]+" "+args[2]] = stdout.String()
		}
	}
	if len(members) != 3 {
		t.Fatalf("%s: %d members started, want 3", script, len(members))
	}
	top, status := outs["query top"], outs["status --cluster"]
	if strings.Count(top, "\n") < 3 {
		t.Errorf("query top: no flows:\n%s", top)
	}
	if !strings.Contains(status, "cluster of 3 members") || strings.Count(status, " up ") != 3 {
		t.Errorf("status --cluster: not three members up:\n%s", status)
	}

	// A query through the first member reaches the others: the merged top flows name every
	// member as an owner.
	api := regexp.MustCompile(`--api (\S+)`).FindStringSubmatch(texts[0])[1]
	out, err := exec.Command(bin, "query", "top", "--api", api, "--json", "--n", "100").Output()
	if err != nil {
		t.Fatalf("query top --json: %v", err)
	}
	var ans struct {
		Flows []struct {
			Member string `json:"member"`
		} `json:"flows"`
		Partial bool `json:"partial"`
	}
	if err := json.Unmarshal(out, &ans); err != nil {
		t.Fatalf("query top --json: %v\n%s", err, out)
	}
	var owners []string
	for _, f := range ans.Flows {
		if !slices.Contains(owners, f.Member) {
			owners = append(owners, f.Member)
		}
	}
	slices.Sort(owners)
	if ans.Partial || !slices.Equal(owners, []string{"c0", "c1", "c2"}) {
		t.Errorf("query top through %s: owners %v, partial %v; want flows of c0, c1 and c2:\n%s", api, owners, ans.Partial, out)
	}

	// The old recipe's mistake, caught by --check: a second configuration on a data
	// directory a running member holds.
	shared := regexp.MustCompile(`data_dir: c1-dta`).ReplaceAllString(texts[2], "data_dir: c0-dta")
	if shared == texts[2] {
		t.Fatal("c1.yaml has no data_dir: c1-dta line")
	}
	os.WriteFile(filepath.Join(dir, "shared.yaml"), []byte(shared), 0o644)
	check := exec.Command(bin, "serve", "--config", "shared.yaml", "--check")
	check.Dir = dir
	var stderr bytes.Buffer
	check.Stderr = &stderr
	err = check.Run()
	want := fmt.Sprintf("intake serve: dta.data_dir: c0-dta: in use by another writer (pid %d holds c0-dta/lock): one writing collector per data directory\n", members[0].Process.Pid)
	if err == nil || stderr.String() != want {
		t.Errorf("serve --check on c0's data directory: %v %q, want exit 1 and %q", err, stderr.String(), want)
	}
}

// startMember starts `intake serve` with args in dir and waits until its HTTP API (the
// http.address of the --config file) answers /healthz; the test's end stops it with SIGTERM.
func startMember(t *testing.T, bin, dir string, args []string) *exec.Cmd {
	t.Helper()
	i := slices.Index(args, "--config")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("intake %s: no --config", strings.Join(args, " "))
	}
	cfg, err := os.ReadFile(filepath.Join(dir, args[i+1]))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^http:\s*\n\s+address:\s*(\S+)`).FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("%s: no http.address", args[i+1])
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("intake %s exited:\n%s", strings.Join(args, " "), log.String())
		default:
		}
		if resp, err := http.Get("http://" + string(m[1]) + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("intake %s: no answer on %s/healthz after 30 s", strings.Join(args, " "), m[1])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePorts returns texts with every 127.0.0.1:PORT kept when the port is free for both TCP
// and UDP, and every port rewritten to a free one when any is taken.
func freePorts(t *testing.T, texts []string) []string {
	t.Helper()
	re := regexp.MustCompile(`127\.0\.0\.1:(\d+)|port: (\d+)`)
	var ports []string
	for _, s := range texts {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			if p := m[1] + m[2]; !slices.Contains(ports, p) {
				ports = append(ports, p)
			}
		}
	}
	taken := ""
	for _, p := range ports {
		if !portFree(p) {
			taken = p
			break
		}
	}
	if taken == "" {
		return texts
	}
	repl := map[string]string{}
	used := map[string]bool{}
	for _, p := range ports {
		n := strconv.Itoa(testutil.FreePort(t)) // free for TCP and UDP both
		for used[n] {
			n = strconv.Itoa(testutil.FreePort(t))
		}
		used[n], repl[p] = true, n
	}
	t.Logf("port %s is taken: the doc's ports are rewritten %v", taken, repl)
	out := make([]string, len(texts))
	for i, s := range texts {
		out[i] = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if sub[1] != "" {
				return "127.0.0.1:" + repl[sub[1]]
			}
			return "port: " + repl[sub[2]]
		})
	}
	return out
}

// portFree reports whether port is free on 127.0.0.1 for TCP and UDP.
func portFree(port string) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		return false
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:"+port)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}
