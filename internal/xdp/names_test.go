package xdp

import (
	"slices"
	"testing"
)

// TestNameStrings: Outcome's names are metric labels and Lift's the status's keys, generated
// by stringer from the line comments: each is pinned here as it was written by hand before.
func TestNameStrings(t *testing.T) {
	var outcomes, lifts []string
	for o := range NumOutcomes {
		outcomes = append(outcomes, o.String())
	}
	for l := range NumLifts {
		lifts = append(lifts, l.String())
	}
	if want := []string{"redirected", "pass_other", "pass_fragment", "pass_malformed", "pass_no_socket", "pass_ipv6_ext",
		"dta_key_write", "dta_key_increment", "dta_append", "kernel", "kernel_lifted"}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %q, want %q", outcomes, want)
	}
	if want := []string{"version", "batch", "rep_type", "inner", "tunnel", "int", "hops", "long"}; !slices.Equal(lifts, want) {
		t.Errorf("lifts %q, want %q", lifts, want)
	}
}
