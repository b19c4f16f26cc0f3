package dta

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestReaderKernelArray: a reader maps the array a region's header names when it is one of
// intake's stores of the header's size, and reads the file otherwise (the id comes from a
// file, which is untrusted).
func TestReaderKernelArray(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating and opening BPF arrays needs root")
	}
	h := KIHeader(KIConfig{Layout: "default", Slots: 64, MaxRedundancy: 2}, 1)
	path := filepath.Join(t.TempDir(), FileKI)
	w, err := CreateRegion(path, h, false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	copy(w.Data, bytes.Repeat([]byte{0xf1}, len(w.Data)))
	array := func(name string, fill byte) uint32 {
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 64, Flags: unix.BPF_F_MMAPABLE})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		for i := uint32(0); i < 64; i++ {
			m.Put(i, uint64(fill)*0x0101010101010101)
		}
		info, _ := m.Info()
		id, _ := info.ID()
		return uint32(id)
	}
	for _, c := range []struct {
		name string
		fill byte
		want byte
	}{{"ki_store", 0xa2, 0xa2}, {"other", 0xb3, 0xf1}} {
		w.counter(offKernelMap).Store(uint64(array(c.name, c.fill)))
		r, err := OpenRegion(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(r.Data, bytes.Repeat([]byte{c.want}, len(r.Data))) {
			t.Errorf("array %q: reader sees %x..., want %x", c.name, r.Data[:8], c.want)
		}
		r.Close()
	}
}
