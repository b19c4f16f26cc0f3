package group

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/telemetry"
)

// The ingest feeds a processor hands its reports to (the listener status and metrics show
// them under these names): FeedName's processors are all of them; FeedDTA's only the DTA
// translator, FeedRest's all but it, for the records one side's state already holds (see
// Feeds).
const (
	FeedName = "group"
	FeedDTA  = "group-dta"
	FeedRest = "group-rest"
)

// Feeds are a processor's feeds. A record of a partition goes to the processors whose
// state does not hold it yet: the flow cache and the detector hold what the partition's
// snapshot holds (the records before its offset), the DTA translator what this processor
// translated of the partition before (its stores are its own and stay when a partition
// leaves). DTA and Rest are nil without a translator.
type Feeds struct {
	All, DTA, Rest *ingest.Feed
}

// list is the feeds there are.
func (f Feeds) list() []*ingest.Feed {
	if f.DTA == nil {
		return []*ingest.Feed{f.All}
	}
	return []*ingest.Feed{f.All, f.DTA, f.Rest}
}

// pollRecords bounds the records one poll hands over: with rebalances blocked while a
// poll's records are processed, it bounds how long a rebalance waits for this member.
const pollRecords = 4096

// Processor is the processor role: a member of the consumer group on the raw topic that
// hands the reports of its partitions to the processors through an ingest feed. It commits
// the offsets it has processed every commit_interval and, before a partition is taken from
// it, in the group's revoke callback: rebalances are blocked while a poll's records are
// processed (kgo.BlockRebalanceOnPoll), so what it commits is what the processors have seen.
// Its state follows its partitions (state.go): a partition's next owner adopts its latest
// snapshot and fetches it from the snapshot's offset, so a processor killed without a
// revoke costs its successor a replay, not a loss; events of replayed reports are sent
// again (at least once; docs/scale-out.md).
type Processor struct {
	cfg   Config
	deps  Deps
	feeds Feeds

	cl     *kgo.Client
	adm    *kadm.Client
	cancel context.CancelFunc
	done   chan struct{}

	// parts and stateParts are the raw and the state topic's partition counts (Start).
	parts, stateParts int32

	mu    sync.Mutex
	owned map[int32]*partState // the partitions assigned now
	// translated maps a partition this processor gave up to the offset up to which its
	// DTA translator processed it: its stores hold that much should the partition return.
	translated map[int32]int64

	records, bad, replayed, commits, commitErrors, rebalances atomic.Uint64
	snapshots, snapshotErrors, adopted                        atomic.Uint64
	lastErr                                                   atomic.Pointer[string]
}

// partState is what a processor has done with one partition since it was assigned.
type partState struct {
	assigned  time.Time
	committed int64 // the group's committed offset at the assignment: records before it are replays
	from      int64 // the first offset processed, -1 before any
	next      int64 // the offset after the last processed (at first, where fetching starts)
	flowsAt   int64 // the records before it are in the adopted snapshot: not for the flow cache or the detector
	dtaAt     int64 // the records before it are in the translator's stores already
	records   uint64
	stateFrom string // PartitionStatus.StateFrom
}

// NewProcessor builds the processor of cfg (validated, role processor), feeding feed.
func NewProcessor(cfg Config, deps Deps, feeds Feeds) *Processor {
	deps.fill()
	p := &Processor{cfg: cfg, deps: deps, feeds: feeds, owned: map[int32]*partState{}, translated: map[int32]int64{}}
	if reg := deps.Metrics; reg != nil {
		rec := reg.Counter("intake_group_records_total", "Records the processor consumed from the raw topic, by outcome (processed, bad: did not decode).", "outcome")
		rec.Func(func() float64 { return float64(p.records.Load()) }, "processed")
		rec.Func(func() float64 { return float64(p.bad.Load()) }, "bad")
		reg.Counter("intake_group_rebalances_total", "Assignments and revocations this processor took part in.").
			Func(func() float64 { return float64(p.rebalances.Load()) })
		com := reg.Counter("intake_group_commits_total", "Offset commits, by outcome.", "outcome")
		com.Func(func() float64 { return float64(p.commits.Load()) }, "ok")
		com.Func(func() float64 { return float64(p.commitErrors.Load()) }, "error")
		reg.Gauge("intake_group_partitions", "Partitions of the raw topic assigned to this processor.").
			Func(func() float64 { p.mu.Lock(); defer p.mu.Unlock(); return float64(len(p.owned)) })
		reg.Counter("intake_group_replayed_records_total", "Records processed again after a processor's end (before the group's committed offset when the partition was assigned).").
			Func(func() float64 { return float64(p.replayed.Load()) })
		snap := reg.Counter("intake_group_snapshots_total", "Partition snapshots written to the state topic, by outcome.", "outcome")
		snap.Func(func() float64 { return float64(p.snapshots.Load()) }, "ok")
		snap.Func(func() float64 { return float64(p.snapshotErrors.Load()) }, "error")
	}
	return p
}

// Name labels the processor's counters ("group").
func (p *Processor) Name() string { return "group" }

// Start joins the group and starts consuming. The raw topic must exist.
func (p *Processor) Start(ctx context.Context) error {
	if p.cfg.Advertise == "" {
		return errors.New("group.advertise: \"\": a processor needs the API address other members reach it at (http.address, or group.advertise)")
	}
	// The topics first, with a client outside the group: the group's callbacks need them.
	probe, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.cfg.brokers(&p.deps)...)}, p.deps.Auth...)...)
	if err != nil {
		return err
	}
	p.parts, err = topicPartitions(ctx, probe, p.cfg.Topic)
	if err == nil && p.cfg.StateTopic != "" {
		p.stateParts, err = topicPartitions(ctx, probe, p.cfg.StateTopic)
		if err != nil {
			err = fmt.Errorf("group.state_topic: %w (a compacted topic; or set group.state_topic: \"\" for no snapshots)", err)
		}
	}
	probe.Close()
	if err != nil {
		return err
	}
	hb := max(p.cfg.SessionTimeout/6, 100*time.Millisecond)
	opts := append([]kgo.Opt{kgo.SeedBrokers(p.cfg.brokers(&p.deps)...),
		kgo.ClientID(clientID(p.cfg.Name, p.cfg.Advertise)),
		kgo.ConsumerGroup(p.cfg.GroupID), kgo.ConsumeTopics(p.cfg.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(p.cfg.SessionTimeout), kgo.HeartbeatInterval(hb),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), // the snapshots' partitions are chosen
		kgo.OnPartitionsAssigned(p.assigned), kgo.AdjustFetchOffsetsFn(p.adjust),
		kgo.OnPartitionsRevoked(p.revoked), kgo.OnPartitionsLost(p.lost),
	}, p.deps.Auth...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	p.cl, p.adm = cl, kadm.NewClient(cl)
	for _, f := range p.feeds.list() {
		f.SetSource("kafka:" + p.cfg.Topic)
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(rctx)
	p.deps.Logger.Info("processor: joined the consumer group", "group", p.cfg.GroupID, "topic", p.cfg.Topic,
		"member", p.cfg.Name, "advertise", p.cfg.Advertise)
	return nil
}

// Stop stops consuming, commits what was processed and leaves the group, so that the
// others take its partitions at once (not after the session timeout).
func (p *Processor) Stop(ctx context.Context) error {
	if p.cl == nil {
		return nil
	}
	p.cancel()
	<-p.done
	err := p.commit(ctx)
	p.cl.CloseAllowingRebalance()
	p.cl = nil
	return err
}

// run is the poll loop: decode each record into the feed's slot and hand it over, end the
// batch, commit when commit_interval has passed, allow the group to rebalance.
func (p *Processor) run(ctx context.Context) {
	defer close(p.done)
	last, lastSnap := time.Now(), time.Now()
	// A poll waits at most wake, so that an idle processor still commits and snapshots.
	wake := min(p.cfg.CommitInterval, p.cfg.SnapshotInterval)
	for {
		pctx, cancel := context.WithTimeout(ctx, wake)
		fs := p.cl.PollRecords(pctx, pollRecords)
		cancel()
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, part int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				p.setErr(fmt.Errorf("fetching %s/%d: %w", t, part, err))
			}
		})
		if fs.NumRecords() > 0 {
			var handed, replayed, bad uint64
			p.mu.Lock()
			fs.EachPartition(func(fp kgo.FetchTopicPartition) {
				ps := p.owned[fp.Partition]
				if ps == nil { // not ours since the poll: cannot be, rebalances wait for AllowRebalance
					return
				}
				for _, r := range fp.Records {
					f := p.feedFor(ps, r.Offset)
					ps.next = r.Offset + 1
					if f == nil {
						continue
					}
					if ps.from < 0 {
						ps.from = r.Offset
					}
					var n uint64
					err := eachEntry(r.Value, func(_, rep []byte) error {
						if err := unmarshalReport(f.Slot(), rep); err != nil {
							f.Bad(len(rep))
							bad++
							return nil
						}
						f.Hand(len(rep))
						n++
						return nil
					})
					if err != nil { // the rest of the frame: one bad datagram
						f.Bad(len(r.Value))
						bad++
						p.setErr(fmt.Errorf("%s/%d at %d: %w", p.cfg.Topic, fp.Partition, r.Offset, err))
					}
					handed += n
					ps.records += n
					if r.Offset < ps.committed {
						replayed += n
					}
				}
			})
			p.mu.Unlock()
			for _, f := range p.feeds.list() {
				f.EndBatch()
			}
			// Counted once the processors have every report of the poll.
			p.records.Add(handed)
			p.bad.Add(bad)
			p.replayed.Add(replayed)
		}
		if p.cfg.StateTopic != "" && time.Since(lastSnap) >= p.cfg.SnapshotInterval {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.SessionTimeout)
			if err := p.writeSnapshots(cctx, p.nextOffsets(every), false); err != nil {
				p.setErr(err)
			}
			cancel()
			lastSnap = time.Now()
		}
		if time.Since(last) >= p.cfg.CommitInterval {
			cctx, cancel := context.WithTimeout(ctx, p.cfg.SessionTimeout)
			p.commit(cctx)
			cancel()
			last = time.Now()
		}
		p.cl.AllowRebalance()
	}
}

// feedFor is the feed of a record of partition ps at offset off: the processors whose state
// does not hold it yet; nil when all of them do.
func (p *Processor) feedFor(ps *partState, off int64) *ingest.Feed {
	flows, dta := off >= ps.flowsAt, off >= ps.dtaAt
	switch {
	case flows && dta:
		return p.feeds.All
	case dta:
		return p.feeds.DTA
	case flows:
		return p.feeds.Rest
	}
	return nil
}

// commit commits, for each owned partition, the offset after the last record processed,
// never below the offset committed when it was assigned: a processor that replays what an
// earlier owner processed does not move the group's progress back.
func (p *Processor) commit(ctx context.Context) error {
	p.mu.Lock()
	offs := map[int32]kgo.EpochOffset{}
	for part, ps := range p.owned {
		if off := max(ps.next, ps.committed); off > 0 {
			offs[part] = kgo.EpochOffset{Epoch: -1, Offset: off}
		}
	}
	p.mu.Unlock()
	var err error
	p.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{p.cfg.Topic: offs},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
			err = e
			if e != nil {
				return
			}
			for _, t := range resp.Topics {
				for _, pt := range t.Partitions {
					if e := kerr.ErrorForCode(pt.ErrorCode); e != nil && err == nil {
						err = e
					}
				}
			}
		})
	if err != nil {
		p.commitErrors.Add(1)
		p.setErr(fmt.Errorf("committing: %w", err))
		return err
	}
	p.commits.Add(1)
	return nil
}

func (p *Processor) setErr(err error) {
	s := err.Error()
	p.lastErr.Store(&s)
	p.deps.Logger.Warn("processor", "err", err)
}

// assigned records the partitions the group gave this member; adjust then says where each
// is fetched from.
func (p *Processor) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	p.rebalances.Add(1)
	p.mu.Lock()
	now := time.Now()
	for _, part := range m[p.cfg.Topic] {
		p.owned[part] = &partState{assigned: now, from: -1}
	}
	p.mu.Unlock()
	p.deps.Logger.Info("processor: partitions assigned", "partitions", fmt.Sprint(m[p.cfg.Topic]))
}

// adjust is where the assigned partitions are fetched from: with a state topic, the offset
// of each one's latest snapshot, which it adopts first, or the topic's start when there is
// none (the state is the whole retained history's); without one, the committed offset.
func (p *Processor) adjust(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	mine := offsets[p.cfg.Topic]
	parts := make([]int32, 0, len(mine))
	for part := range mine {
		parts = append(parts, part)
	}
	var snaps map[int32]int64
	if p.cfg.StateTopic != "" {
		var err error
		if snaps, err = p.loadSnapshots(ctx, parts); err != nil {
			return nil, err // the client leaves the group and rejoins: another try
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for part, o := range mine {
		committed := max(o.EpochOffset().Offset, 0)
		flowsAt, from := committed, "committed offset"
		if off, ok := snaps[part]; ok {
			flowsAt, from = off, "snapshot"
		} else if p.cfg.StateTopic != "" {
			flowsAt, from = 0, "topic start"
		}
		start := flowsAt
		dtaAt := int64(math.MaxInt64) // no translator: nothing for it
		if p.feeds.DTA != nil {
			dtaAt = p.translated[part] // 0 unless the partition returns
			start = min(start, dtaAt)
		}
		mine[part] = kgo.NewOffset().At(start)
		if ps := p.owned[part]; ps != nil {
			ps.committed, ps.next, ps.stateFrom = committed, start, from
			ps.flowsAt, ps.dtaAt = flowsAt, dtaAt
		}
	}
	return offsets, nil
}

// nextOffsets maps the owned partitions that keep(part) selects to the offset their flow
// state stands at: the next to process, or the adopted snapshot's while the translator
// catches up before it.
func (p *Processor) nextOffsets(keep func(int32) bool) map[int32]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int32]int64{}
	for part, ps := range p.owned {
		if keep(part) {
			out[part] = max(ps.next, ps.flowsAt)
		}
	}
	return out
}

func every(int32) bool { return true }

// revoked writes the partitions' snapshots, handing their flows over, and commits what was
// processed (every polled record has been: rebalances wait for the poll loop) before the
// partitions go to another member. The group calls it at the end of every session, with
// no partition when none is revoked.
func (p *Processor) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	revoked := m[p.cfg.Topic]
	cctx, cancel := context.WithTimeout(ctx, p.cfg.SessionTimeout)
	defer cancel()
	if len(revoked) == 0 {
		p.commit(cctx)
		return
	}
	p.rebalances.Add(1)
	if p.cfg.StateTopic != "" {
		in := func(part int32) bool { return slices.Contains(revoked, part) }
		if err := p.writeSnapshots(cctx, p.nextOffsets(in), true); err != nil {
			p.setErr(err)
		}
	}
	p.commit(cctx)
	p.drop(m, "revoked")
}

// lost forgets partitions the group took without a revoke (this member was too slow or cut
// off): a snapshot could be older than what the new owner already adopted, and committing
// would fail. Their flows leave the cache: the new owner has them from the last snapshot.
func (p *Processor) lost(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	p.rebalances.Add(1)
	p.drop(m, "lost")
}

// drop forgets the partitions in m and their flows.
func (p *Processor) drop(m map[string][]int32, why string) {
	parts := m[p.cfg.Topic]
	if len(parts) == 0 {
		return
	}
	p.mu.Lock()
	for _, part := range parts {
		if ps := p.owned[part]; ps != nil {
			p.translated[part] = max(ps.dtaAt, ps.next) // what its stores hold of it
			if ps.dtaAt == math.MaxInt64 {
				delete(p.translated, part)
			}
		}
		delete(p.owned, part)
	}
	p.mu.Unlock()
	for _, st := range p.deps.States {
		st.Snapshot(func(k *telemetry.FlowKey) bool { return slices.Contains(parts, flowPartition(k, p.parts)) }, true,
			func(*telemetry.FlowKey, []byte) {})
	}
	p.deps.Logger.Info("processor: partitions "+why, "partitions", fmt.Sprint(parts))
}

// PartitionStatus is one assigned partition in a processor's status.
type PartitionStatus struct {
	Partition int32 `json:"partition"`
	// From is the first offset processed since the assignment (-1: none yet); Next the
	// offset after the last processed; Records how many were processed.
	From    int64  `json:"from"`
	Next    int64  `json:"next"`
	Records uint64 `json:"records"`
	// Lag is the records after the group's committed offset (-1: unknown).
	Lag      int64     `json:"lag"`
	Assigned time.Time `json:"assigned"`
	// StateFrom is where the partition's state started: "snapshot" (adopted, and fetched
	// from its offset), "topic start" (no snapshot: the whole retained history) or
	// "committed offset" (no state topic: an empty state).
	StateFrom string `json:"state_from"`
	// Replaying: the processor is still processing records an earlier owner processed (up
	// to the offset committed at the assignment), rebuilding the partition's state: its
	// answers for the partition's keys are not whole yet.
	Replaying bool `json:"replaying"`
}

// ProcessorStatus is the processor's part of GET /api/v1/status ("group").
type ProcessorStatus struct {
	GroupID    string            `json:"group_id"`
	Topic      string            `json:"topic"`
	Member     string            `json:"member"`
	Advertise  string            `json:"advertise"`
	Partitions []PartitionStatus `json:"partitions"`
	// Records processed, of them Replayed (before the group's committed offset at the
	// assignment: processed by an earlier owner too), Bad (did not decode), Rebalances
	// taken part in, Commits and CommitErrors, Snapshots written and SnapshotErrors, and
	// AdoptedFlows taken from snapshots.
	Records        uint64 `json:"records"`
	Replayed       uint64 `json:"replayed"`
	Snapshots      uint64 `json:"snapshots"`
	SnapshotErrors uint64 `json:"snapshot_errors"`
	AdoptedFlows   uint64 `json:"adopted_flows"`
	Bad            uint64 `json:"bad"`
	Rebalances     uint64 `json:"rebalances"`
	Commits        uint64 `json:"commits"`
	CommitErrors   uint64 `json:"commit_errors"`
	// Lag is the group's total lag on the topic (every member's partitions; -1: unknown).
	Lag       int64  `json:"lag"`
	LastError string `json:"last_error,omitempty"`
}

// Status returns the processor's state; with ctx it asks the brokers for the lag.
func (p *Processor) Status(ctx context.Context) ProcessorStatus {
	st := ProcessorStatus{GroupID: p.cfg.GroupID, Topic: p.cfg.Topic, Member: p.cfg.Name, Advertise: p.cfg.Advertise,
		Partitions: []PartitionStatus{}, Records: p.records.Load(), Replayed: p.replayed.Load(), Snapshots: p.snapshots.Load(),
		SnapshotErrors: p.snapshotErrors.Load(), AdoptedFlows: p.adopted.Load(), Bad: p.bad.Load(), Rebalances: p.rebalances.Load(),
		Commits: p.commits.Load(), CommitErrors: p.commitErrors.Load(), Lag: -1}
	p.mu.Lock()
	for part, ps := range p.owned {
		st.Partitions = append(st.Partitions, PartitionStatus{Partition: part, From: ps.from, Next: ps.next,
			Records: ps.records, Lag: -1, Assigned: ps.assigned, StateFrom: ps.stateFrom, Replaying: ps.next < ps.committed})
	}
	p.mu.Unlock()
	slices.SortFunc(st.Partitions, func(a, b PartitionStatus) int { return int(a.Partition - b.Partition) })
	if e := p.lastErr.Load(); e != nil {
		st.LastError = *e
	}
	if adm := p.adm; adm != nil && ctx != nil {
		if lags, err := adm.Lag(ctx, p.cfg.GroupID); err == nil {
			if gl, ok := lags[p.cfg.GroupID]; ok && gl.Error() == nil {
				st.Lag = gl.Lag.TotalByTopic()[p.cfg.Topic].Lag
				for i := range st.Partitions {
					if l, ok := gl.Lag.Lookup(p.cfg.Topic, st.Partitions[i].Partition); ok && l.Err == nil {
						st.Partitions[i].Lag = l.Lag
					}
				}
			}
		}
	}
	return st
}
