// Package kfaketest starts a Kafka-protocol cluster for tests as a process of its own:
// internal/tools/kfakebroker (franz-go's kfake), built with go build once per test binary.
// No Kafka package exists on these machines; the code under test talks to it over loopback
// like to any broker.
package kfaketest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var bin struct {
	once sync.Once
	path string
	err  error
}

// Binary builds kfakebroker (once per test binary, into the user's cache directory, so that
// test runs leave no copies behind) and returns its path. The build goes to a name of this
// process's own and is renamed into place: test binaries of other packages building at the
// same time, or running the previous build, are not disturbed.
func Binary(t testing.TB) string {
	t.Helper()
	bin.once.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		dir = filepath.Join(dir, "intake")
		if bin.err = os.MkdirAll(dir, 0o755); bin.err != nil {
			return
		}
		bin.path = filepath.Join(dir, "kfakebroker-"+runtime.GOOS+"-"+runtime.GOARCH)
		tmp := fmt.Sprintf("%s.%d", bin.path, os.Getpid())
		out, err := exec.Command("go", "build", "-o", tmp, "github.com/intake-int/intake/internal/tools/kfakebroker").CombinedOutput()
		if err != nil {
			bin.err = fmt.Errorf("go build kfakebroker: %v\n%s", err, out)
			return
		}
		bin.err = os.Rename(tmp, bin.path)
	})
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	return bin.path
}

// Cluster is a running kfakebroker: its brokers' addresses and its command line.
type Cluster struct {
	Brokers []string
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
}

// Topics are the topics Start creates: export.kafka.topics' defaults.
var Topics = []string{"intake.reports", "intake.events", "intake.snapshots", "intake.flows"}

// Start runs a cluster of brokers, with the topics intake.reports, intake.events,
// intake.snapshots and intake.flows of partitions partitions each, killed at the test's end.
func Start(t testing.TB, brokers, partitions int) *Cluster {
	t.Helper()
	return StartTopics(t, brokers, partitions, Topics...)
}

// StartTopics is Start with only the given topics (partitions partitions each; a topic
// created later gets as many).
func StartTopics(t testing.TB, brokers, partitions int, topics ...string) *Cluster {
	t.Helper()
	cmd := exec.Command(Binary(t), "-brokers", fmt.Sprint(brokers), "-partitions", fmt.Sprint(partitions),
		"-topics", strings.Join(topics, ","))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &Cluster{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if !k.out.Scan() || !strings.HasPrefix(k.out.Text(), "brokers ") {
		t.Fatalf("kfakebroker: no broker line: %q", k.out.Text())
	}
	k.Brokers = strings.Split(strings.TrimPrefix(k.out.Text(), "brokers "), ",")
	if len(k.Brokers) != brokers {
		t.Fatalf("kfakebroker: %d brokers, want %d: %v", len(k.Brokers), brokers, k.Brokers)
	}
	return k
}

// Command sends one command line (kfakebroker's doc lists them) and returns its answer;
// an answer "error: ..." fails the test.
func (k *Cluster) Command(t testing.TB, line string) string {
	t.Helper()
	fmt.Fprintln(k.in, line)
	if !k.out.Scan() {
		t.Fatalf("kfakebroker %q: no answer", line)
	}
	if a := k.out.Text(); strings.HasPrefix(a, "error: ") {
		t.Fatalf("kfakebroker %q: %s", line, a)
	}
	return k.out.Text()
}

// Signal sends sig to the cluster's process: SIGSTOP and SIGCONT make every broker stall and
// resume at once, as a whole Kafka cluster that stops answering (a network partition, a
// stalled disk) would.
func (k *Cluster) Signal(sig os.Signal) error { return k.cmd.Process.Signal(sig) }
