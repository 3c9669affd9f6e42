package tune

import (
	"errors"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestParseKinds: any case, duplicates and empty items dropped, in the order given; an
// unknown kind is an error naming it.
func TestParseKinds(t *testing.T) {
	got, err := ParseKinds(" Fusion,layout,,fusion")
	if err != nil || !slices.Equal(got, []compiler.Kind{compiler.KindFusion, compiler.KindLayout}) {
		t.Fatalf("ParseKinds: %v, %v", got, err)
	}
	if got, err := ParseKinds(""); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v, %v", got, err)
	}
	if _, err := ParseKinds("layout,bogus"); err == nil {
		t.Error("unknown kind accepted")
	}
	if KindList(got) != "fusion,layout" {
		t.Errorf("KindList: %q", KindList(got))
	}
}

// TestSearchKinds: xtat takes no kinds, a policy goes with rl only, rl needs one and
// decides layout and fusion only; other strategies keep the kinds asked for.
func TestSearchKinds(t *testing.T) {
	tile := []compiler.Kind{compiler.KindTile}
	if _, _, err := SearchKinds(XTAT, tile, ""); err == nil {
		t.Error("xtat with kinds accepted")
	}
	if _, _, err := SearchKinds(Annealing, nil, "dir"); err == nil {
		t.Error("a policy with sa accepted")
	}
	if _, _, err := SearchKinds(RL, nil, ""); !errors.Is(err, ErrNoPolicy) {
		t.Errorf("rl without a policy: %v", err)
	}
	if _, _, err := SearchKinds(RL, tile, "dir"); err == nil {
		t.Error("rl deciding tiles accepted")
	}
	got, p, err := SearchKinds(Annealing, tile, "")
	if err != nil || p != nil || !slices.Equal(got, tile) {
		t.Errorf("sa: %v, %v, %v", got, p, err)
	}
}
