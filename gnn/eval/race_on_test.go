//go:build race

package eval

// raceEnabled: the race detector slows training about tenfold; the quality test's
// training runs no goroutines of its own and is skipped under it.
const raceEnabled = true
