package group

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// State follows partitions (docs/scale-out.md, "State follows partitions"). A processor's
// state for partition p is a snapshot taken at offset o plus every report of p from o on:
// the snapshot says at which offset it was taken, and the next owner adopts it and fetches
// p from there, not from the group's committed offset. A processor writes a partition's
// snapshot before the partition is taken from it (the revoke callback, where nothing is
// being processed) and every snapshot_interval, so that a processor killed outright costs
// its successor at most that much replay, and no report is missing from the state.
//
// The snapshots are on the compacted state topic, raw partition p in its partition
// p mod (its partitions). Each state (States: the flow cache's flows, the detector's flows)
// has a header record, key "<state>/p<p>", and chunk records, keys "<state>/p<p>.<i>",
// each starting with the header's generation, so that a loader takes only the chunks of the
// latest header; a partition's snapshot is adopted only when every state has one of the
// same generation. The DTA stores follow partitions by replay instead (processor.go).

// FlowState is state keyed by flow that can be handed over: the flow cache
// (flowcache.FlowCache), the detector's flows (detect.Detector, adapted).
type FlowState interface {
	ImageSize() int
	Snapshot(take func(*telemetry.FlowKey) bool, remove bool, emit func(k *telemetry.FlowKey, img []byte)) int
	Adopt(img []byte) error
}

// State is one FlowState under its name in the state topic's keys.
type State struct {
	Name string
	FlowState
}

// snapshotVersion is the header's first byte.
const snapshotVersion = 1

// chunkBytes bounds a chunk record: under the brokers' default message.max.bytes (1 MB).
const chunkBytes = 900 << 10

// header is a partition's snapshot header: version (1), offset (8), generation (8),
// chunks (4), image size (4), flows (4), big endian.
type header struct {
	offset     int64  // the first offset the snapshot does not include
	generation uint64 // unique per snapshot (the writer's clock, ns)
	chunks     uint32
	imageSize  uint32
	flows      uint32
}

const headerLen = 1 + 8 + 8 + 4 + 4 + 4

func (h *header) append(b []byte) []byte {
	b = append(b, snapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.offset))
	b = binary.BigEndian.AppendUint64(b, h.generation)
	b = binary.BigEndian.AppendUint32(b, h.chunks)
	b = binary.BigEndian.AppendUint32(b, h.imageSize)
	return binary.BigEndian.AppendUint32(b, h.flows)
}

func parseHeader(b []byte) (header, error) {
	if len(b) != headerLen || b[0] != snapshotVersion {
		return header{}, fmt.Errorf("a snapshot header of %d bytes, version %d: this intake reads version %d", len(b), firstByte(b), snapshotVersion)
	}
	return header{offset: int64(binary.BigEndian.Uint64(b[1:])), generation: binary.BigEndian.Uint64(b[9:]),
		chunks: binary.BigEndian.Uint32(b[17:]), imageSize: binary.BigEndian.Uint32(b[21:]), flows: binary.BigEndian.Uint32(b[25:])}, nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

func headerKey(state string, p int32) string { return state + "/p" + strconv.Itoa(int(p)) }
func chunkKey(state string, p int32, i int) string {
	return headerKey(state, p) + "." + strconv.Itoa(i)
}
func statePart(p, nState int32) int32 { return p % nState }

// parseKey reads a state record's key: the state, the raw partition and the chunk (-1: the
// header).
func parseKey(k string) (state string, p int32, chunk int, ok bool) {
	state, s, ok := strings.Cut(k, "/p")
	if !ok || state == "" {
		return "", 0, 0, false
	}
	ps, cs, isChunk := strings.Cut(s, ".")
	n, err := strconv.ParseInt(ps, 10, 32) // a partition is an int32: a longer number is not one
	if err != nil || n < 0 {
		return "", 0, 0, false
	}
	chunk = -1
	if isChunk {
		if chunk, err = strconv.Atoi(cs); err != nil || chunk < 0 {
			return "", 0, 0, false
		}
	}
	return state, int32(n), chunk, true
}

// flowPartition is the raw partition of a flow (as the inlet partitions its reports).
func flowPartition(k *telemetry.FlowKey, parts int32) int32 {
	var kb partition.KeyBuf
	return int32(partition.Hash(partition.FlowKey(&kb, k)) % uint32(parts))
}

// writeSnapshots writes the snapshots of the raw partitions in offsets (each with the
// offset it is taken at), removing their flows from the states when handing them over, and
// waits for the brokers to take every record.
func (p *Processor) writeSnapshots(ctx context.Context, offsets map[int32]int64, handover bool) error {
	if len(offsets) == 0 {
		return nil
	}
	gen := uint64(time.Now().UnixNano())
	var recs []*kgo.Record
	for _, st := range p.deps.States {
		imgs := map[int32][]byte{}
		flows := map[int32]uint32{}
		size := st.ImageSize()
		st.Snapshot(func(k *telemetry.FlowKey) bool {
			_, ok := offsets[flowPartition(k, p.parts)]
			return ok
		}, handover, func(k *telemetry.FlowKey, img []byte) {
			part := flowPartition(k, p.parts)
			imgs[part] = append(imgs[part], img...)
			flows[part]++
		})
		per := max(chunkBytes/size, 1) * size
		for part, off := range offsets {
			b := imgs[part]
			h := header{offset: off, generation: gen, imageSize: uint32(size), flows: flows[part]}
			sp := statePart(part, p.stateParts)
			for i := 0; len(b) > 0; i++ {
				n := min(per, len(b))
				v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+n), gen)
				recs = append(recs, &kgo.Record{Topic: p.cfg.StateTopic, Partition: sp, Key: []byte(chunkKey(st.Name, part, i)), Value: append(v, b[:n]...)})
				b = b[n:]
				h.chunks++
			}
			// The header last: a loader that finds it finds its chunks before it.
			recs = append(recs, &kgo.Record{Topic: p.cfg.StateTopic, Partition: sp, Key: []byte(headerKey(st.Name, part)), Value: h.append(nil)})
		}
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		p.snapshotErrors.Add(1)
		return fmt.Errorf("writing snapshots to %s: %w", p.cfg.StateTopic, err)
	}
	p.snapshots.Add(uint64(len(offsets)))
	return nil
}

// loadSnapshots reads the latest snapshot of each raw partition in parts from the state
// topic, puts its flows in the states, and returns the offset each was taken at (a
// partition without a whole snapshot is not in the map).
func (p *Processor) loadSnapshots(ctx context.Context, parts []int32) (map[int32]int64, error) {
	want := map[int32]bool{}
	sparts := map[int32]kgo.Offset{}
	for _, part := range parts {
		want[part] = true
		sparts[statePart(part, p.stateParts)] = kgo.NewOffset().AtStart()
	}
	ends, err := p.adm.ListEndOffsets(ctx, p.cfg.StateTopic)
	if err != nil {
		return nil, fmt.Errorf("reading %s's end offsets: %w", p.cfg.StateTopic, err)
	}
	remaining := map[int32]int64{}
	for sp := range sparts {
		if e, ok := ends.Lookup(p.cfg.StateTopic, sp); ok && e.Err == nil && e.Offset > 0 {
			remaining[sp] = e.Offset
		} else if ok && e.Err != nil {
			return nil, fmt.Errorf("reading %s/%d's end offset: %w", p.cfg.StateTopic, sp, e.Err)
		}
	}
	type skey struct {
		state string
		part  int32
	}
	headers := map[skey]header{}
	chunks := map[skey]map[int][]byte{}
	if len(remaining) > 0 {
		opts := append([]kgo.Opt{kgo.SeedBrokers(p.cfg.brokers(&p.deps)...), kgo.ClientID(clientID(p.cfg.Name, "state")),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{p.cfg.StateTopic: sparts}),
			kgo.FetchMaxWait(50 * time.Millisecond)}, p.deps.Auth...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		for len(remaining) > 0 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("reading %s: %w", p.cfg.StateTopic, ctx.Err())
			}
			if err := fs.Err(); err != nil {
				return nil, fmt.Errorf("reading %s: %w", p.cfg.StateTopic, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
				state, part, chunk, ok := parseKey(string(r.Key))
				if !ok || !want[part] {
					return
				}
				k := skey{state, part}
				if chunk < 0 {
					if h, err := parseHeader(r.Value); err == nil {
						headers[k] = h
					} else {
						p.setErr(fmt.Errorf("%s: partition %d's %s snapshot: %w", p.cfg.StateTopic, part, state, err))
					}
					return
				}
				if chunks[k] == nil {
					chunks[k] = map[int][]byte{}
				}
				chunks[k][chunk] = r.Value
			})
		}
	}
	out := map[int32]int64{}
next:
	for _, part := range parts {
		// Every state's snapshot, of one generation: a partition's states stand at one offset.
		var first header
		for i, st := range p.deps.States {
			h, ok := headers[skey{st.Name, part}]
			if !ok || i > 0 && (h.generation != first.generation || h.offset != first.offset) {
				continue next
			}
			first = h
		}
		if len(p.deps.States) == 0 {
			continue
		}
		for _, st := range p.deps.States {
			k := skey{st.Name, part}
			if err := p.adopt(st, part, headers[k], chunks[k]); err != nil {
				p.setErr(err)
				continue next // replayed from the topic's start; what was adopted is overwritten
			}
		}
		out[part] = first.offset
	}
	return out, nil
}

// adopt puts snapshot h's flows, in chunks, in state st.
func (p *Processor) adopt(st State, part int32, h header, chunks map[int][]byte) error {
	if h.flows > 0 && int(h.imageSize) != st.ImageSize() {
		return fmt.Errorf("partition %d's %s snapshot holds flows of %d bytes: this processor's take %d (another build, or flowcache.max_hops)", part, st.Name, h.imageSize, st.ImageSize())
	}
	var n uint32
	for i := range int(h.chunks) {
		c := chunks[i]
		if len(c) < 8 || binary.BigEndian.Uint64(c) != h.generation || (len(c)-8)%int(h.imageSize) != 0 {
			return fmt.Errorf("partition %d's %s snapshot: chunk %d of %d is missing or of another snapshot", part, st.Name, i, h.chunks)
		}
		for b := c[8:]; len(b) > 0; b = b[h.imageSize:] {
			if err := st.Adopt(b[:h.imageSize]); err != nil {
				return fmt.Errorf("partition %d's %s snapshot: %w", part, st.Name, err)
			}
			n++
		}
	}
	if n != h.flows {
		return fmt.Errorf("partition %d's %s snapshot: %d flows in its chunks, its header says %d", part, st.Name, n, h.flows)
	}
	p.adopted.Add(uint64(n))
	return nil
}
