package tune

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/zoo"
)

// TestCancelStopsCleanly: a cancelled run stops early with an error wrapping
// context.Canceled and records nothing in the store, whether the context is cancelled
// before the run or after a few measurements, for every strategy.
func TestCancelStopsCleanly(t *testing.T) {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		t.Fatal(err)
	}
	chip := testChip(t)
	const budget, cancelAfter = 200, 5
	for _, st := range Strategies() {
		for _, after := range []int{0, cancelAfter} {
			store := openStore(t, filepath.Join(t.TempDir(), "store.db"), chip.Name)
			ctx, cancel := context.WithCancel(context.Background())
			taken := 0
			hook := func(string) {
				taken++
				if taken == after {
					cancel()
				}
			}
			if after == 0 {
				cancel()
			}
			r, err := Run(ctx, m, forStrategy(st, Options{Chip: chip, Budget: budget, Seed: 1, Noise: 0.02, Store: store, measured: hook}))
			cancel()
			if !errors.Is(err, context.Canceled) || r != nil {
				t.Errorf("%s, cancelled after %d: report %v, error %v; want context.Canceled", st, after, r != nil, err)
			}
			if taken < after || taken >= budget {
				t.Errorf("%s, cancelled after %d: %d measurements taken", st, after, taken)
			}
			recs, err := store.Records(context.Background())
			if err != nil || len(recs) != 0 {
				t.Errorf("%s, cancelled after %d: the store holds %d records (%v)", st, after, len(recs), err)
			}
		}
	}
}

// TestRunManyCancel: cancelling a batch after its first program keeps that program's
// records and nothing of the second.
func TestRunManyCancel(t *testing.T) {
	chip := testChip(t)
	store := openStore(t, filepath.Join(t.TempDir(), "store.db"), chip.Name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first *Report
	_, err := RunMany(ctx, []string{"mlp_96x2_b1", "mlp_768x3_b8"}, Options{Chip: chip, Budget: 20, Seed: 1, Store: store}, func(r *Report) {
		first = r
		cancel()
	})
	if !errors.Is(err, context.Canceled) || first == nil || first.Program != "mlp_96x2_b1" {
		t.Fatalf("error %v, first report %v", err, first)
	}
	recs, err := store.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != first.StoreRecords {
		t.Errorf("the store holds %d records, the finished program recorded %d", len(recs), first.StoreRecords)
	}
}
