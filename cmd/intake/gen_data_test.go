package main

import (
	"strings"
	"testing"
)

// TestGenDataMisuse: gen's data mode options are refused, with the reason, where they do
// not fit.
func TestGenDataMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data-to", "10.0.0.1:9"}, "--data-to: an option of --data"},
		{[]string{"--int-port", "5555"}, "--int-port: an option of --data"},
		{[]string{"--data", "lo"}, "--data needs --data-to IP:PORT"},
		{[]string{"--data", "lo", "--data-to", "10.0.0.1"}, `--data-to "10.0.0.1": want IP:PORT`},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--to", "127.0.0.1:32766"}, "--to and --collectors are for reports"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--dscp", "0x40"}, "--dscp 0x40: a DSCP has 6 bits"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--npt", "2"}, "--npt: NPT 1 and 2 mark by port: give --int-port"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--int-port", "5555", "--npt", "3"}, "npt: 3: port marking of INT v2.x is NPT 1"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--int-version", "1.0", "--int-port", "5555"}, "int-port: INT v1.0 is marked by DSCP only"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--host-int"}, "host-int: Intel host-int's shim carries INT v0.5, not 2.x"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--format", "dta"}, "data: data packets carry INT-MD stacks"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--batch", "2"}, "data: data packets carry INT-MD stacks"},
		{[]string{"--data", "nosuchif0", "--data-to", "127.0.0.1:9"}, `data: interface "nosuchif0"`},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9"}, "data: interface lo has no Ethernet address"},
		{[]string{"--data", "lo", "--data-to", "127.0.0.1:9", "--data-mac", "xx"}, `--data-mac "xx": want an Ethernet address`},
	} {
		code, out, errb := runVerb(append([]string{"gen"}, tc.args...)...)
		if code != 2 || out != "" || !strings.HasPrefix(errb, "intake gen: ") || !strings.Contains(errb, tc.want) ||
			strings.Count(errb, "\n") != 1 {
			t.Errorf("gen %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, errb, tc.want)
		}
	}
}
