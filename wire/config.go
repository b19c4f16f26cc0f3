package wire

import (
	"fmt"
	"strings"
)

// DSCPMatch matches an IP header's DSCP: dscp&Mask == Value&Mask.
type DSCPMatch struct {
	Value uint8 `yaml:"value" json:"value"`
	Mask  uint8 `yaml:"mask" json:"mask"`
}

// Config says how to find INT inside packets and which producer quirks to accept. The zero
// value is not useful; start from DefaultConfig.
type Config struct {
	// DSCP values that mark INT over TCP/UDP. A match commits the decoder: INT that then
	// fails to parse is an error. Defaults: the spec's example value 0x17, and the 0x01 bit
	// as ONOS marks it.
	DSCP []DSCPMatch `yaml:"dscp" json:"dscp"`
	// ProbeShim: with no DSCP match, accept INT when a shim at the L4 payload validates.
	ProbeShim bool `yaml:"probe_shim" json:"probe_shim"`
	// INTPort is the v2.x UDP destination port that marks INT (NPT 1 or 2); 0: none.
	INTPort uint16 `yaml:"int_port" json:"int_port"`
	// TCPShimBeforeOptions: the shim sits after the fixed 20-byte TCP header, before any
	// options (as Intel host-int does), instead of after the options.
	TCPShimBeforeOptions bool `yaml:"tcp_shim_before_options" json:"tcp_shim_before_options"`
	// GPEPort is the VXLAN-GPE UDP port; GPENextProtocols the next-protocol codepoints
	// that mean INT.
	GPEPort          uint16  `yaml:"gpe_port" json:"gpe_port"`
	GPENextProtocols []uint8 `yaml:"gpe_next_protocols" json:"gpe_next_protocols"`
	// GenevePort is the Geneve UDP port; GeneveClasses the option classes that carry INT.
	GenevePort    uint16   `yaml:"geneve_port" json:"geneve_port"`
	GeneveClasses []uint16 `yaml:"geneve_classes" json:"geneve_classes"`
	// GREProtocol is the GRE protocol type that carries INT; 0: none (the spec's TBD_INT
	// was never assigned).
	GREProtocol uint16 `yaml:"gre_protocol" json:"gre_protocol"`
	// Quirks of real producers, off by default, named in config.
	Quirks Quirks `yaml:"quirks" json:"quirks"`
	// DTA wire options.
	DTA DTAConfig `yaml:"dta" json:"dta"`
}

// Quirks are producer deviations from the specifications (docs/wire-formats.md, "Producers
// and their quirks"). Without its quirk, a report showing a known deviation is an error whose
// Setting names the quirk; with it, the report decodes to what the producer meant.
type Quirks struct {
	// INTCollector: INT v1.0 queue id/occupancy split 16/16, and level-2 port ids read as
	// one 4-byte word (tu-nv/INTCollector's parser and generator).
	INTCollector bool `yaml:"intcollector" json:"intcollector"`
	// TR05Ver1: a TR v0.5 layout sent with Ver=1 (INTCollector's test generator). A Ver=1
	// header whose second nibble is an NProto (0-2) rather than a v1.0 Length (4-15), and
	// whose v0.5 reserved bits are zero, is decoded as v0.5.
	TR05Ver1 bool `yaml:"tr05_ver1" json:"tr05_ver1"`
	// INTCollectorGen: the packet generators of INTCollector and of GEANT's fork
	// (benchmark/INTReport.py, benchmark/modules/headers.py): everything TR05Ver1 and
	// INTCollector accept (the latter for INT v0.5 queue words too), a TR v1.0 Length nibble
	// below 4 (taken as 4 + popcount(RepMdBits)), an INT v1.0 header sent with Ver 0, and a
	// v0.5 shim Length of 0 (taken from InsCnt and TotalHopCnt).
	INTCollectorGen bool `yaml:"intcollector_gen" json:"intcollector_gen"`
	// GEANT: GEANT int-platforms' "int_v1.0" switches and DPDK pipeline: instruction bits
	// 0-7 in the mask's low byte, 8-byte ingress/egress timestamps, level-2 ports as one
	// 16|16 word, a per-source sequence number in the v1.0 header's last 16 bits, and the
	// testbed's header with a 2-bit Ver of 1 and v0.5 InsCnt/MaxHop/TotalHop counts and tail.
	GEANT bool `yaml:"geant" json:"geant"`
	// HostINT: Intel host-int's shim Type 3 (INT v0.5, a 4-byte flow sequence number after
	// the stack, then the tail unless a sink removed it), with INT after the first 20 bytes
	// of TCP as tcp_shim_before_options places it.
	HostINT bool `yaml:"host_int" json:"host_int"`
}

// QuirkNames lists the quirks by their config key, for flags and messages.
func QuirkNames() []string {
	return []string{"intcollector", "tr05_ver1", "intcollector_gen", "geant", "host_int"}
}

// Set turns on the quirk named by its config key (QuirkNames).
func (q *Quirks) Set(name string) error {
	switch name {
	case "intcollector":
		q.INTCollector = true
	case "tr05_ver1":
		q.TR05Ver1 = true
	case "intcollector_gen":
		q.INTCollectorGen = true
	case "geant":
		q.GEANT = true
	case "host_int":
		q.HostINT = true
	default:
		return fmt.Errorf("quirks.%s: unknown quirk (allowed: %s)", name, strings.Join(QuirkNames(), ", "))
	}
	return nil
}

// DTAConfig holds the per-listener DTA options.
type DTAConfig struct {
	// HeaderLen is the base header layout: 2 (default translator build: opcode, flags) or
	// 3 (NACK tracking: opcode, sequence, flags).
	HeaderLen int `yaml:"header_len" json:"header_len"`
	// KeyLen and DataLen are the key and value widths in bytes (the public prototype: 4
	// and 4; its build also allows 12 or 28 data bytes).
	KeyLen  int `yaml:"key_len" json:"key_len"`
	DataLen int `yaml:"data_len" json:"data_len"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		DSCP:             []DSCPMatch{{Value: 0x17, Mask: 0x3f}, {Value: 0x01, Mask: 0x01}},
		ProbeShim:        true,
		GPEPort:          4790,
		GPENextProtocols: []uint8{0x05, 0x08, 0x80, 0x82},
		GenevePort:       6081,
		GeneveClasses:    []uint16{0x0103},
		DTA:              DTAConfig{HeaderLen: 2, KeyLen: 4, DataLen: 4},
	}
}

// Validate reports the first invalid setting, naming the key, the value and what is allowed.
func (c *Config) Validate() error {
	for i, m := range c.DSCP {
		if m.Value > 0x3f || m.Mask > 0x3f || m.Mask == 0 {
			return fmt.Errorf("dscp[%d]: value 0x%02x mask 0x%02x: value and mask must be 6-bit, mask non-zero", i, m.Value, m.Mask)
		}
	}
	if len(c.DSCP) > 8 {
		return fmt.Errorf("dscp: %d matches: at most 8 are allowed", len(c.DSCP))
	}
	if len(c.GPENextProtocols) > 8 {
		return fmt.Errorf("gpe_next_protocols: %d codepoints: at most 8 are allowed", len(c.GPENextProtocols))
	}
	if len(c.GeneveClasses) > 8 {
		return fmt.Errorf("geneve_classes: %d classes: at most 8 are allowed", len(c.GeneveClasses))
	}
	if h := c.DTA.HeaderLen; h != 2 && h != 3 {
		return fmt.Errorf("dta.header_len: %d: allowed are 2 (default translator) and 3 (NACK tracking)", h)
	}
	if k := c.DTA.KeyLen; k < 1 || k > maxDTAKey {
		return fmt.Errorf("dta.key_len: %d: allowed is 1 to %d bytes", k, maxDTAKey)
	}
	if v := c.DTA.DataLen; v < 1 || v > maxDTAData {
		return fmt.Errorf("dta.data_len: %d: allowed is 1 to %d bytes", v, maxDTAData)
	}
	return nil
}
