package detect

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/intake-int/intake/event"
)

// Config is the `detect` section of the configuration file.
type Config struct {
	// Enabled turns the event detector on (the default).
	Enabled bool `yaml:"enabled"`
	// MaxFlows bounds the flow keys held (flow path, flow latency and the flow's per-hop
	// latencies); when full, the least recently updated flow is evicted and counted. Each
	// shard holds its share plus a quarter (shardCap), so that an uneven hash does not
	// evict before MaxFlows are held.
	MaxFlows int `yaml:"max_flows"`
	// MaxKeys bounds the switch keys held: (switch, queue), (switch, egress port), (switch,
	// buffer), (switch, drop reason), (node, hw_id). Least recently updated evicted, counted.
	MaxKeys int `yaml:"max_keys"`
	// Shards is the number of independently locked shards the keys are split into by key
	// hash (a power of two); more shards, less contention between workers.
	Shards int `yaml:"shards"`
	// Expire forgets a key not updated for this long (checked at each periodic push and at
	// least every expire/2); 0 never expires.
	Expire time.Duration `yaml:"expire"`
	// Ring is the size of each event consumer's ring (the SmartNIC sink's R_I rings).
	Ring int `yaml:"ring"`
	// EventLog is the number of recent events kept for GET /api/v1/events.
	EventLog int `yaml:"event_log"`
	// MaxStreams bounds the live event streams (GET /api/v1/events/stream) open at once;
	// one more is refused with 503. They all read the event log's ring.
	MaxStreams int `yaml:"max_streams"`
	// Change is T(m) per measurement: a change event when |V(t2) − V(t1)| > T(m), V(t1)
	// being the value last exported. A measurement not listed raises no change events.
	Change Levels `yaml:"change"`
	// Above is the threshold-crossing level per measurement: an above event when the value
	// goes from ≤ level (or unknown) to > level, a below event on the way back. A
	// measurement not listed raises none.
	Above Levels `yaml:"above"`
	// Kernel runs detection in the XDP program of the report listeners in mode xdp
	// (docs/xdp.md, "Detection in the kernel"): the reports it parses are detected there,
	// with the state in BPF maps, and only their events come up. Needs root.
	Kernel bool `yaml:"kernel"`
}

// Levels are thresholds by measurement name: detect.change and detect.above. In the
// configuration file a level is a non-negative integer (any: the largest is a level like
// the others, not a way to say "off"), or null or off: no such rule, as when the
// measurement is left out, and the way to turn a default rule off. A mapping in the file
// is applied over the defaults key by key.
type Levels map[string]uint64

// UnmarshalYAML applies a mapping of measurement names to levels over l. (The function
// form of yaml's unmarshaler, so that this package does not import the YAML library.)
func (l *Levels) UnmarshalYAML(unmarshal func(any) error) error {
	var raw map[string]any
	if err := unmarshal(&raw); err != nil {
		return errors.New("must be a mapping of measurement names to levels")
	}
	if *l == nil {
		*l = Levels{}
	}
	for _, name := range sortedKeys(raw) {
		// A name is checked even when its rule is turned off: a misspelt one must not pass.
		if _, err := ThresholdMeasurement(name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		switch v := raw[name].(type) {
		case nil:
			delete(*l, name)
			continue
		case string:
			if v == "off" {
				delete(*l, name)
				continue
			}
		case int:
			if v >= 0 {
				(*l)[name] = uint64(v)
				continue
			}
		case uint64:
			(*l)[name] = v
			continue
		}
		return fmt.Errorf("%s: %v: %s", name, raw[name], LevelAllowed)
	}
	return nil
}

// LevelAllowed says what a level may be.
const LevelAllowed = "must be a non-negative integer, or null or off (no such rule)"

// MarshalYAML writes every measurement a threshold applies to, off when l has none, so
// that a dump read back turns off what the defaults would turn on.
func (l Levels) MarshalYAML() (any, error) {
	out := map[string]any{}
	for _, n := range thresholdNames() {
		out[n] = "off"
	}
	for k, v := range l {
		out[k] = v
	}
	return out, nil
}

// defaultChange is INTCollector's default threshold (50) for every numeric measurement it
// detects on; drops and seq_gaps raise an event on every increase.
func defaultChange() map[string]uint64 {
	return map[string]uint64{
		"flow_latency": 50, "flow_hop_latency": 50, "queue_occupancy": 50, "queue_congestion": 50,
		"tx_utilization": 50, "buffer_occupancy": 50, "drops": 0, "seq_gaps": 0,
	}
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Enabled:    true,
		MaxFlows:   32768,
		MaxKeys:    32768,
		Shards:     64,
		Expire:     time.Minute,
		Ring:       1 << 16,
		EventLog:   10000,
		MaxStreams: 8,
		Change:     defaultChange(),
		Above:      map[string]uint64{},
	}
}

// MaxStreams is the most max_streams may be.
const MaxStreams = 1024

// Validate reports the first invalid setting as "key: value: what is allowed", the key
// relative to the section.
func (c *Config) Validate() error {
	if c.MaxFlows < 1 || c.MaxFlows > 1<<26 {
		return fmt.Errorf("max_flows: %d: must be 1-%d", c.MaxFlows, 1<<26)
	}
	if c.MaxKeys < 1 || c.MaxKeys > 1<<26 {
		return fmt.Errorf("max_keys: %d: must be 1-%d", c.MaxKeys, 1<<26)
	}
	if c.Shards < 1 || c.Shards > 4096 || c.Shards&(c.Shards-1) != 0 {
		return fmt.Errorf("shards: %d: must be a power of two 1-4096", c.Shards)
	}
	if c.Expire < 0 {
		return fmt.Errorf("expire: %s: must be 0 (never) or positive", c.Expire)
	}
	if c.Ring < 2 || c.Ring > 1<<24 {
		return fmt.Errorf("ring: %d: must be 2-%d events", c.Ring, 1<<24)
	}
	if c.EventLog < 0 || c.EventLog > 1<<24 {
		return fmt.Errorf("event_log: %d: must be 0-%d events", c.EventLog, 1<<24)
	}
	if c.MaxStreams < 0 || c.MaxStreams > MaxStreams {
		return fmt.Errorf("max_streams: %d: must be 0-%d (0: no streams)", c.MaxStreams, MaxStreams)
	}
	for _, sec := range []struct {
		name string
		m    map[string]uint64
	}{{"change", c.Change}, {"above", c.Above}} {
		for _, k := range sortedKeys(sec.m) {
			if _, err := ThresholdMeasurement(k); err != nil {
				return fmt.Errorf("%s.%s: %w", sec.name, k, err)
			}
		}
	}
	return nil
}

// ThresholdMeasurement returns the measurement a detect.change.<name> or
// detect.above.<name> threshold applies to, or why it cannot have one.
func ThresholdMeasurement(name string) (event.Measurement, error) {
	m, ok := event.ParseMeasurement(name)
	allowed := " (allowed: " + strings.Join(thresholdNames(), ", ") + ")"
	switch {
	case !ok:
		return m, errors.New("unknown measurement" + allowed)
	case m == event.FlowPath:
		return m, errors.New("a path has no numeric value to compare" + allowed)
	}
	return m, nil
}

// thresholdNames are the measurements a threshold applies to (all numeric ones).
func thresholdNames() []string {
	var ns []string
	for _, n := range event.MeasurementNames() {
		if n != event.FlowPath.String() {
			ns = append(ns, n)
		}
	}
	return ns
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
