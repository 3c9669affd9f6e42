package cost

import (
	"errors"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestStageable pins the access-footprint rule: a window that is a box of whole memory
// tiles in the array's own orientation passes; a gathered table, a transposed read and a
// window splitting the array's (16,128) bf16 tiles do not.
func TestStageable(t *testing.T) {
	// exp(x) + transpose(y): x streams in its own orientation, y is read transposed.
	b := hlo.NewBuilder("tr")
	k := kernel(t, b, b.AddOp(b.Exp(b.Param(hlo.F32, 256, 512)), b.Transpose(b.Param(hlo.F32, 512, 256), 1, 0)))
	tile := Tile{256, 512}
	if err := k.StageableInput(0, tile, v4); err != nil {
		t.Errorf("straight stream: %v", err)
	}
	if err := k.StageableInput(1, tile, v4); err == nil || !strings.Contains(err.Error(), "transposed") {
		t.Errorf("transposed read: err = %v", err)
	}
	if err := k.StageableOutput(tile, v4); err != nil {
		t.Errorf("loop output: %v", err)
	}
	if err := k.StageableInput(7, tile, v4); err == nil {
		t.Error("a parameter the kernel does not have passed")
	}
	// A gathered table.
	b = hlo.NewBuilder("gather")
	g := kernel(t, b, b.Exp(b.Gather(b.Param(hlo.F32, 1000, 128), b.Param(hlo.S32, 16))))
	if err := g.StageableInput(0, Tile{16, 128}, v4); err == nil || !strings.Contains(err.Error(), "affine box") {
		t.Errorf("gathered table: err = %v", err)
	}
	// An f32 result of a bf16 input: 8-row windows split the input's 16-row tiles.
	b = hlo.NewBuilder("cvt")
	c := kernel(t, b, b.Convert(b.Param(hlo.BF16, 256, 512), hlo.F32))
	if err := c.StageableInput(0, Tile{8, 512}, v4); err == nil || !strings.Contains(err.Error(), "memory tiles") {
		t.Errorf("8-row windows of bf16: err = %v", err)
	}
	if err := c.StageableInput(0, Tile{16, 512}, v4); err != nil {
		t.Errorf("16-row windows of bf16: %v", err)
	}
}

// TestStagedPlan: staging an input and the output of an elementwise kernel removes their
// HBM traffic, adds their padded size to VMEM, keeps the grid and compute, and shows in
// the choice's identity; a staging that does not fit VMEM is refused.
func TestStagedPlan(t *testing.T) {
	const rows, cols = 512, 1024 // f32, aligned: 2 MiB each, padded = logical
	const array = rows * cols * 4
	b := hlo.NewBuilder("add")
	k := kernel(t, b, b.AddOp(b.Param(hlo.F32, rows, cols), b.Param(hlo.F32, rows, cols)))
	p, err := PlanConfig(k, "key", KernelConfig{Tile: Tile{128, 1024}, Flags: DefaultFlags()}, v4)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Staged(Staging{In: []int{1}, Out: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.PaddedBytes != 3*array || s.Plan.PaddedBytes != array || s.Plan.AvoidedBytes != 2*array {
		t.Errorf("HBM bytes %g -> %g (avoided %g), want %d -> %d (%d)", p.Plan.PaddedBytes, s.Plan.PaddedBytes, s.Plan.AvoidedBytes, 3*array, array, 2*array)
	}
	if s.Plan.StagedBytes != 2*array || s.Plan.Steps != p.Plan.Steps || s.Plan.VectorOps != p.Plan.VectorOps {
		t.Errorf("staged plan %+v: want 2 arrays in VMEM, the same steps and compute", s.Plan)
	}
	// One of three stream windows (two buffers each) is dropped, two arrays added.
	if want := p.Footprint()*2/3 + 2*array; s.Footprint() != want {
		t.Errorf("footprint %g, want %g", s.Footprint(), want)
	}
	if id := s.ID(); id != "key|tile=128x1024;flags=db2/u1;staged=in1+out" || p.ID() != "key|tile=128x1024;flags=db2/u1" {
		t.Errorf("IDs %q, %q", p.ID(), s.ID())
	}
	// Re-planning a staged config (another target, PlanConfig) gives the same plan.
	again, err := PlanConfig(s.Info, "key", s.Config, v4)
	if err != nil || again.Plan != s.Plan {
		t.Errorf("re-planned staged config: %+v, %v; want %+v", again.Plan, err, s.Plan)
	}
	// Unstaging gives the original plan back.
	if u, err := s.Staged(Staging{}); err != nil || u.Plan != p.Plan || u.ID() != p.ID() {
		t.Errorf("unstaged: %+v, %v", u.Plan, err)
	}
	small := v4
	small.VMEMBytes = 3 * array
	q, err := PlanConfig(k, "key", KernelConfig{Tile: Tile{128, 1024}, Flags: DefaultFlags()}, small)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Staged(Staging{In: []int{0, 1}, Out: true}); !errors.Is(err, ErrTileInvalid) {
		t.Errorf("three 2 MiB arrays and windows in 6 MiB: err = %v", err)
	}
}

// TestCoreRows: a megacore device deals output blocks to its cores in contiguous ranges,
// row blocks outer. An elementwise kernel over f32[4096,1024] tiled 256x1024 (16 row
// blocks) gives each of 2 cores 2048 whole rows; tiled 256x512 (2 blocks per row band)
// still 2048; a GEMM's RHS is read by every block: no core owns rows of it.
func TestCoreRows(t *testing.T) {
	b := hlo.NewBuilder("exp")
	k := kernel(t, b, b.Exp(b.Param(hlo.F32, 4096, 1024)))
	for _, tile := range []Tile{{256, 1024}, {256, 512}} {
		if r, ok := k.CoreRows(0, tile, 2); !ok || r != 2048 {
			t.Errorf("tile %s: %d rows per core (%v), want 2048", tile, r, ok)
		}
	}
	// 3 row blocks of 2 lane blocks on 2 cores: 3 blocks each, the middle band split.
	if _, ok := k.CoreRows(-1, Tile{1536, 512}, 2); ok {
		t.Error("a core range splitting a row band passed")
	}
	b = hlo.NewBuilder("mm")
	g := kernel(t, b, b.MatMul(b.Param(hlo.BF16, 512, 256), b.Param(hlo.BF16, 256, 1024)))
	if _, ok := g.CoreRows(1, Tile{256, 512, 256}, 2); ok {
		t.Error("a GEMM's RHS has rows per core")
	}
	if r, ok := g.CoreRows(0, Tile{256, 1024, 256}, 2); !ok || r != 256 {
		t.Errorf("GEMM LHS, one column block: %d rows per core (%v), want 256", r, ok)
	}
}
