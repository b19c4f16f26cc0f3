//go:build race

package export_test

// raceEnabled: the race detector is on (tests too slow under it skip).
const raceEnabled = true
