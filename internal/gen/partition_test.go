package gen

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
	"github.com/intake-int/intake/wire"
)

// TestPartition: with Parts 3, every report of member i's stream, as a collector decodes
// it, is owned by member i (partition.ReportOwner), and the members' streams together reach
// every flow, each flow-keyed flow from one member only.
func TestPartition(t *testing.T) {
	for name, edit := range map[string]func(*Config){
		"tr2.0/md/batch8": func(c *Config) { c.Batch = 8 },
		"tr2.0/xd":        func(c *Config) { c.Mode = "xd" },
		"tr1.0/md":        func(c *Config) { c.Format = "tr1.0" },
		"dta/key-write":   func(c *Config) { c.Format, c.DTA.Op, c.Batch = "dta", "key-write", 4 },
		"dta/postcard":    func(c *Config) { c.Format, c.DTA.Op, c.DTA.KeyLen = "dta", "postcard", 13 },
		"dta/append":      func(c *Config) { c.Format, c.DTA.Op = "dta", "append" },
		"int-label":       func(c *Config) { c.Format = "int-label" },
	} {
		t.Run(name, func(t *testing.T) {
			c := DefaultConfig()
			c.Ring = 200
			edit(&c)
			flowOwner := map[int]int{}
			seen := 0
			for part := range 3 {
				c.Part, c.Parts = part, 3
				g := mustNew(t, c)
				dec, err := wire.NewDecoder(g.WireConfig())
				if err != nil {
					t.Fatal(err)
				}
				var rd wire.Reader
				var got telemetry.Report
				err = g.Walk(uint64(g.Len()), func(i uint64, b []byte, rs []telemetry.Report) error {
					rd.Reset(dec, g.Input(), b)
					for j := range rs {
						if err := rd.Next(&got); err != nil {
							return err
						}
						if o := partition.ReportOwner(&got, 3); o != part {
							return fmt.Errorf("datagram %d report %d: owner %d in member %d's stream", i, j, o, part)
						}
						seen++
					}
					return nil
				}, nil)
				if err != nil {
					t.Fatal(err)
				}
				for f, n := range g.Truth(uint64(g.Len())).ByFlow {
					if n == 0 {
						continue
					}
					if o, ok := flowOwner[f]; ok && o != part && c.Format != "int-label" && c.DTA.Op != "append" {
						t.Errorf("flow %d in members %d and %d", f, o, part)
					}
					flowOwner[f] = part
				}
			}
			if len(flowOwner) != c.Flows || seen == 0 {
				t.Errorf("%d of %d flows reached (%d reports)", len(flowOwner), c.Flows, seen)
			}
		})
	}
}

// TestPartitionOff: Parts 0 and 1 leave the stream as it was.
func TestPartitionOff(t *testing.T) {
	c := DefaultConfig()
	c.Ring = 100
	a := mustNew(t, c)
	c.Part, c.Parts = 0, 1
	b := mustNew(t, c)
	if !bytes.Equal(a.ring, b.ring) {
		t.Error("Parts 1 changed the stream")
	}
	c.Part, c.Parts = 3, 3
	if _, err := New(c); err == nil || err.Error() != "collectors: member 3 of 3: allowed are 1 to 1024 collectors" {
		t.Errorf("member 3 of 3: %v", err)
	}
	c.Flows, c.Part, c.Parts = 1, 0, 50
	for c.Part = 0; c.Part < 50; c.Part++ {
		if _, err := New(c); err != nil {
			if want := fmt.Sprintf("collectors: member %d of 50 owns none of the stream's 1 flows (more flows, fewer collectors)", c.Part); err.Error() != want {
				t.Errorf("got %v, want %s", err, want)
			}
			return
		}
	}
	t.Error("every one of 50 members owns the one flow")
}
