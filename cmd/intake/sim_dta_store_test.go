package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/intake-int/intake/internal/sim/dtasim"
)

// intake sim dta --store: the compact model (the default) and package dta's store print the
// same result; another name is a usage error that lists the two.
func TestSimDTAStore(t *testing.T) {
	var got [2]dtasim.SimResult
	for i, store := range []string{"compact", "real"} {
		code, out, errs := runVerb("sim", "dta", "--slots", "4096", "--keys", "8192", "--bits", "8", "--value-bytes", "20", "--json", "--quiet", "--store", store)
		if code != 0 || json.Unmarshal([]byte(out), &got[i]) != nil {
			t.Fatalf("--store %s: %d %s %s", store, code, out, errs)
		}
	}
	if got[0].Config.Store != "compact" || got[1].Config.Store != "real" || got[0].Wrong == 0 {
		t.Errorf("stores %q %q, wrong %g", got[0].Config.Store, got[1].Config.Store, got[0].Wrong)
	}
	got[1].Config.Store = "compact"
	a, _ := json.Marshal(got[0])
	b, _ := json.Marshal(got[1])
	if string(a) != string(b) {
		t.Errorf("compact %s\nreal %s", a, b)
	}
	code, _, errs := runVerb("sim", "dta", "--store", "disk")
	if code != 2 || !strings.Contains(errs, `--store "disk": allowed are compact and real`) {
		t.Errorf("--store disk: %d %q", code, errs)
	}
}
