package cli

import (
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/tune"
)

// taskNames writes the dataset tasks (dataset.Tasks) for help texts: "tile, flags,
// fusion, layout". The help texts of --task, --loss, --strategy and --kinds are derived
// from their registries (dataset.Tasks, gnn.Losses, tune.Methods, compiler.Kinds) and
// never typed twice (TestFlagListsNameRegistries).
func taskNames() string {
	ss := make([]string, len(dataset.Tasks()))
	for i, t := range dataset.Tasks() {
		ss[i] = string(t)
	}
	return strings.Join(ss, ", ")
}

// searchStrategies writes the strategies that run a program-level search over --kinds
// without a per-program policy (tune.SearchStrategies; rl left out, the help says it on
// its own): "exhaustive, random, sa, evo, mbo".
func searchStrategies() string {
	var ss []string
	for _, st := range tune.SearchStrategies() {
		ss = append(ss, string(st))
	}
	return strings.Join(ss, ", ")
}

// taskAlternatives writes the dataset tasks as a usage line's alternatives:
// "tile|flags|fusion|layout".
func taskAlternatives() string { return strings.ReplaceAll(taskNames(), ", ", "|") }
