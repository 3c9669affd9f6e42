package gym_test

import (
	"fmt"
	"log"
	"slices"

	"github.com/tpucost/tpucost/gym"
)

// Run one pass-ordering episode by hand: each step runs a simplification pass on the
// module and is rewarded with the share of the program's ops it removed; the stop action
// ends the episode.
func ExampleEnv() {
	env, err := gym.New(gym.Options{MaxSteps: 8})
	if err != nil {
		log.Fatal(err)
	}
	obs, err := env.Reset("mlp_768x3_b8")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d ops, graph of %d nodes\n", obs.Program, obs.OpCount, obs.Graph.Nodes())
	total := 0.0
	for _, pass := range []string{"algsimp", "cse", "dce", "dce", "stop"} {
		a := slices.Index(gym.Actions(), pass)
		if a < 0 {
			log.Fatalf("no action %s", pass)
		}
		var r float64
		var done bool
		obs, r, done, err = env.Step(a)
		if err != nil {
			log.Fatal(err)
		}
		total += r
		idle := a < len(obs.Idle) && obs.Idle[a] // known to change nothing now (no entry for stop)
		fmt.Printf("%-7s -> %d ops, reward %.3f, idle: %v, done: %v\n", pass, obs.OpCount, r, idle, done)
	}
	fmt.Printf("episode reward %.3f = %d of %d ops removed\n", total, obs.InitialOpCount-obs.OpCount, obs.InitialOpCount)
	// Output:
	// mlp_768x3_b8: 73 ops, graph of 82 nodes
	// algsimp -> 73 ops, reward 0.000, idle: true, done: false
	// cse     -> 65 ops, reward 0.110, idle: false, done: false
	// dce     -> 65 ops, reward 0.000, idle: true, done: false
	// dce     -> 65 ops, reward 0.000, idle: true, done: false
	// stop    -> 65 ops, reward 0.000, idle: false, done: true
	// episode reward 0.110 = 8 of 73 ops removed
}
