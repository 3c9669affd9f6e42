package compiler

import (
	"math/rand/v2"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// BenchmarkCompileConfigs compiles one zoo module under many configs with one
// KernelCache, as dataset generation and the tuner do: the config-independent prefix of
// the pass list (preparation and simplification) runs once, memoized, and each compile
// runs the configurable passes.
func BenchmarkCompileConfigs(b *testing.B) {
	m := benchModule(b)
	var cache KernelCache
	o := Options{Target: testTarget, Kernels: &cache}
	def, err := Compile(m, nil, o)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	cfgs := make([]*Config, 16)
	for i := range cfgs {
		cfgs[i] = def.Space.Perturb(nil, []Kind{KindFusion, KindLayout}, 0.3, r)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := Compile(m, cfgs[i%len(cfgs)], o); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileFresh compiles one zoo module without a cache: the whole pass list
// runs every time.
func BenchmarkCompileFresh(b *testing.B) {
	m := benchModule(b)
	for b.Loop() {
		if _, err := Compile(m, nil, Options{Target: testTarget}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchModule builds the zoo's resnet50_b32.
func benchModule(b *testing.B) *hlo.Module {
	m, err := zoo.Build("resnet50_b32")
	if err != nil {
		b.Fatal(err)
	}
	return m
}
