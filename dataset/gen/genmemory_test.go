package gen

import (
	"runtime"
	"testing"
)

// TestGenerationMemoryFollowsWorkers: the kernel analyses a generation run shares across
// its compiles are bounded by the workers (they were never dropped: 90% of the live heap,
// growing with every config; gen --task fusion --all --configs 16 peaked at 7.3 GB on 2
// workers, 1.0 GB with the bound and MemoryLimit: make bench), and so is the soft
// memory limit the command runs with.
func TestGenerationMemoryFollowsWorkers(t *testing.T) {
	for _, w := range []int{1, 2, 16} {
		g := newGenerator(Options{Workers: w, Configs: 64})
		if got := g.kernels.MaxKernels; got != KernelsPerWorker*w {
			t.Errorf("%d workers: %d kernel analyses kept, want %d", w, got, KernelsPerWorker*w)
		}
		if got := MemoryLimit(w); got != int64(w)*MemoryPerWorker {
			t.Errorf("%d workers: memory limit %d, want %d", w, got, int64(w)*MemoryPerWorker)
		}
	}
	if MemoryLimit(0) != int64(runtime.NumCPU())*MemoryPerWorker {
		t.Error("MemoryLimit(0) is not one share per CPU")
	}
}
