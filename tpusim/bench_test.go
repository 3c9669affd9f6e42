package tpusim

import (
	"runtime"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/zoo"
)

// BenchmarkSimulateKernel measures simulator evaluations per second for one kernel (a
// mid-size matmul with a fused epilogue): the inner loop of data generation and tuning.
func BenchmarkSimulateKernel(b *testing.B) {
	c, _ := Preset("v4")
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		b.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		b.Fatal(err)
	}
	k := p.Kernels[0]
	opts := p.Space.Tile[0].Options
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SimulateKernel(k.Info, opts[i%len(opts)], k.Choice.Config.Flags, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}

// BenchmarkSimulateChoice is BenchmarkSimulateKernel on the planned options (what data
// generation and tuning time: the compiler planned every option once, so a simulation
// only reads the plan).
func BenchmarkSimulateChoice(b *testing.B) {
	c, _ := Preset("v4")
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		b.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		b.Fatal(err)
	}
	k := p.Kernels[0]
	var opts []cost.Planned
	for _, o := range p.Space.Tile[0].Planned() {
		if o, err := o.WithFlags(k.Choice.Config.Flags); err == nil {
			opts = append(opts, o)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := SimulateChoice(opts[i%len(opts)], c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evals/s")
}

// compileSimulate compiles a module with defaults and simulates it, reporting the peak
// heap in use (sampled after each phase) as MiB.
func benchCompileSimulate(b *testing.B, build func() (*compiler.Program, error)) {
	c, _ := Preset("v4")
	sim, _ := New(c, Options{})
	var peak uint64
	for i := 0; i < b.N; i++ {
		p, err := build()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sim.Program(p); err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		b.ReportMetric(float64(len(p.Kernels)), "kernels")
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkLargestZooModel compiles and simulates the zoo model with the most
// instructions.
func BenchmarkLargestZooModel(b *testing.B) {
	c, _ := Preset("v4")
	var largest zoo.Model
	most := 0
	for _, m := range zoo.All() {
		mod, err := m.Build()
		if err != nil {
			b.Fatal(err)
		}
		if n := mod.InstructionCount(); n > most {
			most, largest = n, m
		}
	}
	b.Logf("largest zoo model: %s, %d instructions", largest.Name, most)
	b.ResetTimer()
	benchCompileSimulate(b, func() (*compiler.Program, error) {
		mod, err := largest.Build()
		if err != nil {
			return nil, err
		}
		return compiler.Compile(mod, nil, compiler.Options{Target: c.Target})
	})
}

// BenchmarkSynthetic500k builds, compiles and simulates a 500,000-node synthetic graph
// with default configs: the scale of industrial models.
func BenchmarkSynthetic500k(b *testing.B) {
	c, _ := Preset("v4")
	benchCompileSimulate(b, func() (*compiler.Program, error) {
		mod, err := zoo.Synthetic(500_000, 1)
		if err != nil {
			return nil, err
		}
		return compiler.Compile(mod, nil, compiler.Options{Target: c.Target})
	})
}
