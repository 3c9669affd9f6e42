// Package layers is the project's import floors, from the ground up, and the check that
// every import goes down or sideways: a package imports only packages on its own floor or
// below, and no two packages import each other in a loop (Go refuses those already).
//
// The floors follow the data: the ground (internal helpers, no project imports), the
// compiler, the programs it compiles (zoo), the hardware (tpusim: chips, simulation,
// collectives), the features read off compiled programs, the datasets built from them,
// the learned model's building blocks (metric, nn), the learned model (gnn), validation
// of simulator and model against real runs (validate), and on top the users of all of
// it: tuning, the gym, bitserial, the demo and the CLI. The check reads the packages'
// own imports; tests may reach higher (compiler's tests compile zoo models).
package layers

import "strings"

// Module is the project's module path.
const Module = "github.com/tpucost/tpucost"

// Floors returns the floors from the ground up; each is the package-path prefixes (below
// Module) that live on it. A prefix covers its subpackages.
func Floors() [][]string {
	return [][]string{
		{"internal"},
		{"compiler"},
		{"zoo"},
		{"tpusim"},
		{"features"},
		{"dataset"},
		{"metric", "nn"},
		{"gnn"},
		{"validate"},
		{"tune", "gym", "bitserial"},
		{"demo"},
		{"cmd"},
	}
}

// Floor returns the floor of the project package path (a full import path), or -1 when
// it is not a project package or no floor holds it.
func Floor(path string) int {
	rel, ok := strings.CutPrefix(path, Module+"/")
	if !ok {
		return -1
	}
	for i, floor := range Floors() {
		for _, prefix := range floor {
			if rel == prefix || strings.HasPrefix(rel, prefix+"/") {
				return i
			}
		}
	}
	return -1
}
