package compiler_test

import (
	"fmt"
	"log"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Compile a zoo model for a TPU v4 with the XLA-like defaults and list its kernels.
func ExampleCompile() {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		log.Fatal(err)
	}
	chip, err := tpusim.Preset("v4")
	if err != nil {
		log.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d -> %d ops, %d kernels\n", p.Name, p.OpCountBefore, p.OpCountAfter, len(p.Kernels))
	for _, k := range p.Kernels[:3] {
		fmt.Printf("%s %s tile %v\n", k.Name, k.Kind, k.Choice.Config.Tile)
	}
	// Output:
	// mlp_768x3_b8: 73 -> 65 ops, 8 kernels
	// fusion.multiply.5 kOutput tile 16x2048x768
	// fusion.multiply.11 kOutput tile 16x512x3072
	// fusion.multiply.17 kOutput tile 16x256x768
}

// Observe the pipeline with a PassHook: the op count after each configurable pass, and
// a copy of the module the fusion pass read (taken in memory, no HLO text).
func ExamplePassHook() {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		log.Fatal(err)
	}
	chip, err := tpusim.Preset("v4")
	if err != nil {
		log.Fatal(err)
	}
	var laidOut *hlo.Module
	o := compiler.Options{Target: chip.Target, AfterPass: []compiler.PassHook{{
		Select: func(pass string) bool { return pass == "layout-assignment" || pass == "fusion" },
		After: func(mod *hlo.Module, run compiler.PassStat) error {
			fmt.Printf("after %s: %d -> %d ops\n", run.Name, run.OpsBefore, run.OpCount)
			if run.Name == "layout-assignment" {
				laidOut = mod.Clone() // later passes rewrite mod in place
			}
			return nil
		},
	}}}
	if _, err := compiler.Compile(m, nil, o); err != nil {
		log.Fatal(err)
	}
	fmt.Println("module before fusion:", len(laidOut.Entry.Instructions), "instructions in the entry")
	// Output:
	// after layout-assignment: 65 -> 65 ops
	// after fusion: 65 -> 8 ops
	// module before fusion: 74 instructions in the entry
}

// Select passes as --dump-after does: a name, all, or a regular expression matched
// against whole names.
func ExampleMatchPasses() {
	for _, pattern := range []string{"fusion", "alg.*", "(layout-assignment|tiling)"} {
		names, err := compiler.MatchPasses(pattern, compiler.PassNames())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(pattern, "->", names)
	}
	all, _ := compiler.MatchPasses("all", compiler.PassNames())
	fmt.Println("all -> every pass:", len(all) == len(compiler.PassNames()))
	// Output:
	// fusion -> [fusion]
	// alg.* -> [algsimp]
	// (layout-assignment|tiling) -> [layout-assignment tiling]
	// all -> every pass: true
}
