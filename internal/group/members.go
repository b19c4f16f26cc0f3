package group

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/partition"
)

// HashName says how a key maps to a processor (GET /api/v1/cluster/status).
const HashName = "crc32c mod partitions, partition to member by the consumer group"

// refreshEvery is how often Members asks the brokers for the group's assignment: a query
// can be routed by an assignment this old.
const refreshEvery = 500 * time.Millisecond

// Members is the consumer group as the cluster package's router sees it (a
// cluster.Membership): the processors, the API addresses they advertise, and which owns
// each partition, as the group coordinator describes them, refreshed every refreshEvery.
type Members struct {
	cfg  Config
	deps Deps
	self string // this collector's name when it is a processor, else ""

	cl     *kgo.Client
	adm    *kadm.Client
	cancel context.CancelFunc
	done   chan struct{}

	view atomic.Pointer[cluster.View]
	mu   sync.Mutex
	err  error     // the last refresh's
	last Described // the last description
}

// Described is the group as its coordinator last described it.
type Described struct {
	// State is the group's state ("Stable", "PreparingRebalance", "CompletingRebalance",
	// "Empty", "Dead"; "" before the first answer).
	State string `json:"state"`
	// Members are the processors, by name, with their partitions of the raw topic.
	Members []Member `json:"members"`
}

// Member is one processor of the group.
type Member struct {
	Name       string  `json:"name"`
	API        string  `json:"api"`
	Partitions []int32 `json:"partitions"`
}

// NewMembers builds the group's membership view for a collector of cfg's role.
func NewMembers(cfg Config, deps Deps) *Members {
	deps.fill()
	m := &Members{cfg: cfg, deps: deps}
	if cfg.Role == RoleProcessor {
		m.self = cfg.Name
	}
	m.view.Store(m.empty())
	return m
}

// Name labels the component ("group-members").
func (m *Members) Name() string { return "group-members" }

// Start connects and keeps the view fresh until Stop.
func (m *Members) Start(ctx context.Context) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(m.cfg.brokers(&m.deps)...),
		kgo.ClientID(clientID(m.cfg.Name, "view"))}, m.deps.Auth...)...)
	if err != nil {
		return err
	}
	m.cl, m.adm = cl, kadm.NewClient(cl)
	rctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.done = cancel, make(chan struct{})
	go func() {
		defer close(m.done)
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			m.refresh(rctx)
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the refreshes.
func (m *Members) Stop(context.Context) error {
	if m.cl == nil {
		return nil
	}
	m.cancel()
	<-m.done
	m.cl.Close()
	m.cl = nil
	return nil
}

// View returns the latest view (cluster.Membership).
func (m *Members) View() *cluster.View { return m.view.Load() }

// Described returns the group as last described, and the last refresh's error (nil when
// it succeeded).
func (m *Members) Described() (Described, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last, m.err
}

func (m *Members) empty() *cluster.View {
	v := &cluster.View{Self: -1, Hash: HashName}
	v.Owner = func([]byte) (int, string) {
		return -1, fmt.Sprintf("no processor is in group %q yet", m.cfg.GroupID)
	}
	return v
}

// refresh asks the group coordinator for the members and their partitions.
func (m *Members) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	v, d, err := m.describe(ctx)
	m.mu.Lock()
	m.err = err
	if err == nil {
		m.last = d
	}
	m.mu.Unlock()
	// While the group rebalances its coordinator describes no assignment; the members
	// keep serving what they had (the cooperative protocol moves only what it must), so
	// queries keep the last stable view.
	if err == nil && (d.State == "Stable" || d.State == "Empty" || d.State == "Dead") {
		m.view.Store(v)
	}
}

func (m *Members) describe(ctx context.Context) (*cluster.View, Described, error) {
	parts, err := topicPartitions(ctx, m.cl, m.cfg.Topic)
	if err != nil {
		return nil, Described{}, err
	}
	gs, err := m.adm.DescribeGroups(ctx, m.cfg.GroupID)
	if err != nil {
		return nil, Described{}, err
	}
	g, ok := gs[m.cfg.GroupID]
	if !ok {
		return m.empty(), Described{State: "Empty", Members: []Member{}}, nil
	}
	if g.Err != nil {
		return nil, Described{}, fmt.Errorf("group %q: %w", m.cfg.GroupID, g.Err)
	}
	d := Described{State: g.State, Members: []Member{}}
	type member struct {
		name, api string
		parts     []int32
	}
	var ms []member
	for _, d := range g.Members {
		name, api, ok := parseClientID(d.ClientID)
		if !ok {
			continue
		}
		mb := member{name: name, api: api}
		if a, ok := d.Assigned.AsConsumer(); ok {
			for _, t := range a.Topics {
				if t.Topic == m.cfg.Topic {
					mb.parts = append(mb.parts, t.Partitions...)
				}
			}
		}
		ms = append(ms, mb)
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	v := &cluster.View{Self: -1, Hash: HashName}
	owner := make([]int, parts)
	for i := range owner {
		owner[i] = -1
	}
	for _, mb := range ms {
		base, err := cluster.BaseURL(mb.api)
		if err != nil {
			continue // not reachable: its partitions answer 503 until it is
		}
		i := len(v.Names)
		slices.Sort(mb.parts)
		d.Members = append(d.Members, Member{Name: mb.name, API: mb.api, Partitions: append([]int32{}, mb.parts...)})
		v.Names, v.APIs, v.Bases = append(v.Names, mb.name), append(v.APIs, mb.api), append(v.Bases, base)
		v.Reports = append(v.Reports, []string{})
		if mb.name == m.self {
			v.Self = i
		}
		for _, p := range mb.parts {
			if p >= 0 && p < parts {
				owner[p] = i
			}
		}
	}
	topic, state := m.cfg.Topic, g.State
	v.Owner = func(key []byte) (int, string) {
		p := partition.Hash(key) % uint32(len(owner))
		if o := owner[p]; o >= 0 {
			return o, ""
		}
		return -1, fmt.Sprintf("partition %d of %s has no processor now (group %s)", p, topic, state)
	}
	return v, d, nil
}
