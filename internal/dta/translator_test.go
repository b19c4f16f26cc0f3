package dta

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"testing"

	"github.com/intake-int/intake/event"
	"github.com/intake-int/intake/telemetry"
)

func smallConfig(dir string) Config {
	c := DefaultConfig()
	c.DataDir = dir
	c.KeyWrite.Slots, c.Paths.Slots, c.KeyIncrement.Slots = 1<<8, 1<<8, 1<<8
	c.Postcard.Chunks, c.Postcard.Cache, c.Postcard.Values = 1<<8, 1<<4, 1<<8
	c.Append.Entries = 1 << 6
	return c
}

func dtaRep(op telemetry.DTAOp, key uint32, keyLen, dataLen uint8) telemetry.Report {
	r := telemetry.Report{Format: telemetry.FormatDTA}
	r.DTA.Op, r.DTA.KeyLen, r.DTA.DataLen = op, keyLen, dataLen
	binary.BigEndian.PutUint32(r.DTA.Key[:], key)
	binary.BigEndian.PutUint32(r.DTA.Data[:], 0xa1b2c3d4)
	return r
}

// Bad input reaching the translator is counted by reason, exactly, and nothing of it is
// written: every region is still all zeros after the caches are flushed. Each reason comes a
// different number of times, so that two counters swapped would show.
func TestTranslatorBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.KeyWrite.Layout = "compat" // 4-byte keys only: the key_length reason
	cfg.KeyIncrement.Layout = "compat"
	tr := NewTranslator(cfg, Deps{Workers: 1})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var in []telemetry.Report
	add := func(n int, r telemetry.Report) {
		for range n {
			in = append(in, r)
		}
	}
	// opcode ×1: an opcode no primitive has (the decoder rejects these too; a report built
	// in process must not slip through).
	add(1, dtaRep(telemetry.DTAOp(9), 1, 4, 4))
	// redundancy ×2: Key-Write 5 > max 4, Key-Increment 3 > max 2 (0 is the decoder's).
	kw := dtaRep(telemetry.DTAKeyWrite, 2, 4, 4)
	kw.DTA.Redundancy = 5
	add(1, kw)
	ki := dtaRep(telemetry.DTAKeyIncrement, 3, 4, 0)
	ki.DTA.Redundancy, ki.DTA.Counter = 3, 7
	add(1, ki)
	// list_id ×3: 16, 17 and 2^32-1 with 16 lists.
	for _, l := range []uint32{16, 17, 1<<32 - 1} {
		ap := dtaRep(telemetry.DTAAppend, 0, 0, 4)
		ap.DTA.ListID = l
		add(1, ap)
	}
	// key_length ×4: an 8-byte key for the compat Key-Write and Key-Increment stores, and a
	// 41-byte postcard key (×2; the cache holds keys up to 40 bytes).
	kw8 := dtaRep(telemetry.DTAKeyWrite, 4, 8, 4)
	kw8.DTA.Redundancy = 2
	add(1, kw8)
	ki8 := dtaRep(telemetry.DTAKeyIncrement, 5, 8, 0)
	ki8.DTA.Redundancy, ki8.DTA.Counter = 1, 1
	add(1, ki8)
	pcLong := dtaRep(telemetry.DTAPostcard, 6, 41, 4)
	pcLong.DTA.Hop = 1
	add(2, pcLong)
	// data_length ×5: 8-byte data for 4-byte Key-Write values (×3), Append entries (×1) and
	// postcard values (×1).
	kwWide := dtaRep(telemetry.DTAKeyWrite, 7, 4, 8)
	kwWide.DTA.Redundancy = 1
	add(3, kwWide)
	apWide := dtaRep(telemetry.DTAAppend, 0, 0, 8)
	apWide.DTA.ListID = 3
	add(1, apWide)
	pcWide := dtaRep(telemetry.DTAPostcard, 8, 4, 8)
	pcWide.DTA.Hop = 2
	add(1, pcWide)
	// hop ×6: 0 (the decoder's too) and 6 > B = 5.
	for _, h := range []uint8{0, 6, 6, 7, 200, 255} {
		pc := dtaRep(telemetry.DTAPostcard, 9, 4, 4)
		pc.DTA.Hop = h
		add(1, pc)
	}
	for i := range in {
		tr.Process(0, &in[i])
	}
	tr.Flush(0)
	want := [numBad]uint64{BadOpcode: 1, BadRedundancy: 2, BadListID: 3, BadKeyLength: 4, BadDataLength: 5, BadHop: 6}
	for i, n := range want {
		if got := tr.Bad(i); got != n {
			t.Errorf("bad %s = %d, want %d", BadReasons[i], got, n)
		}
	}
	for i, n := range WrittenNames {
		if got := tr.Written(i); got != 0 {
			t.Errorf("written %s = %d, want 0", n, got)
		}
	}
	if err := tr.Stop(context.Background()); err != nil { // flushes the Append batches and the postcard cache
		t.Fatal(err)
	}
	if f := tr.Cache.Flushed.Load() + tr.Cache.Early.Load() + tr.Cache.Complete.Load(); f != 0 {
		t.Errorf("%d postcard chunks written", f)
	}
	ro, err := OpenStoresReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for _, r := range ro.Regions() {
		for i, b := range r.Data {
			if b != 0 {
				t.Errorf("%s: byte %d is %#x: something was written", r.Path, i, b)
				break
			}
		}
	}
}

// int.event_list: a list of its own, 32-byte entries; the messages as docs/config.md shows.
func TestEventListConfig(t *testing.T) {
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.INT.EventList = 2 }, "int.event_list: 2: an event entry is 32 bytes: needs append.value_bytes 32 (it is 4)"},
		{func(c *Config) { c.INT.EventList, c.Append.ValueBytes = 1, 32 }, "int.event_list: 1: the list of drop or queue reports (int.drop_list 0, int.queue_list 1): events need a list of their own"},
		{func(c *Config) { c.INT.EventList = 16 }, "int.event_list: 16: allowed is -1 (none) or a list id below append.lists (16)"},
		{func(c *Config) { c.INT.EventList = -2 }, "int.event_list: -2: allowed is -1 (none) or a list id below append.lists (16)"},
		{func(c *Config) { c.INT.EventList, c.Append.ValueBytes = 2, 32 }, ""},
	} {
		cfg := DefaultConfig()
		c.set(&cfg)
		err := cfg.Validate()
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// Each measurement's ids land where docs/dta-layout.md says, and only those.
func TestEncodeEvent(t *testing.T) {
	var fk telemetry.FlowKey
	fk.SetAddrs(netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2"))
	fk.SrcPort, fk.DstPort, fk.Proto = 1, 2, 6
	var kb [40]byte
	flow := fmt.Sprintf("%08x", uint32(Hash64(DefaultSeed, FlowKeyBytes(&kb, &fk))))
	key := event.Key{Flow: fk, Switch: 0x0a0b0c0d, Port: 0x01020304, Queue: 0x0111, Buffer: 0x22, Reason: 0x33, HWID: 0x44}
	for _, c := range []struct {
		m    event.Measurement
		want string // bytes 0-15: kind, scope, measurement, id8, switch, id32, flow
	}{
		{event.FlowLatency, "03010100" + "00000000" + "00000000" + flow},
		{event.FlowHopLatency, "03010200" + "0a0b0c0d" + "00000000" + flow},
		{event.FlowPath, "03010300" + "00000000" + "00000000" + flow},
		{event.QueueOccupancy, "03010400" + "0a0b0c0d" + "00000111" + "00000000"}, // a 16-bit queue id whole
		{event.QueueCongestion, "03010500" + "0a0b0c0d" + "00000111" + "00000000"},
		{event.TxUtilization, "03010600" + "0a0b0c0d" + "01020304" + "00000000"},
		{event.BufferOccupancy, "03010722" + "0a0b0c0d" + "00000000" + "00000000"},
		{event.Drops, "03010833" + "0a0b0c0d" + "00000000" + "00000000"},
		{event.SeqGaps, "03010944" + "0a0b0c0d" + "00000000" + "00000000"},
	} {
		e := event.Event{Kind: event.KindChange, Scope: event.ScopeE2E, Measurement: c.m, Key: key, Value: 0x1122334455667788, Time: 0x0102030405060708}
		var b [EventBytes]byte
		EncodeEvent(&b, &e, DefaultSeed)
		if got, want := hex.EncodeToString(b[:]), c.want+"1122334455667788"+"0102030405060708"; got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.m, got, want)
		}
	}
}
