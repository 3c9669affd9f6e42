package features

import (
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestModuleNodeColumns: every block combination has as many names as columns, and the
// mover block lists ModuleMoverWidth opcodes.
func TestModuleNodeColumns(t *testing.T) {
	if len(ModuleMovers()) != ModuleMoverWidth {
		t.Fatalf("%d movers, ModuleMoverWidth %d", len(ModuleMovers()), ModuleMoverWidth)
	}
	for _, b := range []ModuleBlocks{{}, {Movers: true}, {Context: true}, {Movers: true, Context: true}} {
		if n, w := len(ModuleNodeNames(b)), ModuleNodeWidth(b); n != w {
			t.Errorf("%+v: %d names, width %d", b, n, w)
		}
	}
}

// TestModuleNodeFeatures checks the columns of one node against their definitions
// (ModuleNodeNames), with every block.
func TestModuleNodeFeatures(t *testing.T) {
	m, err := hlo.Parse("t", []byte(`HloModule t

ENTRY main {
  p = f32[8] parameter(0)
  b = f32[4,8] broadcast(p), dimensions={1}
  ROOT t = (f32[4,8], f32[8]) tuple(b, p)
}
`))
	if err != nil {
		t.Fatal(err)
	}
	bc := m.Entry.Lookup("b")
	blocks := ModuleBlocks{Movers: true, Context: true}
	names := ModuleNodeNames(blocks)
	col := func(f []float32, name string) float32 {
		for i, n := range names {
			if n == name {
				return f[i]
			}
		}
		t.Fatalf("no column %s", name)
		return 0
	}
	f := make([]float32, ModuleNodeWidth(blocks))
	ModuleNodeFeatures(f, ModuleNode{In: bc, Shape: bc.Shape, Users: 3, InLoop: true}, blocks)
	// The definitions, in float64 then rounded once, as the featurizer computes them.
	want := map[string]float32{
		"cat_" + bc.Opcode.Category().String(): 1, "op_broadcast": 1, "op_reshape": 0,
		"elements_log": float32(math.Log2(1+32) / 32), "bytes_log": float32(math.Log2(1+128) / 40), "rank": float32(2) / 6,
		"operands_log": float32(math.Log2(1+1) / 4), "users_log": float32(math.Log2(1+3) / 4),
		"is_root": 0, "is_parameter": 0, "is_known_constant": 0, "in_loop": 1,
	}
	for name, w := range want {
		if got := col(f, name); got != w {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	for i, n := range names { // every other column is zero
		if _, ok := want[n]; !ok && f[i] != 0 {
			t.Errorf("%s = %v, want 0", n, f[i])
		}
	}
	// A tuple: the size columns describe the Shape the builder passes.
	tup := m.Entry.Root
	whole, first := make([]float32, ModuleNodeWidth(ModuleBlocks{})), make([]float32, ModuleNodeWidth(ModuleBlocks{}))
	ModuleNodeFeatures(whole, ModuleNode{In: tup, Shape: tup.Shape, Root: true}, ModuleBlocks{})
	ModuleNodeFeatures(first, ModuleNode{In: tup, Shape: tup.Shape.Tuple[0], Root: true}, ModuleBlocks{})
	o := ModuleCategoryWidth
	if whole[o] != 0 || whole[o+1] != float32(math.Log2(1+160)/40) || whole[o+2] != 0 {
		t.Errorf("tuple as itself: elements %v bytes %v rank %v; want 0, log2(161)/40, 0", whole[o], whole[o+1], whole[o+2])
	}
	if first[o] != float32(math.Log2(1+32)/32) || first[o+2] != float32(2)/6 {
		t.Errorf("tuple as its first element: elements %v rank %v", first[o], first[o+2])
	}
}
