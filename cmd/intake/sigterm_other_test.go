//go:build !unix

package main

// sigterm: Windows has no SIGTERM to send to a process, so it sends nothing. The tests that
// call it run `intake serve` with its UDP listeners, which needs Linux: they fail before.
func sigterm() {}
