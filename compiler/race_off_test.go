//go:build !race

package compiler_test

// raceEnabled is false: the zoo-wide tests cover every model (see race_on_test.go).
const raceEnabled = false
