package xdp

// The XDP program's object is built from bpf/intake.c by bpf2go (clang) and committed with
// its Go bindings (intake_bpfel.go: the object embedded, the names of its maps, programs
// and constants, and the enums outcome and lift as Go constants), so that `go build` and CI
// need no clang. TestObjectMatchesSource rebuilds both with the line below when clang is
// present and compares. bpf2go strips DWARF and names the sources relative to this
// directory, so the object does not depend on the checkout's path. The two multiarch
// include directories hold asm/types.h (only the host's exists; their contents are the
// same).
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang -cflags "-O2 -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu" -target bpfel -tags linux -no-global-types -type outcome -type lift intake bpf/intake.c
