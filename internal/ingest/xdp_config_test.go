package ingest

import "testing"

func TestXDPConfigErrors(t *testing.T) {
	cases := []struct {
		ls   []Listener
		want string
	}{
		{[]Listener{{Format: "report", Port: 1, Mode: "dpdk"}}, `listeners[0].mode: "dpdk": must be socket or xdp`},
		{[]Listener{{Format: "report", Port: 1, Mode: ModeXDP}}, `listeners[0].interface: "": is required with mode xdp: the network interface to attach the XDP program to`},
		{[]Listener{{Format: "report", Mode: ModeXDP, Interface: "eth0"}}, `listeners[0].port: 0: must be 1-65535 with mode xdp: the XDP program matches a fixed port`},
		{[]Listener{{Format: "report", Port: 1, Mode: ModeXDP, Interface: "eth0", Sockets: 300}}, `listeners[0].sockets: 300: must be 1-256 with mode xdp (receive queues; 0: every queue of the interface)`},
		{[]Listener{{Format: "report", Port: 1, Mode: ModeXDP, Interface: "eth0"}, {Format: "dta", Port: 2, Mode: ModeXDP, Interface: "eth0"}},
			`listeners[1].interface: "eth0": already used by listeners[0] (one xdp listener per interface)`},
	}
	for _, c := range cases {
		cfg := Config{Listeners: c.ls}
		cfg.FillDefaults()
		err := cfg.Validate()
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: error %v, want %s", c.ls, err, c.want)
		}
	}
	// The default mode is socket; an xdp listener's sockets default to the interface's
	// receive queues (1 where sysfs has no such interface).
	cfg := Config{Listeners: []Listener{{Format: "report", Port: 1}, {Format: "dta", Port: 2, Mode: ModeXDP, Interface: "no-such-if"}}}
	cfg.FillDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Listeners[0].Mode != ModeSocket || cfg.Listeners[1].Sockets != 1 {
		t.Errorf("defaults: mode %q, xdp sockets %d", cfg.Listeners[0].Mode, cfg.Listeners[1].Sockets)
	}
}
