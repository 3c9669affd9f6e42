package spmd_test

import (
	"math"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/spmd"
	"github.com/tpucost/tpucost/tpusim"
)

// matmul is a 2048x4096 by 4096x1024 matmul with the given shardings on its operands
// and result (empty: none), over num_partitions=8.
func matmul(t *testing.T, lhs, rhs, out string) *hlo.Module {
	t.Helper()
	attr := func(s string) string {
		if s == "" {
			return ""
		}
		return ", sharding=" + s
	}
	src := "HloModule mm, num_partitions=8\n\nENTRY e {\n" +
		"  a = bf16[2048,4096] parameter(0)" + attr(lhs) + "\n" +
		"  b = bf16[4096,1024] parameter(1)" + attr(rhs) + "\n" +
		"  ROOT d = bf16[2048,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}" + attr(out) + "\n}\n"
	m, err := hlo.Parse("mm.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// collectives lists the collective instructions of m's entry by opcode.
func collectives(m *hlo.Module) map[hlo.Opcode][]*hlo.Instruction {
	out := map[hlo.Opcode][]*hlo.Instruction{}
	for _, in := range m.Entry.Instructions {
		switch in.Opcode {
		case hlo.OpAllReduce, hlo.OpAllGather, hlo.OpReduceScatter, hlo.OpAllToAll:
			out[in.Opcode] = append(out[in.Opcode], in)
		}
	}
	return out
}

func partition(t *testing.T, m *hlo.Module, n int) *hlo.Module {
	t.Helper()
	pm, res, err := spmd.Partition(m, n)
	if err != nil {
		t.Fatal(err)
	}
	if pm == nil || res.Partitions != n {
		t.Fatalf("not partitioned over %d devices: %v", n, res)
	}
	return pm
}

func findOp(m *hlo.Module, op hlo.Opcode) *hlo.Instruction {
	for _, in := range m.Entry.Instructions {
		if in.Opcode == op {
			return in
		}
	}
	return nil
}

// TestContractingDotAllReduce: a dot tiled along its contracting dimension computes a
// per-device dot over 1/8 of K and sums the partial results with an all-reduce of the
// output over the 8 devices; the simulator times both.
func TestContractingDotAllReduce(t *testing.T) {
	m := matmul(t, "{devices=[1,8]<=[8]}", "{devices=[8,1]<=[8]}", "{replicated}")
	pm := partition(t, m, 8)
	d := findOp(pm, hlo.OpDot)
	if got := d.Operands[0].Shape.Dims; got[0] != 2048 || got[1] != 512 {
		t.Errorf("per-device lhs %v, want [2048 512]", got)
	}
	cs := collectives(pm)
	if len(cs[hlo.OpAllReduce]) != 1 || len(cs) != 1 {
		t.Fatalf("collectives %v, want one all-reduce", cs)
	}
	ar := cs[hlo.OpAllReduce][0]
	if ar.Operands[0] != d || !ar.Shape.SameDims(hlo.Array(hlo.BF16, 2048, 1024)) {
		t.Errorf("all-reduce %s of %s, want of the dot's [2048,1024] output", ar, ar.Operands[0].Name)
	}
	if v, _ := ar.ExtraAttr("replica_groups"); v != "[1,8]<=[8]" {
		t.Errorf("replica_groups %q, want [1,8]<=[8]", v)
	}
	rep := simulate(t, m, 8)
	if rep.Partitions != 8 || rep.CollectiveNs <= 0 {
		t.Errorf("partitions %d, collective_ns %g: want 8 and an all-reduce timed", rep.Partitions, rep.CollectiveNs)
	}
	k, _ := tpusim.Preset("v4")
	want, err := tpusim.CollectiveTime(compiler.CollAllReduce, 2048*1024*2, 8, k)
	if err != nil {
		t.Fatal(err)
	}
	// The all-reduce is the program's only collective: collective_ns is its time exactly
	// (both come from the same collective model; 1e-9 is float rounding).
	if math.Abs(rep.CollectiveNs-want.Ns) > 1e-9*want.Ns {
		t.Errorf("collective_ns %g, want the all-reduce's %g", rep.CollectiveNs, want.Ns)
	}
}

// TestNonContractingDotNoCollective: a dot tiled along a non-contracting dimension (the
// lhs rows) runs on each device's rows and needs no collective.
func TestNonContractingDotNoCollective(t *testing.T) {
	pm := partition(t, matmul(t, "{devices=[8,1]<=[8]}", "{replicated}", ""), 8)
	if cs := collectives(pm); len(cs) != 0 {
		t.Errorf("collectives %v, want none", cs)
	}
	if d := findOp(pm, hlo.OpDot); !d.Shape.SameDims(hlo.Array(hlo.BF16, 256, 1024)) {
		t.Errorf("per-device dot %s, want [256,1024]", d.Shape)
	}
}

// TestReshardAllGather: a value tiled along its rows that is wanted replicated (a
// Sharding constraint) is all-gathered along the rows.
func TestReshardAllGather(t *testing.T) {
	src := `HloModule r, num_partitions=8

ENTRY e {
  a = f32[1024,256] parameter(0), sharding={devices=[8,1]<=[8]}
  n = f32[1024,256] negate(a)
  ROOT c = f32[1024,256] custom-call(n), custom_call_target="Sharding", sharding={replicated}
}
`
	m, err := hlo.Parse("r.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pm := partition(t, m, 8)
	cs := collectives(pm)
	if len(cs[hlo.OpAllGather]) != 1 || len(cs) != 1 {
		t.Fatalf("collectives %v, want one all-gather", cs)
	}
	ag := cs[hlo.OpAllGather][0]
	if !ag.Shape.SameDims(hlo.Array(hlo.F32, 1024, 256)) || ag.Operands[0].Shape.Dims[0] != 128 || ag.Dimensions[0] != 0 {
		t.Errorf("all-gather %s of %s along %v, want [128,256] -> [1024,256] along 0", ag.Shape, ag.Operands[0].Shape, ag.Dimensions)
	}
	if pm.Entry.Root != ag {
		t.Errorf("root %s, want the all-gather", pm.Entry.Root)
	}
}

// TestShardedMatmulFlops: the per-device flops of an 8-way sharded matmul are an eighth
// of the global ones.
func TestShardedMatmulFlops(t *testing.T) {
	flops := func(n int) float64 {
		m := matmul(t, "{devices=[8,1]<=[8]}", "{replicated}", "")
		k, _ := tpusim.Preset("v4")
		p, err := compiler.Compile(m, nil, compiler.Options{Target: k.Target, Partitions: n})
		if err != nil {
			t.Fatal(err)
		}
		f := 0.0
		for _, k := range p.Kernels {
			f += k.Info.Flops * k.Weight
		}
		return f
	}
	global, local := flops(1), flops(8)
	// Exact: 2048 rows split 8 ways evenly; 1e-12 is float rounding.
	if math.Abs(local*8-global) > 1e-12*global {
		t.Errorf("per-device flops %g, global %g: want an eighth", local, global)
	}
}

// TestInconsistentAnnotation: a sharding naming another number of devices than the
// header's num_partitions, or one that cannot be spread over --partitions, is refused
// naming its line:col.
func TestInconsistentAnnotation(t *testing.T) {
	src := "HloModule x, num_partitions=4\n\nENTRY e {\n  ROOT a = f32[64,64] parameter(0), sharding={devices=[1,8]<=[8]}\n}\n"
	m, err := hlo.Parse("x.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = spmd.Partition(m, 0)
	if err == nil || !strings.Contains(err.Error(), "4:46") || !strings.Contains(err.Error(), "num_partitions=4") {
		t.Errorf("error %v, want one naming 4:46 (the sharding's brace) and num_partitions=4", err)
	}
	m2 := matmul(t, "{devices=[8,1]<=[8]}", "{replicated}", "")
	if _, _, err := spmd.Partition(m2, 3); err == nil || !strings.Contains(err.Error(), "--partitions 3") {
		t.Errorf("--partitions 3 of 8: error %v, want one naming --partitions 3", err)
	}
}

// TestUnannotatedKeepsPath: a module without shardings is not partitioned.
func TestUnannotatedKeepsPath(t *testing.T) {
	pm, _, err := spmd.Partition(matmul(t, "", "", ""), 0)
	if err != nil || pm != nil {
		t.Errorf("Partition of an unannotated module = %v, %v; want nil, nil", pm, err)
	}
}

func simulate(t *testing.T, m *hlo.Module, n int) *tpusim.Report {
	t.Helper()
	k, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: k.Target, Partitions: n})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tpusim.SimulateWith(p, k, tpusim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestHeaderWithoutNumPartitions: XLA's benchmark dumps carry tiled shardings but no
// num_partitions in their header (their runner is told it): the count is the devices
// the shardings name, and a sharding naming another count is still an error.
func TestHeaderWithoutNumPartitions(t *testing.T) {
	m, err := hlo.ParseFile("../hlo/testdata/real_more/sharded_no_num_partitions.hlo")
	if err != nil {
		t.Fatal(err)
	}
	if n := spmd.NumPartitions(m); n != 2 {
		t.Errorf("NumPartitions = %d, want 2 (its sharding={devices=[2,1,1,1,1]<=[2]})", n)
	}
	pm, res, err := spmd.Partition(m, 0)
	if err != nil || pm == nil || res.Partitions != 2 {
		t.Fatalf("Partition(m, 0) = %v, %v; want 2 partitions", res, err)
	}
	if n := spmd.NumPartitions(pm); n != 2 {
		t.Errorf("partitioned module: num_partitions %d, want 2", n)
	}
	src := "HloModule x\n\nENTRY e {\n  a = f32[64,64] parameter(0), sharding={devices=[1,2]<=[2]}\n  ROOT b = f32[64,64] negate(a), sharding={devices=[4,1]<=[4]}\n}\n"
	m2, err := hlo.Parse("x.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := spmd.Partition(m2, 0); err == nil || !strings.Contains(err.Error(), "5:") || !strings.Contains(err.Error(), "num_partitions=2") {
		t.Errorf("disagreeing shardings: error %v, want one naming line 5 and num_partitions=2", err)
	}
	if n := spmd.NumPartitions(matmul(t, "", "", "")); n != 8 {
		t.Errorf("header num_partitions=8: NumPartitions = %d", n)
	}
}

// TestOptimizationBarrierKeepsPieces: an opt-barrier (JAX's rematerialization wraps a
// tuple of sharded values in one, as in XLA's llama and mixtral benchmark dumps) is an
// identity: its per-device result is its operand's pieces, and the partitioned module
// verifies (it once kept the global tuple shape over per-device operands).
func TestOptimizationBarrierKeepsPieces(t *testing.T) {
	src := `HloModule ob, num_partitions=4

ENTRY e {
  a = f32[64,32] parameter(0), sharding={devices=[4,1]<=[4]}
  b = f32[32] parameter(1), sharding={replicated}
  t = (f32[64,32], f32[32]) tuple(a, b)
  o = (f32[64,32], f32[32]) opt-barrier(t)
  x = f32[64,32] get-tuple-element(o), index=0
  ROOT n = f32[64,32] negate(x), sharding={devices=[4,1]<=[4]}
}
`
	m, err := hlo.Parse("ob.hlo", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pm := partition(t, m, 4)
	if err := hlo.Verify(pm); err != nil {
		t.Fatalf("partitioned module does not verify: %v", err)
	}
	ob := findOp(pm, hlo.OpOptimizationBarrier)
	if ob == nil || ob.Shape.StringNoLayout() != "(f32[16,32], f32[32])" {
		t.Fatalf("opt-barrier = %v, want the pieces (f32[16,32], f32[32])", ob)
	}
	if n := len(collectives(pm)); n != 0 {
		t.Errorf("%d kinds of collectives, want none (the barrier moves no data)", n)
	}
}
