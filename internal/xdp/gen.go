package xdp

// The XDP programs' objects are built from bpf/intake.c (the listener's program) and
// bpf/sink.c (the INT sink's, docs/sink.md) by bpf2go (clang) and committed with
// their Go bindings (intake_bpfel.go, sink_bpfel.go: the object embedded, the names of its
// maps, programs and constants, and the enums outcome, lift and sink_outcome as Go
// constants), so that `go build` and CI need no clang. TestObjectMatchesSource rebuilds each
// with its line below when clang is present and compares. bpf2go strips DWARF and names the sources relative to this
// directory, so the object does not depend on the checkout's path. The two multiarch
// include directories hold asm/types.h (only the host's exists; their contents are the
// same).
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -target bpfel -tags linux -no-global-types -type outcome -type lift intake bpf/intake.c
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -target bpfel -tags linux -no-global-types -type sink_outcome sink bpf/sink.c
