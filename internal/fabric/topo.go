package fabric

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Kind is what a node is.
type Kind uint8

const (
	Host Kind = iota
	Switch
)

// Node is a host or a switch. Ports are numbered from 1 in the order the node's links were
// added; Links[p-1] is the link on port p.
type Node struct {
	Name  string `json:"name"`
	Kind  Kind   `json:"-"`
	ID    uint8  `json:"switch_id,omitempty"` // switches: the INT switch id (1-255)
	Host  int    `json:"-"`                   // hosts: index among hosts
	Links []int  `json:"-"`
}

// LinkParams are a link's properties. Delay is drawn per packet from N(DelayMean,
// DelayStd²), clamped at 0, and added to the transmission time Size·8/Bandwidth.
type LinkParams struct {
	Bandwidth float64       `json:"bandwidth_bps"` // bits per second
	DelayMean time.Duration `json:"delay_mean_ns"`
	DelayStd  time.Duration `json:"delay_std_ns"`
	Loss      float64       `json:"loss"`  // probability a packet is lost on the link
	Queue     int           `json:"queue"` // egress queue capacity in packets (drop-tail)
}

// DefaultLink is a 100 Mb/s link with 100 µs ± 20 µs delay, no loss and 64-packet queues.
var DefaultLink = LinkParams{Bandwidth: 100e6, DelayMean: 100 * time.Microsecond, DelayStd: 20 * time.Microsecond, Queue: 64}

// Link joins port APort of node A and port BPort of node B (full duplex: one egress queue
// at each end).
type Link struct {
	A, B         int
	APort, BPort uint8
	LinkParams
}

// Topology is a set of nodes and links.
type Topology struct {
	Name  string
	Nodes []Node
	Links []Link
	Hosts []int // node index of each host
}

func (t *Topology) add(name string, k Kind) int {
	n := Node{Name: name, Kind: k}
	if k == Host {
		n.Host = len(t.Hosts)
		t.Hosts = append(t.Hosts, len(t.Nodes))
	} else {
		ns := 0
		for _, m := range t.Nodes {
			if m.Kind == Switch {
				ns++
			}
		}
		n.ID = uint8(ns + 1)
	}
	t.Nodes = append(t.Nodes, n)
	return len(t.Nodes) - 1
}

func (t *Topology) connect(a, b int, lp LinkParams) {
	l := Link{A: a, B: b, LinkParams: lp}
	t.Nodes[a].Links = append(t.Nodes[a].Links, len(t.Links))
	t.Nodes[b].Links = append(t.Nodes[b].Links, len(t.Links))
	l.APort, l.BPort = uint8(len(t.Nodes[a].Links)), uint8(len(t.Nodes[b].Links))
	t.Links = append(t.Links, l)
}

// Switches returns the number of switches.
func (t *Topology) Switches() int { return len(t.Nodes) - len(t.Hosts) }

// Find returns the node named name.
func (t *Topology) Find(name string) (int, bool) {
	for i, n := range t.Nodes {
		if n.Name == name {
			return i, true
		}
	}
	return 0, false
}

// FatTree builds a k-ary fat tree (Al-Fares et al.; INT-label §4.3): k pods of k/2 edge and
// k/2 aggregation switches, (k/2)² core switches, k/2 hosts per edge switch. Switch ids are
// 8 bits, so k is at most 14.
func FatTree(k int, lp LinkParams) (*Topology, error) {
	if k < 2 || k%2 != 0 || k > 14 {
		return nil, fmt.Errorf("fat tree k=%d: must be even, between 2 and 14 (8-bit switch ids)", k)
	}
	h := k / 2
	t := &Topology{Name: fmt.Sprintf("fattree:%d", k)}
	edge := make([][]int, k)
	agg := make([][]int, k)
	for p := range k {
		for e := range h {
			edge[p] = append(edge[p], t.add(fmt.Sprintf("e%d_%d", p+1, e+1), Switch))
		}
		for a := range h {
			agg[p] = append(agg[p], t.add(fmt.Sprintf("a%d_%d", p+1, a+1), Switch))
		}
	}
	core := make([]int, h*h)
	for c := range core {
		core[c] = t.add(fmt.Sprintf("c%d", c+1), Switch)
	}
	for p := range k {
		for e := range h {
			for x := range h {
				hn := t.add(fmt.Sprintf("h%d", p*h*h+e*h+x+1), Host)
				t.connect(hn, edge[p][e], lp)
			}
		}
	}
	for p := range k {
		for e := range h {
			for a := range h {
				t.connect(edge[p][e], agg[p][a], lp)
			}
		}
		for a := range h {
			for c := range h {
				t.connect(agg[p][a], core[a*h+c], lp)
			}
		}
	}
	return t, nil
}

// Testbed builds the paper's testbed (INT-label §6.1, HULA's topology): 8 servers, 4 ToR,
// 4 leaf and 4 spine switches in two pods; each ToR has 2 servers and both leaves of its
// pod; leaf j of a pod connects spines 2j−1 and 2j.
func Testbed(lp LinkParams) *Topology {
	t := &Topology{Name: "testbed"}
	var tor, leaf, spine [4]int
	for i := range 4 {
		tor[i] = t.add(fmt.Sprintf("tor%d", i+1), Switch)
	}
	for i := range 4 {
		leaf[i] = t.add(fmt.Sprintf("leaf%d", i+1), Switch)
	}
	for i := range 4 {
		spine[i] = t.add(fmt.Sprintf("spine%d", i+1), Switch)
	}
	for i := range 8 {
		h := t.add(fmt.Sprintf("server%d", i+1), Host)
		t.connect(h, tor[i/2], lp)
	}
	for p := range 2 {
		for j := range 2 {
			for l := range 2 {
				t.connect(tor[2*p+j], leaf[2*p+l], lp)
			}
		}
		for j := range 2 {
			t.connect(leaf[2*p+j], spine[2*j], lp)
			t.connect(leaf[2*p+j], spine[2*j+1], lp)
		}
	}
	return t
}

// ParseTopology reads a topology file (docs/fabric.md): one statement per line, # comments.
//
//	switch NAME [id=N]
//	host NAME
//	link NAME NAME [bw=100M] [delay=100us] [jitter=20us] [loss=0.01] [queue=64]
//
// Link properties not given are lp's.
func ParseTopology(r io.Reader, lp LinkParams) (*Topology, error) {
	t := &Topology{Name: "file"}
	sc := bufio.NewScanner(r)
	line := 0
	ids := map[uint8]bool{}
	for sc.Scan() {
		line++
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("topology line %d: %s", line, fmt.Sprintf(format, a...))
		}
		switch f[0] {
		case "switch", "host":
			if len(f) < 2 {
				return nil, bad("%s: a name is required", f[0])
			}
			if _, dup := t.Find(f[1]); dup {
				return nil, bad("%q: defined twice", f[1])
			}
			if f[0] == "host" {
				if len(f) > 2 {
					return nil, bad("host %s: unexpected %q", f[1], f[2])
				}
				t.add(f[1], Host)
				continue
			}
			n := t.add(f[1], Switch)
			for _, kv := range f[2:] {
				v, ok := strings.CutPrefix(kv, "id=")
				id, err := strconv.Atoi(v)
				if !ok || err != nil || id < 1 || id > 255 {
					return nil, bad("switch %s: %q: want id=N with N in [1, 255]", f[1], kv)
				}
				t.Nodes[n].ID = uint8(id)
			}
			if ids[t.Nodes[n].ID] {
				return nil, bad("switch %s: id %d used twice", f[1], t.Nodes[n].ID)
			}
			ids[t.Nodes[n].ID] = true
		case "link":
			if len(f) < 3 {
				return nil, bad("link: two node names are required")
			}
			a, ok1 := t.Find(f[1])
			b, ok2 := t.Find(f[2])
			if !ok1 || !ok2 || a == b {
				return nil, bad("link %s %s: both nodes must be defined earlier and differ", f[1], f[2])
			}
			p := lp
			for _, kv := range f[3:] {
				k, v, _ := strings.Cut(kv, "=")
				var err error
				switch k {
				case "bw":
					p.Bandwidth, err = parseRate(v)
				case "delay":
					p.DelayMean, err = time.ParseDuration(v)
				case "jitter":
					p.DelayStd, err = time.ParseDuration(v)
				case "loss":
					p.Loss, err = strconv.ParseFloat(v, 64)
					if err == nil && (p.Loss < 0 || p.Loss > 1) {
						err = fmt.Errorf("must be in [0, 1]")
					}
				case "queue":
					p.Queue, err = strconv.Atoi(v)
					if err == nil && p.Queue < 1 {
						err = fmt.Errorf("must be at least 1")
					}
				default:
					err = fmt.Errorf("unknown property (allowed: bw, delay, jitter, loss, queue)")
				}
				if err != nil {
					return nil, bad("link %s %s: %s: %v", f[1], f[2], kv, err)
				}
			}
			if t.Nodes[a].Kind == Host && len(t.Nodes[a].Links) > 0 || t.Nodes[b].Kind == Host && len(t.Nodes[b].Links) > 0 {
				return nil, bad("link %s %s: a host has exactly one link", f[1], f[2])
			}
			if len(t.Nodes[a].Links) >= 255 || len(t.Nodes[b].Links) >= 255 {
				return nil, bad("link %s %s: at most 255 ports per node", f[1], f[2])
			}
			t.connect(a, b, p)
		default:
			return nil, bad("%q: want switch, host or link", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t.Hosts) < 2 {
		return nil, fmt.Errorf("topology: at least two hosts are needed")
	}
	for _, h := range t.Hosts {
		if len(t.Nodes[h].Links) != 1 {
			return nil, fmt.Errorf("topology: host %s has no link", t.Nodes[h].Name)
		}
	}
	return t, nil
}

// parseRate reads "100M", "1G", "10k" or a plain number of bits per second.
func parseRate(s string) (float64, error) {
	mul := 1.0
	switch {
	case strings.HasSuffix(s, "G"):
		mul, s = 1e9, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1e6, s[:len(s)-1]
	case strings.HasSuffix(s, "k"):
		mul, s = 1e3, s[:len(s)-1]
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("want a positive rate like 100M")
	}
	return v * mul, nil
}
