package main

import "testing"

func TestNanosPath(t *testing.T) {
	for ns, want := range map[float64]string{0: "0 ns", 850: "850 ns", 1000: "1.00 µs", 20412: "20.4 µs", 123456: "123 µs",
		1.25e6: "1.25 ms", 2e9: "2.00 s", 99.96e3: "100 µs", 10.5: "10.5 ns", 33.25: "33.2 ns", 0.4: "0 ns"} {
		if got := nanos(ns); got != want {
			t.Errorf("nanos(%g) = %q, want %q", ns, got, want)
		}
	}
	v := uint64(3100)
	if got := nanosOf(&v) + " " + nanosOf[float64](nil); got != "3.10 µs -" {
		t.Errorf("nanosOf: %q", got)
	}
	if got := pathText([]uint32{14, 2, 10}); got != "14 > 2 > 10" {
		t.Errorf("pathText: %q", got)
	}
}
