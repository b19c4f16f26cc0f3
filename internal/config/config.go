// Package config owns intake's configuration file: one YAML document, read strictly (an
// unknown key stops start-up), with documented defaults that Default returns and `intake
// serve --dump` prints. Every error names the key as a dotted path, the value and what is
// allowed, e.g. `listeners[1].port: 70000: must be 0-65535` (docs/design.md, "What bad input
// gets"). docs/config.md is the reference for each key.
//
// The top-level Config is a plain struct with one field per component, each section's type,
// defaults and Validate owned by that component's package (ingest's listeners, detect,
// flowcache, dta, label, export). Only the composition root (package collector) and the
// command line import this package: the components never see the aggregate.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/intake-int/intake/api"
	"github.com/intake-int/intake/internal/cluster"
	"github.com/intake-int/intake/internal/confkey"
	"github.com/intake-int/intake/internal/detect"
	"github.com/intake-int/intake/internal/dta"
	"github.com/intake-int/intake/internal/flowcache"
	"github.com/intake-int/intake/internal/group"
	"github.com/intake-int/intake/internal/history"
	"github.com/intake-int/intake/internal/ingest"
	"github.com/intake-int/intake/internal/label"
	"github.com/intake-int/intake/internal/smallfile"
	"github.com/intake-int/intake/wire"
)

// Default ports (docs/design.md, "Interfaces users see"). The INT-label port is intake's choice:
// INT-label names none.
const (
	PortReport    = 32766
	PortReportAlt = 54321
	PortDTA       = 40040
	PortLabel     = 40050
	HTTPAddress   = api.DefaultAddress
)

// Config is the whole file.
type Config struct {
	// Listeners are the UDP sockets telemetry arrives on.
	Listeners []ingest.Listener `yaml:"listeners"`
	// Sinks are the interfaces of this host whose arriving packets carry INT: intake is
	// their INT sink (docs/sink.md).
	Sinks []ingest.Sink `yaml:"sinks"`
	// HTTP is the API server.
	HTTP HTTP `yaml:"http"`
	// Decoder is the decoder configuration every listener uses unless it overrides it.
	Decoder wire.Config `yaml:"decoder"`
	// The processors and exporters, each section owned and validated by its package.
	Detect    detect.Config    `yaml:"detect"`
	FlowCache flowcache.Config `yaml:"flowcache"`
	DTA       dta.Config       `yaml:"dta"`
	Label     label.Config     `yaml:"label"`
	Export    Export           `yaml:"export"`
	// Cluster partitions keys across collectors (docs/scale-out.md).
	Cluster cluster.Config `yaml:"cluster"`
	// Group is the scale-out on a Kafka consumer group: this collector's role in it
	// (docs/scale-out.md).
	Group group.Config `yaml:"group"`
	// History keeps the last hour of per-switch and per-flow figures in memory.
	History history.Config `yaml:"history"`
}

// sections returns the component sections with their keys, for defaults and validation.
func (c *Config) sections() []struct {
	key string
	v   interface{ Validate() error }
} {
	return []struct {
		key string
		v   interface{ Validate() error }
	}{{"detect", &c.Detect}, {"flowcache", &c.FlowCache}, {"dta", &c.DTA}, {"label", &c.Label}, {"export", &c.Export}, {"cluster", &c.Cluster}, {"group", &c.Group}, {"history", &c.History}}
}

// withSectionDefaults sets every component section to its package's defaults.
func (c *Config) withSectionDefaults() {
	c.Detect, c.FlowCache, c.DTA = detect.DefaultConfig(), flowcache.DefaultConfig(), dta.DefaultConfig()
	c.Label, c.Export = label.DefaultConfig(), DefaultExport()
	c.Cluster, c.Group, c.History = cluster.DefaultConfig(), group.DefaultConfig(), history.DefaultConfig()
}

// HTTP configures the API server (its section is the api package's).
type HTTP = api.Config

// Default returns the documented defaults.
func Default() Config {
	c := Config{
		Listeners: []ingest.Listener{
			{Format: "report", Port: PortReport},
			{Format: "report", Port: PortReportAlt},
			{Format: "dta", Port: PortDTA},
			{Format: "int-label", Port: PortLabel},
		},
		HTTP:    api.DefaultConfig(),
		Decoder: wire.DefaultConfig(),
	}
	c.withSectionDefaults()
	c.FillDefaults()
	return c
}

// FillDefaults replaces zero listener settings with their defaults: Load and Default do it,
// code that builds listeners itself (demo, bench ingest) calls it.
func (c *Config) FillDefaults() {
	for i := range c.Listeners {
		c.Listeners[i].FillDefaults()
	}
	for i := range c.Sinks {
		c.Sinks[i].FillDefaults()
	}
	c.Group.FillDefaults()
}

// Ingest returns the receive path's part of the configuration. A group's processor opens
// no listener or sink: its reports come from the raw topic, through a feed.
func (c *Config) Ingest() ingest.Config {
	if c.Group.Role == group.RoleProcessor {
		feeds := []string{group.FeedName}
		if c.DTA.Enabled {
			feeds = append(feeds, group.FeedDTA, group.FeedRest)
		}
		return ingest.Config{Feeds: feeds, Decoder: c.Decoder}
	}
	return ingest.Config{Listeners: c.Listeners, Sinks: c.Sinks, Decoder: c.Decoder}
}

// Error is a configuration error at one key: the one every section's validation makes
// (internal/confkey, on the floor so that ingest, which config imports, makes it too).
type Error = confkey.Error

// MaxFileSize bounds a configuration file: a larger one is refused (a large configuration
// is a few KiB).
const MaxFileSize = 1 << 20

// Load reads the file at path over the defaults, then validates it. The file must be a
// regular one (smallfile.Read): a FIFO or /dev/zero is refused at once.
func Load(path string) (Config, error) {
	b, err := smallfile.Read(path, MaxFileSize)
	if tl := (*smallfile.TooLargeError)(nil); errors.As(err, &tl) {
		return Config{}, fmt.Errorf("%s: larger than %d bytes: not a configuration file", path, MaxFileSize)
	}
	if err != nil {
		return Config{}, err
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a YAML document over the defaults and validates it. Keys not given keep their
// defaults; a `listeners` list, when given, replaces the default listeners.
func Parse(b []byte) (Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return Config{}, err
	}
	if root.Kind == 0 { // empty file
		c := Default()
		return c, c.Validate()
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	// Our own walk first: it names the key by its dotted path, which yaml.v3's strict mode
	// (line numbers and Go type names) does not. It also rewrites a bare 0 duration as 0s,
	// which yaml.v3 refuses to decode: the tree is encoded again for the decoder.
	w := &walker{}
	if err := w.check(doc, reflect.TypeOf(Config{}), ""); err != nil {
		return Config{}, err
	}
	b, err := yaml.Marshal(&root)
	if err != nil {
		return Config{}, err
	}
	c := Config{HTTP: api.DefaultConfig(), Decoder: wire.DefaultConfig()}
	c.withSectionDefaults()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return Config{}, err
	}
	if find(doc, "listeners") == nil {
		c.Listeners = Default().Listeners
	}
	c.FlowCache.Histograms.Width.Resolve() // a deprecated key's value (FlowCache.Deprecated)
	// Per-listener decoder overrides apply over the top-level decoder, key by key.
	if ls := find(doc, "listeners"); ls != nil && ls.Kind == yaml.SequenceNode {
		for i, ln := range ls.Content {
			dn := find(ln, "decoder")
			if dn == nil || i >= len(c.Listeners) {
				continue
			}
			eff := cloneDecoder(c.Decoder)
			if err := decodeStrict(dn, &eff); err != nil {
				return Config{}, fmt.Errorf("listeners[%d].decoder: %w", i, err)
			}
			c.Listeners[i].Decoder = &eff
		}
	}
	c.FillDefaults()
	return c, c.Validate()
}

func cloneDecoder(d wire.Config) wire.Config {
	d.DSCP = append([]wire.DSCPMatch(nil), d.DSCP...)
	d.GPENextProtocols = append([]uint8(nil), d.GPENextProtocols...)
	d.GeneveClasses = append([]uint16(nil), d.GeneveClasses...)
	return d
}

// decodeStrict decodes node onto v rejecting unknown keys (yaml.v3's Node.Decode is lax).
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// find returns the value of key in mapping node n, or nil.
func find(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// walker is check's state: the nodes visited so far.
type walker struct{ nodes int }

// maxNodes bounds the values of a configuration, aliases expanded.
const maxNodes = 1 << 20

// check walks node against type t: unknown keys, a list where a map belongs, and scalars that
// do not fit their field are reported with their dotted path.
func (w *walker) check(n *yaml.Node, t reflect.Type, path string) error {
	// Aliases make a small file a large tree (or a loop): the walk is bounded.
	if w.nodes++; w.nodes > maxNodes {
		return &Error{Key: "(top level)", Msg: fmt.Sprintf("more than %d values with aliases expanded", maxNodes)}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	key := path
	if key == "" {
		key = "(top level)"
	}
	if reflect.PointerTo(t).Implements(funcUnmarshaler) && t.Kind() == reflect.Map && n.Kind == yaml.MappingNode {
		// A map that reads itself (detect.Levels): its error names the entry at fault.
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			return errors.New(key + "." + err.Error())
		}
		return nil
	}
	if t == reflect.TypeFor[time.Duration]() && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && n.Value == "0" {
		// "0 turns it off" is documented for many durations: a bare 0 is 0s.
		n.Value, n.Tag, n.Style = "0s", "!!str", 0
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return &Error{Key: key, Value: show(n), Msg: "must be a mapping of keys " + strings.Join(keys(t), ", ")}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			f, ok := field(t, k)
			if !ok {
				return &Error{Key: join(path, k), Msg: "unknown key (allowed: " + strings.Join(keys(t), ", ") + ")"}
			}
			if err := w.check(n.Content[i+1], f.Type, join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Map:
		// Keyed by name, e.g. detect.change.<measurement>: the section's Validate knows the
		// names; here each value must fit the element type.
		if n.Kind != yaml.MappingNode {
			return &Error{Key: key, Value: show(n), Msg: "must be a mapping of names to " + kindName(t.Elem())}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := w.check(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return &Error{Key: key, Value: show(n), Msg: "must be a list"}
		}
		for i, e := range n.Content {
			if err := w.check(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return &Error{Key: key, Msg: "must be " + kindName(t)}
		}
		// yaml.v3 turns 16384.5 into 16384 for an integer field: only an integer will do.
		if isInteger(t) && n.ShortTag() != "!!int" {
			return &Error{Key: key, Value: n.Value, Msg: "must be " + kindName(t)}
		}
		v := reflect.New(t)
		if err := n.Decode(v.Interface()); err != nil {
			return &Error{Key: key, Value: n.Value, Msg: "must be " + kindName(t)}
		}
	}
	return nil
}

// funcUnmarshaler is yaml's unmarshaler in its function form, which a component's type can
// implement without importing the YAML library.
var funcUnmarshaler = reflect.TypeFor[interface{ UnmarshalYAML(func(any) error) error }]()

// isInteger reports whether t is an integer kind (a duration is not: it is written "10s").
func isInteger(t reflect.Type) bool {
	if t == reflect.TypeFor[time.Duration]() {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func show(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "?"
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// field is the field of struct t whose yaml key is key, looking into inline fields (the
// export section's pipeline keys).
func field(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if inline(f) {
			if g, ok := field(f.Type, key); ok {
				return g, true
			}
		} else if tagName(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// keys are the yaml keys of struct t, its inline fields' included.
func keys(t reflect.Type) []string {
	var ks []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case !f.IsExported():
		case inline(f):
			ks = append(ks, keys(f.Type)...)
		case tagName(f) != "" && tagName(f) != "-":
			ks = append(ks, tagName(f))
		}
	}
	return ks
}

// inline reports whether f's fields are its parent's (yaml ",inline").
func inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return opts == "inline"
}

func kindName(t reflect.Type) string {
	if t == reflect.TypeFor[time.Duration]() {
		return "a duration such as 1ms"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Uint8:
		return "an integer 0-255"
	case reflect.Uint16:
		return "an integer 0-65535"
	case reflect.Uint32, reflect.Uint64, reflect.Uint:
		return "a non-negative integer"
	}
	return "a " + t.Kind().String()
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	for _, s := range c.sections() {
		if err := s.v.Validate(); err != nil {
			return fmt.Errorf("%s.%w", s.key, err)
		}
	}
	in := c.Ingest()
	if err := in.Validate(); err != nil {
		return err
	}
	if err := c.HTTP.Validate(); err != nil {
		return fmt.Errorf("http.%w", err)
	}
	if c.Cluster.Enabled() && c.HTTP.Address == "" {
		return errors.New("cluster.members: a cluster needs http.address: the other members query this one through it")
	}
	if g := &c.Group; g.Enabled() {
		if c.Cluster.Enabled() {
			return fmt.Errorf("group.role: %q: a collector is in a consumer group or in a static cluster (cluster.members), not both", g.Role)
		}
		if len(g.Brokers) == 0 && !c.Export.Kafka.Enabled() {
			return fmt.Errorf("group.brokers: []: group.role %s needs brokers (here, or export.kafka.brokers)", g.Role)
		}
		if g.Role == group.RoleProcessor && c.HTTP.Address == "" {
			return errors.New("group.role: \"processor\": a processor needs http.address: queries reach its partitions' keys through it")
		}
	}
	if err := c.Decoder.Validate(); err != nil {
		return prefix("decoder", err)
	}
	return nil
}

// prefix puts path in front of a wire.Config error, which names keys relative to the
// decoder section ("dta.key_len: ...").
func prefix(path string, err error) error {
	return errors.New(path + "." + err.Error())
}

// DecoderFor returns the effective decoder configuration of listener i.
func (c *Config) DecoderFor(i int) wire.Config {
	in := c.Ingest()
	return in.DecoderFor(i)
}

// Dump returns the configuration as YAML, every key spelled out, followed by its budget
// (what each component will take) as comments.
func (c *Config) Dump() []byte {
	b, err := yaml.Marshal(c)
	if err != nil { // a plain struct of scalars and slices always marshals
		panic(err)
	}
	b = append(b, "\n# Budget: the memory and files each component takes at these sizes\n"...)
	for _, l := range strings.SplitAfter(c.Budget().String(), "\n") {
		if l != "" {
			b = append(b, "# "+l...)
		}
	}
	return b
}
