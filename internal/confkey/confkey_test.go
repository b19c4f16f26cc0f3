package confkey

import (
	"errors"
	"testing"
)

// The message names the key, the value as written when there is one, and what is allowed;
// errors.As finds the key.
func TestError(t *testing.T) {
	err := At("listeners[1].port", 70000, "must be 1 to %d", 65535)
	if got, want := err.Error(), "listeners[1].port: 70000: must be 1 to 65535"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var e *Error
	if !errors.As(err, &e) || e.Key != "listeners[1].port" || e.Value != "70000" || e.Msg != "must be 1 to 65535" {
		t.Errorf("errors.As: %+v", e)
	}
	if got, want := (&Error{Key: "listeners", Msg: "at least one listener is required"}).Error(), "listeners: at least one listener is required"; got != want {
		t.Errorf("no value: got %q, want %q", got, want)
	}
}
