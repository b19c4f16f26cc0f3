package ingest

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Port sharing. The listeners' sockets set SO_REUSEPORT, so any socket of the same user that
// also sets it (a second `intake serve`, any program) can bind the same port and the kernel
// then gives it a share of the datagrams, or all of them when it binds a more specific
// address. Nothing in the socket API tells the first owner, so the Receiver looks: at Start
// and then every portCheckEvery, it reads the kernel's table of UDP sockets (/proc/net/udp
// and udp6 on Linux) and checks that every socket on a listener's port whose address
// overlaps the listener's is one of its own (by inode). A foreign one stops Start; found
// later it is counted (intake_listener_foreign_sockets_total) and logged, at most once per
// listener every foreignLogEvery.

const (
	portCheckEvery  = 10 * time.Second
	foreignLogEvery = time.Minute
)

// ForeignSocket is a UDP socket on a listener's port that is not the listener's.
type ForeignSocket struct {
	Listener string         `json:"listener"`
	Local    netip.AddrPort `json:"local"`  // as bound
	Remote   netip.AddrPort `json:"remote"` // a connected socket's peer; zero when not connected
	Inode    uint64         `json:"inode"`
	UID      int            `json:"uid"`
	PID      int            `json:"pid,omitempty"` // the process holding it, when this process may see it
}

func (f ForeignSocket) String() string {
	s := fmt.Sprintf("udp %s (inode %d, uid %d", f.Local, f.Inode, f.UID)
	if f.PID > 0 {
		s += fmt.Sprintf(", pid %d", f.PID)
	}
	return s + ")"
}

// udpSocket is one line of the kernel's UDP socket table.
type udpSocket struct {
	local, remote netip.AddrPort
	inode         uint64
	uid           int
}

// portState is what the periodic check remembers.
type portState struct {
	mu      sync.Mutex
	seen    map[uint64]bool // foreign inodes already counted
	lastLog map[string]time.Time
	found   []ForeignSocket // the last check's
}

// overlaps reports whether a socket bound to b takes datagrams a listener bound to a could
// get: the same port and either address a wildcard, or the same address.
func overlaps(a, b netip.Addr) bool {
	a, b = a.Unmap(), b.Unmap()
	return !a.IsValid() || !b.IsValid() || a.IsUnspecified() || b.IsUnspecified() || a == b
}

// foreign returns the sockets of table on the listeners' ports that are not theirs.
func (rcv *Receiver) foreign(table []udpSocket) []ForeignSocket {
	own := map[uint64]bool{}
	for _, w := range rcv.workers {
		if w.sock != nil && w.sock.ino != 0 {
			own[w.sock.ino] = true
		}
	}
	var out []ForeignSocket
	for _, l := range rcv.listeners {
		l.mu.Lock()
		bound := l.boundAddr
		l.mu.Unlock()
		ap, err := netip.ParseAddrPort(bound)
		if err != nil {
			continue
		}
		for _, s := range table {
			if s.local.Port() != ap.Port() || own[s.inode] || !overlaps(ap.Addr(), s.local.Addr()) {
				continue
			}
			out = append(out, ForeignSocket{Listener: l.cfg.Name, Local: s.local, Remote: s.remote, Inode: s.inode, UID: s.uid})
		}
	}
	return out
}

// portTaken reports whether another socket than s holds s's port where s would share its
// datagrams; false when the table cannot be read (Start's check then says why).
func portTaken(s *socket) bool {
	table, _ := udpTable()
	for _, t := range table {
		if t.local.Port() == uint16(s.local.Port) && t.inode != s.ino && overlaps(s.local.AddrPort().Addr(), t.local.Addr()) {
			return true
		}
	}
	return false
}

// ForeignSockets reads the kernel's socket table now and returns the sockets that share a
// listener's port without being its own. The Receiver must be running.
func (rcv *Receiver) ForeignSockets() ([]ForeignSocket, error) {
	table, err := udpTable()
	if err != nil {
		return nil, err
	}
	return rcv.foreign(table), nil
}

// foreignError is Start's error for sockets found at start.
func foreignError(fs []ForeignSocket) error {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		f.PID = socketPID(f.Inode)
		b.WriteString(f.String())
	}
	return fmt.Errorf("listener %s: port %d is also bound by %s: with SO_REUSEPORT the kernel would give it a share of the datagrams (another intake serve, or a program of the same user); stop it or pick another port",
		fs[0].Listener, fs[0].Local.Port(), b.String())
}

// checkPorts is the periodic check: new foreign sockets are counted, and logged at most once
// per listener every foreignLogEvery.
func (rcv *Receiver) checkPorts(now time.Time) {
	fs, err := rcv.ForeignSockets()
	if err != nil {
		return
	}
	ps := &rcv.ports
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.found = fs
	byListener := map[string][]ForeignSocket{}
	for _, f := range fs {
		if !ps.seen[f.Inode] {
			ps.seen[f.Inode] = true
			for _, l := range rcv.listeners {
				if l.cfg.Name == f.Listener {
					l.foreign.Add(1)
				}
			}
		}
		byListener[f.Listener] = append(byListener[f.Listener], f)
	}
	for name, list := range byListener {
		if now.Sub(ps.lastLog[name]) < foreignLogEvery {
			continue
		}
		ps.lastLog[name] = now
		var ss []string
		for _, f := range list {
			ss = append(ss, f.String())
		}
		rcv.log.Error("port shared with a socket that is not intake's: it takes a share of the datagrams",
			"listener", name, "port", list[0].Local.Port(), "sockets", strings.Join(ss, ", "))
	}
}
