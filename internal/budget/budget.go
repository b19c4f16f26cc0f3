// Package budget owns the resource budget of a configuration: how much memory and disk each
// component will take at the sizes configured (docs/config.md, "Budget"). Each component
// computes its own items from its configuration (a Budget method on its config section);
// package config sums them, compares the total with what the machine has (Available) and
// refuses a configuration that cannot fit, so that a table too large for the machine is an
// error at --check and not an out-of-memory kill at start.
//
// Figures are upper bounds: memory that the kernel only makes resident when touched (the
// flow cache's table, the DTA regions) is counted in full, since a collector under load
// touches it.
package budget

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Item is one part of one component: its memory (resident bytes at worst) and disk (bytes
// of files it creates, on the filesystem of Path).
type Item struct {
	Component string // "flowcache", "detect", ...
	Part      string // "table", "rings", ...
	Memory    int64
	Disk      int64
	// Path is where the disk bytes go (a directory), empty for memory only.
	Path string
	// Present is the part of Disk already there (files reopened at their size): it needs
	// no new space.
	Present int64
	// Note says how the figure is computed, e.g. "16384 rows × 12 buckets".
	Note string
	// Outside marks memory the Go runtime does not manage (kernel socket buffers, mapped
	// files and anonymous mappings): GoLimit leaves it out.
	Outside bool
}

// Budget is a configuration's items.
type Budget []Item

// Memory is the sum of the items' memory, saturating instead of overflowing.
func (b Budget) Memory() int64 {
	var n int64
	for _, it := range b {
		n = Add(n, it.Memory)
	}
	return n
}

// GoLimit is the memory of the items the Go runtime manages (not Outside): what its soft
// memory limit is set to (runtime/debug.SetMemoryLimit), so that the garbage of queries is
// collected before the heap passes the budget rather than at GOGC's doubling.
func (b Budget) GoLimit() int64 {
	var n int64
	for _, it := range b {
		if !it.Outside {
			n = Add(n, it.Memory)
		}
	}
	return n
}

// Process returns the items of the process itself for a budget whose components are b: the
// runtime, code and goroutine stacks, measured (an idle serve is 18 MiB resident, 15 MiB of
// it code), and the headroom the collector's garbage and the answers in flight take under
// the soft memory limit: a quarter of the Go-managed items, at least 64 MiB.
func Process(b Budget) Budget {
	head := max(b.GoLimit()/4, 64<<20)
	return Budget{
		{Component: "process", Part: "runtime and code", Memory: 32 << 20, Note: "Go runtime, code and goroutine stacks (18 MiB idle, measured)"},
		{Component: "process", Part: "garbage headroom", Memory: head,
			Note: fmt.Sprintf("garbage and answers in flight: max(64 MiB, a quarter of the Go-managed %s), held by the soft memory limit", Bytes(b.GoLimit()))},
	}
}

// Disk returns the disk bytes by path.
func (b Budget) Disk() map[string]int64 {
	m := map[string]int64{}
	for _, it := range b {
		if it.Disk > 0 {
			m[it.Path] = Add(m[it.Path], it.Disk)
		}
	}
	return m
}

// newDisk returns the disk bytes not yet present, by path.
func (b Budget) newDisk() map[string]int64 {
	m := map[string]int64{}
	for _, it := range b {
		if it.Disk > 0 {
			m[it.Path] = Add(m[it.Path], max(it.Disk-it.Present, 0))
		}
	}
	return m
}

// Add adds non-negative sizes, saturating at the largest int64.
func Add(a, b int64) int64 {
	if a > maxInt64-b {
		return maxInt64
	}
	return a + b
}

// Mul multiplies non-negative sizes, saturating at the largest int64: a configuration's
// factors are validated one by one, their product is not.
func Mul(fs ...int64) int64 {
	n := int64(1)
	for _, f := range fs {
		if f <= 0 {
			return 0
		}
		if n > maxInt64/f {
			return maxInt64
		}
		n *= f
	}
	return n
}

const maxInt64 = 1<<63 - 1

// Bytes formats n in binary units: "68.5 MiB".
func Bytes(n int64) string {
	if n == maxInt64 {
		return "more than 8 EiB"
	}
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, u := float64(n), -1
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	return fmt.Sprintf("%.1f %ciB", f, units[u])
}

// Write prints the breakdown: one line per item, then the totals.
func (b Budget) Write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "COMPONENT\tPART\tMEMORY\tDISK\tHOW\n")
	for _, it := range b {
		disk := "-"
		if it.Disk > 0 {
			disk = Bytes(it.Disk) + " in " + it.Path
		}
		mem := "-"
		if it.Memory > 0 {
			mem = Bytes(it.Memory)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", it.Component, it.Part, mem, disk, it.Note)
	}
	fmt.Fprintf(tw, "total\t\t%s\t", Bytes(b.Memory()))
	disk := b.Disk()
	paths := make([]string, 0, len(disk))
	for p := range disk {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var ds []string
	for _, p := range paths {
		ds = append(ds, Bytes(disk[p])+" in "+p)
	}
	if len(ds) == 0 {
		ds = []string{"-"}
	}
	fmt.Fprintf(tw, "%s\t\n", strings.Join(ds, ", "))
	tw.Flush()
}

// String is the breakdown as Write prints it.
func (b Budget) String() string {
	var buf bytes.Buffer
	b.Write(&buf)
	return buf.String()
}

// Machine is what the machine has for a budget.
type Machine struct {
	// MemAvailable is /proc/meminfo's MemAvailable, bytes (-1: unknown).
	MemAvailable int64
	// Free returns the bytes free for an unprivileged user on the filesystem holding path
	// (the nearest existing ancestor), or -1 when unknown.
	Free func(path string) int64
}

// Local is this machine.
func Local() Machine { return Machine{MemAvailable: memAvailable("/proc/meminfo"), Free: FreeBytes} }

// memAvailable reads MemAvailable from a meminfo file, -1 when it cannot.
func memAvailable(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 1<<16))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:")
		if !ok {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 2 && fs[1] == "kB" {
			if n, err := strconv.ParseInt(fs[0], 10, 64); err == nil && n >= 0 && n < maxInt64/1024 {
				return n * 1024
			}
		}
	}
	return -1
}

// Error is a budget that does not fit: the message names what is short and carries the
// breakdown.
type Error struct {
	Msg    string
	Budget Budget
}

func (e *Error) Error() string {
	return e.Msg + " (--force starts anyway)\n" + strings.TrimRight(e.Budget.String(), "\n")
}

// Check compares b with what m has: the memory total with MemAvailable, and per path the
// disk bytes not yet present with the filesystem's free space. (Files on tmpfs are memory
// too: their component counts them in Memory as well.)
func (b Budget) Check(m Machine) error {
	if mem := b.Memory(); m.MemAvailable >= 0 && mem > m.MemAvailable {
		return &Error{Msg: fmt.Sprintf("configuration needs %s of memory, %s is available (MemAvailable)", Bytes(mem), Bytes(m.MemAvailable)), Budget: b}
	}
	if m.Free == nil {
		return nil
	}
	disk := b.newDisk()
	paths := make([]string, 0, len(disk))
	for p := range disk {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if free := m.Free(p); free >= 0 && disk[p] > free {
			return &Error{Msg: fmt.Sprintf("configuration needs %s of new files in %s, its filesystem has %s free", Bytes(disk[p]), p, Bytes(free)), Budget: b}
		}
	}
	return nil
}
