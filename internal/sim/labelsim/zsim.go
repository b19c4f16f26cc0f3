package labelsim

import (
	"time"

	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
)

// zSim measures the labeling times of §4.3 on the emulator: a k-ary fat tree where every
// host sends Poisson packets to uniformly random other hosts (so a packet's switch count H
// has §4.3's distribution), ECMP, 10 Gb/s links (no queueing), Base A or Base B with
// f(i) = i/5 (F2, MAX_hop 6: Figs. 15-16). T is set from the per-port packet rate so that the
// interval-based labeling probability T_s/T is ratio. After a warm-up of 1.2 labeling
// intervals (every port's first packet is labeled) and for at least five more it returns
// the per-hop labeling probability measured (labels / packet-hops) and E[Z], the mean number of items a packet
// carries at its last hop (unlabeled packets count 0).
type zSim struct {
	K       int
	Ratio   float64
	Algo    fabric.Algo
	Packets int // packets measured (after the warm-up)
	Seed    uint64
}

type zResult struct {
	R    float64 // labels / packet-hops
	EZ   float64
	Dist [MaxPathHops + 1]float64
}

func (z zSim) run() (zResult, error) {
	const pps = 1000.0 // packets per second per host
	topo, err := fabric.FatTree(z.K, fabric.LinkParams{Bandwidth: 10e9, DelayMean: 2 * time.Microsecond, Queue: 1000})
	if err != nil {
		return zResult{}, err
	}
	// A port carrying rate λ sees λ·T packets in T; Base A labels one of every 1 + λ·T
	// (the first after T), so T_s/T = 1/(1 + λT). In a fat tree with uniform destinations
	// every switch port carries about one host's rate.
	t := time.Duration((1/z.Ratio - 1) / pps * 1e9)
	f, err := fabric.New(fabric.Config{
		Topology: topo, Routing: "ecmp",
		Traffic: fabric.Traffic{Rate: pps * 8000, PacketSize: 1000, Pattern: "random", Poisson: true, Flows: 64},
		Label:   fabric.LabelConfig{Algo: z.Algo, T: t, F: label.F2, MaxHop: 6},
		Seed:    z.Seed,
	})
	if err != nil {
		return zResult{}, err
	}
	hosts := len(topo.Hosts)
	f.RunVirtual(int64(1.2 * float64(t)))
	s0 := f.Stats()
	// Measure Packets packets, and at least five labeling intervals (every port labels a
	// handful of times even at T_s/T = 1/1000).
	f.RunVirtual(s0.Now + max(int64(float64(z.Packets)/float64(hosts)/pps*1e9), int64(5*t)))
	s1 := f.Stats()
	var res zResult
	if hops := s1.PacketHops - s0.PacketHops; hops > 0 {
		res.R = float64(s1.Labels-s0.Labels) / float64(hops)
	}
	d := float64(s1.Delivered - s0.Delivered)
	if d == 0 {
		return res, nil
	}
	res.EZ = float64(s1.ExportedItems-s0.ExportedItems) / d
	labeled := 0.0
	for n := 1; n <= MaxPathHops; n++ {
		c := float64(s1.ItemsHist[n] - s0.ItemsHist[n])
		res.Dist[n] = c / d
		labeled += c
	}
	res.Dist[0] = 1 - labeled/d
	return res, nil
}
