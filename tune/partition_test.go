package tune

import (
	"context"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestPartitionStart: with Options.Fusion = partition every strategy starts from the
// partition-fusion program: start_ns is its noiseless time, default_ns stays the default
// compile's, and the result is never slower than either.
func TestPartitionStart(t *testing.T) {
	chip := testChip(t)
	// a = exp(x) read by a row sum and a negation (both outputs): XLA materializes a,
	// partition fusion computes it in both consumers (compiler's TestPartitionSiblingsFused).
	b := hlo.NewBuilder("siblings")
	x := b.Param(hlo.F32, 4096, 1024)
	a := b.Exp(x)
	m, err := b.Build(b.ReduceSum(a, 1), b.Neg(a))
	if err != nil {
		t.Fatal(err)
	}
	def, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		t.Fatal(err)
	}
	part, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target, Fusion: compiler.FusionPartition})
	if err != nil {
		t.Fatal(err)
	}
	defNs, partNs := truth(t, def, chip), truth(t, part, chip)
	if !(partNs < defNs) {
		t.Fatalf("partition program %.0f ns, default %.0f ns: the test needs partition fusion to win", partNs, defNs)
	}
	for _, st := range []Strategy{XTAT, Random} {
		o := Defaults()
		o.Chip, o.Budget, o.Strategy, o.Fusion = chip, 12, st, compiler.FusionPartition
		rep, err := Run(context.Background(), m, o)
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		if rep.StartNs != partNs || rep.DefaultNs != defNs || rep.TunedNs > rep.StartNs {
			t.Errorf("%s: start %.0f, default %.0f, tuned %.0f ns; want start = the partition program's %.0f, default %.0f, tuned <= start",
				st, rep.StartNs, rep.DefaultNs, rep.TunedNs, partNs, defNs)
		}
	}
	// --strategy partition is XTAT from the partition program: the same run.
	o := Defaults()
	o.Chip, o.Budget = chip, 12
	viaFusion, viaStrategy := o, o
	viaFusion.Fusion = compiler.FusionPartition
	viaStrategy.Strategy = Partition
	ra, err := Run(context.Background(), m, viaFusion)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := Run(context.Background(), m, viaStrategy)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Strategy != "partition" || ra.StartNs != rb.StartNs || ra.TunedNs != rb.TunedNs || ra.Measurements != rb.Measurements {
		t.Errorf("strategy partition: %s start %.0f tuned %.0f (%d measurements); want the xtat run from --fusion partition: start %.0f tuned %.0f (%d)",
			rb.Strategy, rb.StartNs, rb.TunedNs, rb.Measurements, ra.StartNs, ra.TunedNs, ra.Measurements)
	}
}
