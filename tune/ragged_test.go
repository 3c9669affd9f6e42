package tune

import (
	"context"
	"math"
	"testing"
)

// raggedTol bounds float round-off between two orders of summing a few products.
const raggedTol = 1e-9

// TestRunRagged: tuning a ragged batch spends at most its budget, never makes the ragged
// time worse than with default configs, and its tuned time is the sum of each sequence's
// share of its length's tuned program plus the packing; equal lengths are a dense batch.
func TestRunRagged(t *testing.T) {
	opts := Options{Chip: testChip(t), Budget: 24, Seed: 2, Noise: 0.02, Strategy: Evolution}
	lengths := []int{32, 64, 64, 128}
	r, err := RunRagged(context.Background(), shapesModel, lengths, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Measurements > opts.Budget || len(r.Shapes) != 3 || r.Batch != 32 {
		t.Fatalf("%d measurements, %d shapes, batch %d", r.Measurements, len(r.Shapes), r.Batch)
	}
	if r.TunedRaggedNs > r.DefaultRaggedNs || !(r.DefaultRaggedNs < r.PaddedNs) {
		t.Errorf("padded %.0f, ragged default %.0f, tuned %.0f", r.PaddedNs, r.DefaultRaggedNs, r.TunedRaggedNs)
	}
	counts := map[int]float64{32: 1, 64: 2, 128: 1}
	want := r.PackNs
	for _, s := range r.Shapes {
		want += counts[s.Value] * s.TunedNs / float64(r.Batch)
	}
	if math.Abs(r.TunedRaggedNs-want) > raggedTol*want {
		t.Errorf("tuned ragged %.3f ns, per-length sum %.3f ns", r.TunedRaggedNs, want)
	}
	d, err := RunRagged(context.Background(), shapesModel, []int{64, 64}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if d.DefaultRaggedNs != d.PaddedNs || d.PackNs != 0 || d.TunedRaggedNs > d.PaddedNs {
		t.Errorf("equal lengths: %+v", d)
	}
}
