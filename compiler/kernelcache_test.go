package compiler

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestKernelCacheBound: a cache bounded by MaxKernels keeps at most that many analyses
// (least recently used dropped; unbounded, dataset generation's grew with every config
// and was 90% of its live heap), and compiles give the same programs as with an unbounded
// cache.
func TestKernelCacheBound(t *testing.T) {
	m := mlpBlock(t, "mlp", 64, 256, 512)
	var unbounded KernelCache
	bounded := KernelCache{MaxKernels: 2}
	def, err := Compile(m, nil, Options{Target: testTarget, Kernels: &unbounded})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 12 {
		cfg := def.Space.Perturb(nil, []Kind{KindFusion, KindLayout}, 0.5, r)
		a, err := Compile(m, cfg, Options{Target: testTarget, Kernels: &unbounded})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Compile(m, cfg, Options{Target: testTarget, Kernels: &bounded})
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := a.Config.MarshalIndent()
		jb, _ := b.Config.MarshalIndent()
		if !bytes.Equal(ja, jb) || len(a.Kernels) != len(b.Kernels) {
			t.Fatalf("config %d: the bounded cache compiled another program", i)
		}
		for j := range a.Kernels {
			if a.Kernels[j].Key != b.Kernels[j].Key || !a.Kernels[j].Choice.Config.Tile.Equal(b.Kernels[j].Choice.Config.Tile) ||
				a.Kernels[j].Choice.Config.Flags != b.Kernels[j].Choice.Config.Flags {
				t.Fatalf("config %d kernel %d: %s %v vs %s %v", i, j, a.Kernels[j].Key, a.Kernels[j].Choice.Config, b.Kernels[j].Key, b.Kernels[j].Choice.Config)
			}
		}
		if n := len(bounded.m); n > bounded.MaxKernels || bounded.lru.Len() != n {
			t.Fatalf("bounded cache holds %d analyses (list %d), want at most %d", n, bounded.lru.Len(), bounded.MaxKernels)
		}
	}
	if len(unbounded.m) <= bounded.MaxKernels {
		t.Errorf("the programs formed only %d kernels: the bound was not exercised", len(unbounded.m))
	}
}
