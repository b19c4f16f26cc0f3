package label

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestHTTPControlDeadEndpoint: with nothing listening every update fails; they are counted,
// and logged once, not once each.
func TestHTTPControlDeadEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: every send is refused at once
	var logs bytes.Buffer
	h := NewHTTPControl("http://"+addr, ControlDeps{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if h.Name() != "label-control" {
		t.Errorf("Name = %q", h.Name())
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		h.SetShift(1, uint8(i), 1)
	}
	if err := h.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, e, d := h.Sent.Load(), h.Errors.Load(), h.Dropped.Load(); s != 0 || e != 5 || d != 0 {
		t.Fatalf("sent %d, errors %d, dropped %d; want 0, 5, 0", s, e, d)
	}
	if n := strings.Count(logs.String(), "label control: sending a shift update"); n != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", n, logs.String())
	}
	if got := h.Drops(); len(got) != 1 || got["label.control_queue"] != 0 {
		t.Fatalf("Drops = %v", got)
	}
}

// TestHTTPControlQueueFull: updates past the queue's room are dropped and counted, and Stop
// gives up at its context's deadline with what was left unsent.
func TestHTTPControlQueueFull(t *testing.T) {
	h := NewHTTPControl("http://127.0.0.1:1", ControlDeps{}) // never started: nothing drains the queue
	for i := range controlQueue + 3 {
		h.SetShift(1, uint8(i), 1)
	}
	if got := h.Drops()["label.control_queue"]; got != 3 {
		t.Fatalf("control_queue drops = %d, want 3", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.Stop(ctx); err == nil || !strings.Contains(err.Error(), "shift updates not sent") {
		t.Fatalf("Stop with a done context = %v, want the updates not sent", err)
	}
}
