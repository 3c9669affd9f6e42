package compiler

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/zoo"
)

// TestKernelCacheChangesNothing compiles random layout/fusion/tile configs of two zoo
// models with one KernelCache shared by concurrent compiles and without any, and requires
// identical programs: the same module text and every kernel's key, tile, flags and plan.
func TestKernelCacheChangesNothing(t *testing.T) {
	cache := &KernelCache{}
	type job struct {
		model string
		seed  uint64
	}
	var jobs []job
	for _, m := range []string{"mlp_768x3_b8", "resnet20_cifar_b64"} {
		for s := range uint64(4) {
			jobs = append(jobs, job{m, s})
		}
	}
	describe := func(p *Program) string {
		s := p.Module.String()
		for _, k := range p.Kernels {
			s += fmt.Sprintf("%s %s %s %s %+v\n", k.Name, k.Key, k.Choice.Config.Tile, k.Choice.Config.Flags, k.Choice.Plan)
		}
		return s
	}
	compile := func(j job, kc *KernelCache) (string, error) {
		m, err := zoo.Resolve(j.model)
		if err != nil {
			return "", err
		}
		o := opts()
		o.Kernels = kc
		def, err := Compile(m, nil, o)
		if err != nil {
			return "", err
		}
		cfg := def.Space.Perturb(nil, Kinds(), 0.5, rand.New(rand.NewPCG(j.seed, 7)))
		p, err := Compile(m, cfg, o)
		if err != nil {
			return "", err
		}
		return describe(p), nil
	}
	shared := make([]string, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shared[i], errs[i] = compile(j, cache)
		}()
	}
	wg.Wait()
	for i, j := range jobs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		alone, err := compile(j, nil)
		if err != nil {
			t.Fatal(err)
		}
		if alone != shared[i] {
			t.Errorf("%s seed %d: the program compiled with a shared kernel cache differs from one compiled without", j.model, j.seed)
		}
	}
}
