//go:build !race

package opt

// raceEnabled: see race_on_test.go.
const raceEnabled = false
