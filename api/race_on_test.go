//go:build race

package api_test

// raceEnabled: the race detector is on (its shadow memory makes RSS no measure).
const raceEnabled = true
