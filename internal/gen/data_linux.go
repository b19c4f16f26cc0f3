package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/intake-int/intake/telemetry"
	"golang.org/x/sys/unix"
)

// SendData sends g's stream as INT-MD data packets (DataFrames) out of dc.Iface through an
// AF_PACKET socket, at sc.Rate frames per second (0: as fast as the socket takes them),
// until sc.Count frames, sc.Duration or ctx. It prebuilds Config.Ring frames and cycles
// through them, a lap repeating them byte for byte (payload index and host-int sequence
// number included); Fresh builds each as it is sent, numbered on. sc.To, Sockets, Vector and GSO do not
// apply. Datagrams and Reports in the Stats count frames, Bytes their Ethernet bytes.
func SendData(ctx context.Context, g *Generator, dc *DataConfig, sc SendConfig) (Stats, error) {
	ifi, err := net.InterfaceByName(dc.Iface)
	if err != nil {
		return Stats{}, fmt.Errorf("data: interface %q: %v", dc.Iface, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0) // send only: protocol 0 receives nothing
	if err != nil {
		return Stats{}, fmt.Errorf("data: AF_PACKET socket (needs CAP_NET_RAW): %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		return Stats{}, fmt.Errorf("data: bind to %s: %w", dc.Iface, err)
	}
	n := uint64(g.Config().Ring)
	if g.Config().Fresh || sc.Count > 0 && sc.Count < n {
		n = sc.Count
	}
	var ring [][]byte
	if !g.Config().Fresh {
		err := DataFrames(g, dc, n, func(_ uint64, f []byte, _ *telemetry.Report) error {
			ring = append(ring, append([]byte(nil), f...))
			return nil
		})
		if err != nil {
			return Stats{}, err
		}
	}
	var st Stats
	start := time.Now()
	last := start
	send := func(i uint64, f []byte) error {
		if sc.Rate > 0 {
			if wait := time.Until(start.Add(time.Duration(float64(i) / sc.Rate * float64(time.Second)))); wait > 0 {
				time.Sleep(wait)
			}
		}
		if ctx.Err() != nil || sc.Duration > 0 && time.Since(start) >= sc.Duration {
			return errStop
		}
		st.Claimed++
		if _, err := unix.Write(fd, f); err != nil {
			st.SendErrors++
		} else {
			st.Datagrams++
			st.Reports++
			st.Bytes += uint64(len(f))
		}
		if sc.Progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			progress(sc.Progress, st, time.Since(start))
		}
		return nil
	}
	if g.Config().Fresh {
		err = DataFrames(g, dc, ^uint64(0)>>1, func(i uint64, f []byte, _ *telemetry.Report) error {
			if sc.Count > 0 && i >= sc.Count {
				return errStop
			}
			return send(i, f)
		})
	} else {
		for i := uint64(0); sc.Count == 0 || i < sc.Count; i++ {
			if err = send(i, ring[i%uint64(len(ring))]); err != nil {
				break
			}
		}
	}
	st.Elapsed = time.Since(start)
	if err == errStop {
		err = nil
	}
	return st, err
}

// errStop ends a data run that reached its count, duration or cancellation.
var errStop = errors.New("stop")

// progress writes the line a second of a data run.
func progress(w io.Writer, st Stats, d time.Duration) {
	fmt.Fprintf(w, "gen: %s: %d data packets sent (%.0f/s), %d send errors\n", d.Round(time.Second), st.Datagrams, per(st.Datagrams, d), st.SendErrors)
}
