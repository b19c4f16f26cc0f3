//go:build race

package main

// raceEnabled: the race detector is on (tests that need the collector at full speed skip).
const raceEnabled = true
