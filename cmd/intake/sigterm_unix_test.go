//go:build unix

package main

import (
	"os"
	"syscall"
)

// sigterm sends SIGTERM to this process, as a user stops `intake serve` run in-process by
// the tests. sigterm_other_test.go is the stand-in where there are no such signals.
func sigterm() { syscall.Kill(os.Getpid(), syscall.SIGTERM) }
