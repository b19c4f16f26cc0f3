package label

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/intake-int/intake/internal/metrics"
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
// bounded queue, so that Algorithm 3's loop never waits on the network. It is a component of
// its own: the collector starts it before the Controller that feeds it and stops it after.
type HTTPControl struct {
	url    string
	client *http.Client
	log    *slog.Logger
	q      chan Shift
	done   chan struct{}
	start  sync.Once
	once   sync.Once

	// Sent, Errors: updates the endpoint took and refused (or did not answer); Dropped:
	// updates the queue had no room for.
	Sent, Errors, Dropped atomic.Uint64

	errMu     sync.Mutex
	errLogged time.Time // when the last send error was logged (at most one per errLogEvery)
	errSince  uint64    // errors not logged since then
}

// errLogEvery bounds how often a failing endpoint is logged: every send fails while it is
// down, and the queue holds thousands.
const errLogEvery = 10 * time.Second

// ControlDeps are what an HTTPControl uses beside its URL; every field is optional.
type ControlDeps struct {
	Metrics *metrics.Registry // intake_label_control_*_total go on it
	Logger  *slog.Logger      // send errors, at most one line per 10 s
}

// NewHTTPControl returns a sender to base (e.g. http://127.0.0.1:8050); Start starts it,
// and updates queued before are sent then.
func NewHTTPControl(base string, deps ControlDeps) *HTTPControl {
	h := &HTTPControl{
		url:    strings.TrimSuffix(base, "/") + ControlPath,
		client: &http.Client{Timeout: 2 * time.Second},
		log:    deps.Logger,
		q:      make(chan Shift, controlQueue),
		done:   make(chan struct{}),
	}
	if reg := deps.Metrics; reg != nil {
		reg.Counter("intake_label_control_sent_total", "shift updates sent to the control endpoint").Func(func() float64 { return float64(h.Sent.Load()) })
		reg.Counter("intake_label_control_errors_total", "shift updates the control endpoint refused or did not answer").Func(func() float64 { return float64(h.Errors.Load()) })
		reg.Counter("intake_label_control_drops_total", "shift updates dropped because the send queue was full").Func(func() float64 { return float64(h.Dropped.Load()) })
	}
	return h
}

// Name is the component's name.
func (h *HTTPControl) Name() string { return "label-control" }

// Start starts the sending goroutine; later calls do nothing.
func (h *HTTPControl) Start(context.Context) error {
	h.start.Do(func() { go h.loop() })
	return nil
}

// Stop sends what is queued, within ctx's deadline, and stops the sender.
func (h *HTTPControl) Stop(ctx context.Context) error {
	h.Start(ctx)
	h.once.Do(func() { close(h.q) })
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d shift updates not sent: %w", len(h.q), ctx.Err())
	}
}

// Drops is the control queue's drops, for the collector's status.
func (h *HTTPControl) Drops() map[string]uint64 {
	return map[string]uint64{"label.control_queue": h.Dropped.Load()}
}

// SetShift implements ShiftSetter: it queues the update, counting it as dropped when the
// queue is full.
func (h *HTTPControl) SetShift(sw, port, shift uint8) {
	select {
	case h.q <- Shift{sw, port, shift}:
	default:
		h.Dropped.Add(1)
	}
}

func (h *HTTPControl) loop() {
	defer close(h.done)
	for s := range h.q {
		if err := h.send(s); err != nil {
			h.Errors.Add(1)
			h.logError(err)
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

// logError logs err unless an error was logged less than errLogEvery ago; the next line
// says how many were not.
func (h *HTTPControl) logError(err error) {
	if h.log == nil {
		return
	}
	h.errMu.Lock()
	defer h.errMu.Unlock()
	if time.Since(h.errLogged) < errLogEvery {
		h.errSince++
		return
	}
	h.log.Warn("label control: sending a shift update", "err", err, "errors_not_logged", h.errSince)
	h.errLogged, h.errSince = time.Now(), 0
}

// Close sends what is queued and stops the sender; a sender never started is started for
// that.
func (h *HTTPControl) Close() { h.Stop(context.Background()) }
