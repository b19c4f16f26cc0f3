package labelsim

import (
	"github.com/intake-int/intake/internal/fabric"
	"github.com/intake-int/intake/internal/label"
)

// flagPro is the adaptive labeling of the authors' public prototype (INT-label §5, "Adaptive
// labeling"; docs/label-results.md, "Fig. 12"), the controller behind the paper's Figs. 12
// and 13. Its Reg2 is a flag, not the shift S of Algorithm 3: every item refreshes a port's
// aging entry, whose TTL is TIME_OUT (the telemetry interval T_i); when the entry expires the
// controller sets the port's flag and the port labels every packet; the flag is cleared
// 10 × TIME_OUT later. The fabric has no separate flag register, so the flag is S = 16:
// T/65536 is below one packet's transmission time on the testbed's links, so every packet
// is labeled.
//
// Algorithm 3 (label.Controller.Tick, "Pro" in the figures) instead raises S by one after a
// port has gone k·T without an update and lowers it by one k·T later once the port is fresh.
type flagPro struct {
	ctl     *label.Controller
	f       *fabric.Fabric
	ti      int64
	until   map[uint16]int64 // flagged port → when the flag is cleared
	expired map[uint16]int64 // port → the receive time whose aging entry already expired
}

const flagShift = 16

func newFlagPro(ctl *label.Controller, f *fabric.Fabric, ti int64) *flagPro {
	return &flagPro{ctl: ctl, f: f, ti: ti, until: map[uint16]int64{}, expired: map[uint16]int64{}}
}

func (p *flagPro) tick(now int64) {
	for _, ps := range p.ctl.Ports(now, -1) {
		k := uint16(ps.SwitchID)<<8 | uint16(ps.Port)
		if u, ok := p.until[k]; ok && now >= u {
			delete(p.until, k)
			p.f.SetShift(ps.SwitchID, ps.Port, 0)
		}
		// The aging entry expires once per silence: TIME_OUT after the last item.
		if now-ps.LastReceived > p.ti && p.expired[k] != ps.LastReceived {
			p.expired[k] = ps.LastReceived
			p.until[k] = now + 10*p.ti
			p.f.SetShift(ps.SwitchID, ps.Port, flagShift)
		}
	}
}
