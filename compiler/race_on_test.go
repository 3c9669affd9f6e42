//go:build race

package compiler_test

// raceEnabled: the race detector slows the zoo-wide tests about tenfold, so under it they
// cover a sample of the zoo (zooSample); the full zoo runs in the ordinary test run.
const raceEnabled = true
