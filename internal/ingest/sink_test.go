package ingest

import (
	"testing"

	"github.com/intake-int/intake/wire"
)

// TestSinkConfig: a sink's settings are checked key by key, with messages that name the key,
// the value and what is allowed; a sink becomes a listener of mode sink, format int-md, one
// worker, and its decoder matches only what marks INT on it (no probing).
func TestSinkConfig(t *testing.T) {
	base := func() Config {
		return Config{Listeners: []Listener{{Format: "report", Port: 32766, Mode: ModeXDP, Interface: "eth0"}},
			Sinks: []Sink{{Interface: "eth1"}}}
	}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no interface", func(c *Config) { c.Sinks[0].Interface = "" }, `sinks[0].interface: "": is required: the interface of this host that receives the INT-carrying packets`},
		{"an xdp listener's interface", func(c *Config) { c.Sinks[0].Interface = "eth0" }, `sinks[0].interface: "eth0": already used by listeners[0] (one XDP program per interface)`},
		{"two sinks on one interface", func(c *Config) { c.Sinks = append(c.Sinks, Sink{Interface: "eth1", Name: "b"}) }, `sinks[1].interface: "eth1": already used by sinks[0] (one XDP program per interface)`},
		{"a listener's name", func(c *Config) { c.Sinks[0].Name = "report:32766" }, `sinks[0].name: report:32766: already used by listeners[0]`},
		{"port", func(c *Config) { c.Sinks[0].Port = 70000 }, `sinks[0].port: 70000: must be 0-65535 (0: no port marks INT)`},
		{"version", func(c *Config) { c.Sinks[0].Versions = []string{"2.0"} }, `sinks[0].versions: "2.0": each must be 0.5, 1.0 or 2.x`},
		{"attach", func(c *Config) { c.Sinks[0].Attach = "offload" }, `sinks[0].attach: "offload": must be native or generic (empty: native where the driver has it)`},
		{"report_to", func(c *Config) { c.Sinks[0].ReportTo = []string{"collector"} }, `sinks[0].report_to[0]: "collector": must be host:port`},
		{"five dscp", func(c *Config) { c.Sinks[0].DSCP = make([]wire.DSCPMatch, 5) }, `sinks[0].dscp: 5 matches: the sink program takes at most 4`},
		{"dscp mask 0", func(c *Config) { c.Sinks[0].DSCP = []wire.DSCPMatch{{Value: 1}} }, `sinks[0].dscp[0]: value 0x01 mask 0x00: value and mask must be 6-bit, mask non-zero`},
		{"ring", func(c *Config) { c.Sinks[0].Ring = 5000 }, `sinks[0].ring: 5000 bytes: a power of two, at least 4096`},
	} {
		cfg := base()
		c.edit(&cfg)
		cfg.FillDefaults()
		if err := cfg.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
	// A host that is only a sink needs no listener.
	cfg := Config{Sinks: []Sink{{Interface: "eth1", Port: 5555, Quirks: wire.Quirks{HostINT: true}}}}
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := cfg.Sinks[0]
	if s.Name != "sink:eth1" || len(s.DSCP) != 0 || s.Ring != 4<<20 || len(s.Versions) != 3 || cfg.Workers() != 1 {
		t.Errorf("defaults: %+v, workers %d", s, cfg.Workers())
	}
	if l := s.listener(); l.Mode != ModeSink || l.Format != "int-md" || l.Sockets != 1 || l.Name != "sink:eth1" {
		t.Errorf("listener %+v", l)
	}
	d := s.decoder(wire.DefaultConfig())
	if d.ProbeShim || d.INTPort != 5555 || len(d.DSCP) != 0 || !d.Quirks.HostINT {
		t.Errorf("decoder %+v", d)
	}
	if p := s.program(); !p.HostINT || p.Port != 5555 || !p.V05 || !p.V10 || !p.V2x {
		t.Errorf("program %+v", p)
	}
	// Marked by nothing: the default DSCP.
	cfg = Config{Sinks: []Sink{{Interface: "eth1"}}}
	cfg.FillDefaults()
	if m := cfg.Sinks[0].DSCP; len(m) != 1 || m[0] != (wire.DSCPMatch{Value: 0x17, Mask: 0x3f}) {
		t.Errorf("default dscp %v", m)
	}
}
