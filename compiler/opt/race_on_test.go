//go:build race

package opt

// raceEnabled: the race detector slows the zoo-wide tests tenfold and finds nothing in
// this package (it runs no goroutines), so they cover fewer models under it.
const raceEnabled = true
