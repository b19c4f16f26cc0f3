package collector

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/config"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/group"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/telemetry"
)

// The consumer group's roles (docs/scale-out.md, "Inlets and processors"): an inlet runs the
// receive path with one processor, the group.Inlet, which produces every report to the raw
// topic; a processor runs the processors on the reports of its partitions, which the
// group.Processor hands to an ingest feed. Both route queries by the group's assignment.

// inletOnly turns the processors off in cfg: an inlet only produces what it decodes.
func inletOnly(cfg *config.Config) {
	cfg.Detect.Enabled, cfg.FlowCache.Enabled, cfg.DTA.Enabled, cfg.Label.Enabled = false, false, false, false
	cfg.Detect.Kernel, cfg.FlowCache.Kernel, cfg.DTA.Kernel = false, false, false
}

// groupDeps are what both roles and the membership view connect with.
func (c *Collector) groupDeps(workers int) (group.Deps, error) {
	k := &c.Config.Export.Kafka
	auth, err := k.AuthOpts()
	if err != nil {
		return group.Deps{}, fmt.Errorf("group: export.kafka's TLS and SASL: %w", err)
	}
	return group.Deps{Brokers: k.Brokers, Auth: auth, Workers: workers, Metrics: c.Metrics,
		Logger: c.log.With("component", "group")}, nil
}

// buildInlet makes the group.Inlet the receive path's processor.
func (c *Collector) buildInlet(workers int, procs *[]ingest.Processor) error {
	gd, err := c.groupDeps(workers)
	if err != nil {
		return err
	}
	c.Inlet = group.NewInlet(c.Config.Group, gd)
	c.comps = append(c.comps, c.Inlet)
	*procs = append(*procs, c.Inlet)
	return nil
}

// buildGroupProcessor makes the group.Processor the source of the receive path's feed.
func (c *Collector) buildGroupProcessor() error {
	gd, err := c.groupDeps(c.Receiver.Workers())
	if err != nil {
		return err
	}
	if c.FlowCache != nil {
		gd.States = append(gd.States, group.State{Name: "flowcache", FlowState: c.FlowCache})
	}
	if c.Detector != nil {
		gd.States = append(gd.States, group.State{Name: "detect", FlowState: detectFlows{c.Detector}})
	}
	feeds := group.Feeds{All: c.Receiver.Feed(group.FeedName)}
	if c.Translator != nil {
		feeds.DTA, feeds.Rest = c.Receiver.Feed(group.FeedDTA), c.Receiver.Feed(group.FeedRest)
	}
	c.GroupProcessor = group.NewProcessor(c.Config.Group, gd, feeds)
	c.sources = append(c.sources, c.GroupProcessor)
	return nil
}

// detectFlows is the detector's flows as a group.FlowState.
type detectFlows struct{ d *detect.Detector }

func (x detectFlows) ImageSize() int         { return x.d.FlowImageSize() }
func (x detectFlows) Adopt(img []byte) error { return x.d.AdoptFlow(img) }
func (x detectFlows) Snapshot(take func(*telemetry.FlowKey) bool, remove bool, emit func(*telemetry.FlowKey, []byte)) int {
	return x.d.SnapshotFlows(take, remove, emit)
}

// groupFeedProcessors are a processor's feeds' processors (group.Feeds): the translator
// alone, and all but it. Nil outside the processor role or without a translator.
func (c *Collector) groupFeedProcessors(procs []ingest.Processor) map[string][]ingest.Processor {
	if c.Config.Group.Role != group.RoleProcessor || c.Translator == nil {
		return nil
	}
	var rest []ingest.Processor
	for _, p := range procs {
		if p != ingest.Processor(c.Translator) {
			rest = append(rest, p)
		}
	}
	return map[string][]ingest.Processor{group.FeedDTA: {c.Translator}, group.FeedRest: rest}
}

// dtaReset empties a processor's DTA stores before the translator opens them: a processor
// builds its stores from the raw topic, and what it tracks of them (which partitions'
// records they hold) starts empty with it.
type dtaReset struct {
	dir string
	log *slog.Logger
}

func (dtaReset) Name() string { return "dta-reset" }

func (r dtaReset) Start(context.Context) error {
	removed, err := dta.ResetStores(r.dir)
	if err != nil {
		return fmt.Errorf("emptying the DTA stores of a processor (dta.data_dir %s): %w", r.dir, err)
	}
	if len(removed) > 0 {
		r.log.Info("processor: DTA stores emptied, to be built from the raw topic", "data_dir", r.dir, "files", len(removed))
	}
	return nil
}

func (dtaReset) Stop(context.Context) error { return nil }

// buildGroupRouter routes the API's queries by the group's assignment.
func (c *Collector) buildGroupRouter() error {
	gd, err := c.groupDeps(1)
	if err != nil {
		return err
	}
	c.groupMembers = group.NewMembers(c.Config.Group, gd)
	c.comps = append(c.comps, c.groupMembers)
	keyLen := c.Config.Decoder.DTA.KeyLen
	rt := cluster.NewMembershipRouter(c.groupMembers, c.Config.Group.Timeout, cluster.Deps{
		DTAKey:      func(s string) ([]byte, error) { return dta.ParseKey(s, keyLen) },
		EventsLimit: detect.EventsLimit,
		Logger:      c.log.With("component", "group"),
	})
	c.API.Route(rt.Wrap)
	return nil
}

// advertise is the API address a processor gives the group: group.advertise, else
// http.address when it names a host the others can reach.
func advertise(cfg *config.Config) (string, error) {
	if cfg.Group.Advertise != "" {
		return cfg.Group.Advertise, nil
	}
	host, _, err := net.SplitHostPort(cfg.HTTP.Address)
	if ip := net.ParseIP(host); err != nil || host == "" || ip != nil && ip.IsUnspecified() {
		return "", fmt.Errorf("group.advertise: \"\": http.address %q names no host the other members can reach: set group.advertise", cfg.HTTP.Address)
	}
	return cfg.HTTP.Address, nil
}

// GroupStatus is the group's part of GET /api/v1/status ("group").
type GroupStatus struct {
	Role      string                 `json:"role"`
	Inlet     *group.InletStatus     `json:"inlet,omitempty"`
	Processor *group.ProcessorStatus `json:"processor,omitempty"`
	// Group is the group as its coordinator last described it: its state, and the
	// processors with their API addresses and partitions.
	Group group.Described `json:"group"`
	// ViewError is why the group could not be described (empty when it could).
	ViewError string `json:"view_error,omitempty"`
}

// groupStatus is the group's status, nil outside a group.
func (c *Collector) groupStatus(ctx context.Context) *GroupStatus {
	if !c.Config.Group.Enabled() {
		return nil
	}
	st := &GroupStatus{Role: c.Config.Group.Role, Group: group.Described{Members: []group.Member{}}}
	if c.Inlet != nil {
		s := c.Inlet.Status()
		st.Inlet = &s
	}
	if c.GroupProcessor != nil {
		// The lag is the brokers' answer: a status must not wait long for brokers that are down.
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s := c.GroupProcessor.Status(ctx)
		st.Processor = &s
	}
	if m := c.groupMembers; m != nil {
		d, err := m.Described()
		if d.Members != nil {
			st.Group = d
		}
		if err != nil {
			st.ViewError = err.Error()
		}
	}
	return st
}
