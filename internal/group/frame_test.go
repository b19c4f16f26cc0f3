package group

import (
	"errors"
	"strings"
	"testing"

	"github.com/intake-int/intake/partition"
	"github.com/intake-int/intake/telemetry"
)

// TestFrame: a frame carries its reports, each with its owner key, in order; its count is
// readable alone; a damaged frame is refused with where.
func TestFrame(t *testing.T) {
	rs := benchReports()[:3]
	b := beginFrame(nil)
	var keys [][]byte
	for i := range rs {
		var kb partition.KeyBuf
		k := partition.ReportKey(&kb, &rs[i])
		keys = append(keys, append([]byte(nil), k...))
		b = appendEntry(b, k, &rs[i])
	}
	endFrame(b, len(rs))
	if frameCount(b) != 3 {
		t.Fatalf("count %d", frameCount(b))
	}
	i := 0
	err := eachEntry(b, func(key, rep []byte) error {
		var r telemetry.Report
		if err := unmarshalReport(&r, rep); err != nil {
			return err
		}
		if string(key) != string(keys[i]) || r.Flow != rs[i].Flow || r.Seq != rs[i].Seq || r.NHops != 5 {
			t.Errorf("entry %d: key %x report %+v", i, key, r.Flow)
		}
		i++
		return nil
	})
	if err != nil || i != 3 {
		t.Fatalf("%d entries: %v", i, err)
	}
	for _, c := range []struct {
		frame []byte
		want  string
	}{
		{b[:len(b)-1], "entry 2 of 3: truncated report"},
		{append(append([]byte(nil), b...), 0), "1 bytes after its 3 entries"},
		{[]byte{4, 0, 0}, "version 4, this intake reads 1 to 3"},
		{[]byte{1, 0, 1, 40}, "entry 0 of 1: truncated key"},
	} {
		err := eachEntry(c.frame, func(_, _ []byte) error { return nil })
		if !errors.Is(err, errFrame) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

// FuzzFrame: a raw record is bytes from the brokers: reading it never panics, and every
// entry it yields lies inside it.
func FuzzFrame(f *testing.F) {
	rs := benchReports()[:2]
	b := beginFrame(nil)
	for i := range rs {
		var kb partition.KeyBuf
		b = appendEntry(b, partition.ReportKey(&kb, &rs[i]), &rs[i])
	}
	endFrame(b, 2)
	f.Add(b)
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{1, 255, 255, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		eachEntry(b, func(key, rep []byte) error {
			n += len(key) + len(rep)
			return nil
		})
		if n > len(b) {
			t.Fatalf("entries of %d bytes in a frame of %d", n, len(b))
		}
	})
}

// FuzzStateRecord: a state record's key and value come from the brokers: reading them
// never panics, and a header that parses writes back the same bytes.
func FuzzStateRecord(f *testing.F) {
	h := header{offset: 42, generation: 7, chunks: 2, imageSize: 528, flows: 3}
	f.Add("flowcache/p3", h.append(nil))
	f.Add("detect/p3.1", []byte{1, 2})
	f.Add("p", []byte{})
	f.Fuzz(func(t *testing.T, key string, v []byte) {
		if state, p, chunk, ok := parseKey(key); ok && (p < 0 || chunk < -1 || state == "") {
			t.Fatalf("key %q: state %q partition %d chunk %d", key, state, p, chunk)
		}
		if h, err := parseHeader(v); err == nil && string(h.append(nil)) != string(v) {
			t.Fatalf("header %x reads as %+v", v, h)
		}
	})
}
