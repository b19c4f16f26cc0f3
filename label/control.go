package label

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The control channel (docs/fabric.md, "Control endpoint"): the controller tells a switch to
// change one egress port's shift S, the Pro algorithm's Reg2 (INT-label §3.2). The protocol
// is deliberately small so that a real switch agent (a P4Runtime or Thrift register writer)
// can implement it:
//
//	POST {control}/v1/label/shift   body {"switch_id": 3, "port": 1, "shift": 2}
//	                                → 200 and the same object as applied
//	GET  {control}/v1/label/shift   → 200 {"shifts": [ {switch_id, port, shift}, ... ]} (S > 0)
//
// A body with a switch or port the agent does not have gets 404; a malformed body or a shift
// above 16 gets 400; errors are {"error": "..."}.

// ControlPath is the control channel's path.
const ControlPath = "/v1/label/shift"

// controlQueue is how many shift messages wait for the switch's control endpoint.
const controlQueue = 4096

// Shift is one control message.
type Shift struct {
	SwitchID uint8 `json:"switch_id"`
	Port     uint8 `json:"port"`
	Shift    uint8 `json:"shift"`
}

// Shifts is the GET answer.
type Shifts struct {
	Shifts []Shift `json:"shifts"`
}

// HTTPControl sends shift updates to a control endpoint from its own goroutine through a
// bounded queue, so that Algorithm 3's loop never waits on the network.
type HTTPControl struct {
	url    string
	client *http.Client
	q      chan Shift
	done   chan struct{}
	start  sync.Once
	once   sync.Once

	Sent, Errors, Drops atomic.Uint64
}

// NewHTTPControl returns a sender to base (e.g. http://127.0.0.1:8050); Start starts it
// (the Controller's Start does), and updates queued before are sent then.
func NewHTTPControl(base string) *HTTPControl {
	return &HTTPControl{
		url:    strings.TrimSuffix(base, "/") + ControlPath,
		client: &http.Client{Timeout: 2 * time.Second},
		q:      make(chan Shift, controlQueue),
		done:   make(chan struct{}),
	}
}

// Start starts the sending goroutine; later calls do nothing.
func (h *HTTPControl) Start(context.Context) error {
	h.start.Do(func() { go h.loop() })
	return nil
}

// SetShift implements ShiftSetter: it queues the update, counting it as dropped when the
// queue is full.
func (h *HTTPControl) SetShift(sw, port, shift uint8) {
	select {
	case h.q <- Shift{sw, port, shift}:
	default:
		h.Drops.Add(1)
	}
}

func (h *HTTPControl) loop() {
	defer close(h.done)
	for s := range h.q {
		if err := h.send(s); err != nil {
			h.Errors.Add(1)
		} else {
			h.Sent.Add(1)
		}
	}
}

func (h *HTTPControl) send(s Shift) error {
	b, _ := json.Marshal(s)
	resp, err := h.client.Post(h.url, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", h.url, resp.Status)
	}
	return nil
}

// Close sends what is queued and stops the sender; a sender never started is started for
// that.
func (h *HTTPControl) Close() {
	h.Start(context.Background())
	h.once.Do(func() { close(h.q) })
	<-h.done
}
