package tune

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/zoo"
)

// TestProposeDropsInfeasible: a proposal the compiler cannot tile (cost.ErrTileInvalid)
// is dropped and counted, the others come back in proposal order; any other compile
// error ends the search.
func TestProposeDropsInfeasible(t *testing.T) {
	r := &run{workers: 3}
	s := newSearch(r, nil, nil, "test", nil)
	cands, err := s.propose(context.Background(), 7, func(i int, _ *rand.Rand) (*candidate, error) {
		if i%3 == 1 {
			return nil, fmt.Errorf("compiling candidate: kernel k: %w: no tile fits", cost.ErrTileInvalid)
		}
		return &candidate{fp: fmt.Sprint(i)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cands {
		got = append(got, c.fp)
	}
	if want := "[0 2 3 5 6]"; fmt.Sprint(got) != want || r.infeasible != 2 {
		t.Errorf("got %v (%d infeasible), want %s (2 infeasible)", got, r.infeasible, want)
	}
	boom := errors.New("boom")
	if _, err := s.propose(context.Background(), 2, func(int, *rand.Rand) (*candidate, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("another compile error: got %v, want it returned", err)
	}
}

// TestTuneTilesEveryCandidate: on ssdlite320_coco_b16_train the XTAT layout+fusion phase
// proposes layouts that once left a convolution no tile fitting v4's VMEM (the run ended
// with "no tile of this kernel fits", and later dropped them as infeasible). The tiler
// now fits every kernel (issue 31: windows capped at their operand, small inputs
// streamed, windows in pieces as the last resort), so the run compiles every proposal,
// drops none, and is never slower than the default compile. Dropping a proposal that
// cannot be tiled stays tested by TestProposeDropsInfeasible.
func TestTuneTilesEveryCandidate(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a large training program")
	}
	o := Defaults()
	o.Chip, o.Budget, o.Seed = testChip(t), 100, 1
	m, err := zoo.Build("ssdlite320_coco_b16_train")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Infeasible != 0 || rep.TunedNs > rep.DefaultNs {
		t.Errorf("infeasible %d, tuned %.0f ns vs default %.0f ns: want every proposal tiled and no slowdown", rep.Infeasible, rep.TunedNs, rep.DefaultNs)
	}
}
