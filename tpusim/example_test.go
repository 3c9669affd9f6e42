package tpusim_test

import (
	"fmt"
	"log"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Simulate a compiled zoo model on a TPU v4: the program's time and each kernel's time
// and bound.
func ExampleSimulator_Program() {
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
	sim, err := tpusim.New(chip, tpusim.Options{})
	if err != nil {
		log.Fatal(err)
	}
	t, err := sim.Program(p)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s on %s: %.1f µs\n", p.Name, chip.Name, t.TotalNs/1e3)
	for i, k := range t.Kernels[:3] {
		fmt.Printf("%s: %.2f µs, %s-bound, %d steps\n", p.Kernels[i].Name, k.Ns/1e3, k.Bound, k.Steps)
	}
	// Output:
	// mlp_768x3_b8 on v4: 38.8 µs
	// fusion.multiply.5: 10.43 µs, hbm-bound, 2 steps
	// fusion.multiply.11: 11.50 µs, hbm-bound, 2 steps
	// fusion.multiply.17: 4.20 µs, latency-bound, 2 steps
}

// Measure a program with noise: the minimum of Runs noisy runs, reproducible for a seed
// and a salt.
func ExampleSimulator_Measure() {
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
	exact, _ := tpusim.New(chip, tpusim.Options{})
	noisy, _ := tpusim.New(chip, tpusim.Options{NoiseSigma: 0.05, Runs: 3, Seed: 1})
	t, err := exact.Program(p)
	if err != nil {
		log.Fatal(err)
	}
	a, err := noisy.Measure(p, 7)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := noisy.Measure(p, 7)
	fmt.Println("same seed and salt, same measurement:", a.Ns == b.Ns)
	fmt.Println("noise only slows:", a.Ns >= t.TotalNs, a.TrueNs == t.TotalNs)
	// Output:
	// same seed and salt, same measurement: true
	// noise only slows: true true
}
