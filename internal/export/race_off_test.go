//go:build !race

package export_test

const raceEnabled = false
