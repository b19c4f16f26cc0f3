//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/collector"
	"github.com/intake-int/intake/internal/kfaketest"
	"github.com/intake-int/intake/internal/testutil"
	"github.com/intake-int/intake/internal/testutil/collectortest"
	"github.com/intake-int/intake/partition"
)

// rawPartitions is the raw topic's partitions in the group tests.
const rawPartitions = 12

// groupMember is one `intake serve` process of a consumer group (a processor or an inlet).
type groupMember struct {
	name, api  string
	report, dt string // an inlet's UDP listeners
	cmd        *exec.Cmd
}

// startGroupMember runs `intake serve` in role (processor or inlet) against brokers.
func startGroupMember(t testing.TB, role, name string, brokers []string, extra string) *groupMember {
	t.Helper()
	m := &groupMember{name: name, api: testutil.FreeAddr(t)}
	cfg := fmt.Sprintf("http: {address: '%s'}\nlabel: {enabled: false}\ndta: {data_dir: %s}\n"+
		"group: {role: %s, name: %s, brokers: ['%s'], commit_interval: 200ms, snapshot_interval: 500ms%s}\n",
		m.api, t.TempDir(), role, name, strings.Join(brokers, "', '"), extra)
	if role == "inlet" {
		cfg += "listeners:\n  - {format: report, address: 127.0.0.1, port: 0, sockets: 1}\n" +
			"  - {format: dta, address: 127.0.0.1, port: 0, sockets: 1}\n"
	}
	path := filepath.Join(t.TempDir(), "intake.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(exe, "serve", "--config", path)
	m.cmd.Env = append(os.Environ(), childEnv+"=1")
	// Its log, to find what it listens on and for a failing test to show.
	logPath := filepath.Join(t.TempDir(), name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	m.cmd.Stderr = lf
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.cmd.Process.Kill(); m.cmd.Wait() })
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s's log:\n%s", name, b)
		}
	})
	reUDP := regexp.MustCompile(`listening for (report|dta) on udp (\S+) `)
	var log string
	testutil.Eventually(t, 20*time.Second, name+" to start", func() bool {
		b, _ := os.ReadFile(logPath)
		log = string(b)
		return strings.Contains(log, "http on ")
	})
	for _, s := range reUDP.FindAllStringSubmatch(log, -1) {
		if s[1] == "report" {
			m.report = s[2]
		} else {
			m.dt = s[2]
		}
	}
	if role == "inlet" && (m.report == "" || m.dt == "") {
		t.Fatalf("%s did not start:\n%s", name, log)
	}
	return m
}

// groupStatus is GET /api/v1/status's group part.
func groupStatus(t testing.TB, m *groupMember) *collector.GroupStatus {
	t.Helper()
	var st collector.Status
	collectortest.GetJSON(t, "http://"+m.api+"/api/v1/status", &st)
	if st.Group == nil {
		t.Fatalf("%s: status has no group", m.name)
	}
	return st.Group
}

// owners maps each partition to the processor that holds it, as the processors say.
func owners(t testing.TB, ps []*groupMember) map[int32]string {
	t.Helper()
	o := map[int32]string{}
	for _, p := range ps {
		for _, part := range groupStatus(t, p).Processor.Partitions {
			o[part.Partition] = p.name
		}
	}
	return o
}

// settled waits until the processors hold every partition between them, as they say, none
// still replaying, and every one of ask describes the group as stable with that
// assignment: queries through any of them go to the owners, which have rebuilt their
// state. It returns the owners.
func settled(t testing.TB, procs, ask []*groupMember) map[int32]string {
	t.Helper()
	var o map[int32]string
	testutil.Eventually(t, 30*time.Second, "the group to settle", func() bool {
		o = owners(t, procs)
		if len(o) != rawPartitions {
			return false
		}
		for _, p := range procs {
			for _, part := range groupStatus(t, p).Processor.Partitions {
				if part.Replaying {
					return false
				}
			}
		}
		for _, m := range ask {
			g := groupStatus(t, m).Group
			if g.State != "Stable" || len(g.Members) != len(procs) {
				return false
			}
			for _, mb := range g.Members {
				for _, p := range mb.Partitions {
					if o[p] != mb.Name {
						return false
					}
				}
			}
		}
		return true
	})
	return o
}

// processed is the reports the processors have processed in all.
func processed(t *testing.T, ps []*groupMember) uint64 {
	var n uint64
	for _, p := range ps {
		n += groupStatus(t, p).Processor.Records
	}
	return n
}

// TestGroup: an inlet produces every report to a 3-broker Kafka, processors in a consumer
// group process them, any member answers a key's query from its owner by the group's
// assignment, a processor added takes about 1/N of the partitions, and a processor killed
// with SIGKILL hands its partitions on: nothing is lost.
func TestGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka and four collectors")
	}
	k := kfaketest.StartTopics(t, 3, rawPartitions, "intake.raw", "intake.state")
	p1 := startGroupMember(t, "processor", "p1", k.Brokers, "")
	p2 := startGroupMember(t, "processor", "p2", k.Brokers, "")
	procs := []*groupMember{p1, p2}
	in := startGroupMember(t, "inlet", "i1", k.Brokers, "")
	own := settled(t, procs, []*groupMember{p1, p2, in})
	if n := len(slices.DeleteFunc(mapValues(own), func(s string) bool { return s != "p1" })); n != rawPartitions/2 {
		t.Fatalf("p1 holds %d partitions of %d: %v", n, rawPartitions, own)
	}

	const flows = 48
	tr := runCollectorsGen(t, []string{in.report}, "--format", "tr2.0", "--flows", fmt.Sprint(flows), "--count", "2400", "--rate", "40000", "--latency", "const:1000")[0]
	ki := runCollectorsGen(t, []string{in.dt}, "--format", "dta", "--dta-op", "key-increment", "--flows", fmt.Sprint(flows), "--count", "1500", "--rate", "40000")[0]
	want := tr.Reports + ki.Reports
	testutil.Eventually(t, 20*time.Second, fmt.Sprintf("the processors to process the %d reports", want), func() bool {
		return groupStatus(t, in).Inlet.Produced == want && processed(t, procs) == want
	})
	if st := groupStatus(t, in).Inlet; st.Offered != want || st.Dropped != 0 || st.Failed != 0 || st.Partitions != rawPartitions {
		t.Fatalf("inlet: %+v, want %d offered and produced", st, want)
	}

	// Every flow and every DTA key, through every member and the inlet: the owner's exact
	// answer, the owner the one the group gave the key's partition.
	packets := slices.Clone(tr.ByFlow)
	lookups := func(through []*groupMember) {
		t.Helper()
		for f := range flows {
			q, key := flowQuery(f)
			owner := own[int32(partition.Hash(key)%rawPartitions)]
			dkey := fmt.Sprintf("0x%02x%02x%02x%02x", key[0], key[1], key[2], key[3])
			kiOwner := own[int32(partition.Hash(key[:4])%rawPartitions)]
			for _, m := range through {
				code, h, b := call(t, m.api, "/api/v1/flowcache/flow?"+q)
				var rec struct {
					Packets uint64 `json:"packets"`
				}
				json.Unmarshal(b, &rec)
				if code != 200 || rec.Packets != packets[f] || h.Get(cluster.HeaderMember) != owner {
					t.Errorf("flowcache flow %d through %s: %d %s (member %s), want %d packets from %s", f, m.name, code, b, h.Get(cluster.HeaderMember), packets[f], owner)
				}
				code, h, b = call(t, m.api, "/api/v1/flow?"+q)
				var st struct {
					Reports uint64 `json:"reports"`
				}
				json.Unmarshal(b, &st)
				if code != 200 || st.Reports != packets[f] || h.Get(cluster.HeaderMember) != owner {
					t.Errorf("detect flow %d through %s: %d %s (member %s), want %d reports from %s", f, m.name, code, b, h.Get(cluster.HeaderMember), packets[f], owner)
				}
				code, h, b = call(t, m.api, "/api/v1/dta/ki/"+dkey)
				var c struct {
					Count uint64 `json:"count"`
				}
				json.Unmarshal(b, &c)
				if code != 200 || c.Count != ki.ByFlow[f] || h.Get(cluster.HeaderMember) != kiOwner {
					t.Errorf("dta ki %s through %s: %d %s (member %s), want %d from %s", dkey, m.name, code, b, h.Get(cluster.HeaderMember), ki.ByFlow[f], kiOwner)
				}
			}
		}
	}
	lookups([]*groupMember{p1, p2, in})

	// An aggregate through the inlet, which holds nothing: the union of the processors'.
	var top struct {
		Flows   []map[string]any `json:"flows"`
		Partial bool             `json:"partial"`
	}
	collectortest.GetJSON(t, "http://"+in.api+"/api/v1/flowcache/top?n=1000", &top)
	if len(top.Flows) != flows || top.Partial {
		t.Errorf("top through the inlet: %d flows (partial %v), want %d", len(top.Flows), top.Partial, flows)
	}

	// A third processor: the cooperative-sticky balancer moves a third of the partitions to
	// it and leaves the rest where they are.
	p3 := startGroupMember(t, "processor", "p3", k.Brokers, "")
	procs = append(procs, p3)
	after := settled(t, procs, []*groupMember{p1, p2, p3, in})
	moved := 0
	for p, m := range after {
		if own[p] != m {
			moved++
		}
	}
	if moved != rawPartitions/3 {
		t.Errorf("adding a third processor moved %d of %d partitions, want %d: %v -> %v", moved, rawPartitions, rawPartitions/3, own, after)
	}
	// The moved partitions' state went with them: every flow's count and every DTA key's
	// is exact on its new owner, through every member.
	own = after
	lookups([]*groupMember{p1, p2, p3, in})

	// SIGKILL p2 in the middle of a stream: its partitions are served again by the others,
	// from its last snapshot.
	var killed time.Time
	kill := time.AfterFunc(time.Second, func() {
		p2.cmd.Process.Signal(syscall.SIGKILL)
		killed = time.Now()
	})
	tr2 := runCollectorsGen(t, []string{in.report}, "--format", "tr2.0", "--flows", fmt.Sprint(flows), "--count", "3000", "--rate", "1500", "--latency", "const:1000")[0]
	kill.Stop()
	p2.cmd.Wait()
	if killed.IsZero() {
		t.Fatal("p2 was not killed during the stream")
	}
	live := []*groupMember{p1, p3}
	testutil.Eventually(t, 30*time.Second, "p1 and p3 to hold every partition", func() bool {
		return len(owners(t, live)) == rawPartitions
	})
	t.Logf("partitions served again %.1f s after SIGKILL", time.Since(killed).Seconds())
	own = settled(t, live, []*groupMember{p1, p3, in})
	total := want + tr2.Reports
	testutil.Eventually(t, 20*time.Second, "the inlet to produce every report and the group to catch up", func() bool {
		gs := groupStatus(t, p1)
		return groupStatus(t, in).Inlet.Produced == total && gs.Processor.Lag == 0
	})
	// Zero lost, none counted twice: p2's partitions carry on from its last snapshot, and
	// every flow's count is exact on its owner, through every member and the inlet.
	for f := range flows {
		packets[f] += tr2.ByFlow[f]
	}
	lookups([]*groupMember{p1, p3, in})
	var replayed uint64
	for _, p := range live {
		replayed += groupStatus(t, p).Processor.Replayed
	}
	t.Logf("produced %d; after the kill p1 and p3 replayed %d records p2 had processed", total, replayed)
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// BenchmarkGroupLookup is a flow lookup through a processor that does not own the flow (one
// forwarding hop, found by the group's assignment), against two processors on a 3-broker
// kfake: p50-ms and p99-ms over b.N lookups.
func BenchmarkGroupLookup(b *testing.B) {
	k := kfaketest.StartTopics(b, 3, rawPartitions, "intake.raw", "intake.state")
	p1 := startGroupMember(b, "processor", "p1", k.Brokers, "")
	p2 := startGroupMember(b, "processor", "p2", k.Brokers, "")
	in := startGroupMember(b, "inlet", "i1", k.Brokers, "")
	own := settled(b, []*groupMember{p1, p2}, []*groupMember{p1, p2})
	const flows = 48
	runCollectorsGen(b, []string{in.report}, "--format", "tr2.0", "--flows", fmt.Sprint(flows), "--count", "480", "--rate", "40000")
	var qs []string // flows p2 owns, asked through p1
	for f := range flows {
		q, key := flowQuery(f)
		if own[int32(partition.Hash(key)%rawPartitions)] == "p2" {
			qs = append(qs, q)
		}
	}
	testutil.Eventually(b, 10*time.Second, "p2 to have its flows", func() bool {
		code, _, _ := call(b, p1.api, "/api/v1/flowcache/flow?"+qs[0])
		return code == 200
	})
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		code, h, _ := call(b, p1.api, "/api/v1/flowcache/flow?"+qs[i%len(qs)])
		lat[i] = time.Since(t0)
		if code != 200 || h.Get(cluster.HeaderMember) != "p2" {
			b.Fatalf("lookup through p1: %d from %q", code, h.Get(cluster.HeaderMember))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
