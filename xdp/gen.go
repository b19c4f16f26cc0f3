package xdp

// The XDP program's object is built from bpf/intake.c by clang and committed, so that
// `go build` and CI need no clang (TestObjectMatchesSource rebuilds it and compares when
// clang is present). DWARF is stripped, and the BTF line info (which cilium/ebpf keeps for
// the verifier's log) names the source relative to this directory
// (-fdebug-compilation-dir=.): either would otherwise hold the checkout's path and make
// the object differ between checkouts.
//
//go:generate sh -c "clang -O2 -g -target bpf -mcpu=v3 -fdebug-compilation-dir=. -I/usr/include/$(uname -m)-linux-gnu -c bpf/intake.c -o intake_bpfel.o && llvm-strip -g intake_bpfel.o"
