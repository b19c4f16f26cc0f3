package xdp

// The XDP program's object is built from bpf/intake.c by clang and committed, so that
// `go build` and CI need no clang (TestObjectMatchesSource rebuilds it and compares when
// clang is present). DWARF is stripped: it holds the build directory, which would make the
// object differ between checkouts; BTF (which cilium/ebpf needs for the maps) stays.
//
//go:generate sh -c "clang -O2 -g -target bpf -I/usr/include/$(uname -m)-linux-gnu -c bpf/intake.c -o intake_bpfel.o && llvm-strip -g intake_bpfel.o"
