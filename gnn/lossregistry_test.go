package gnn

import (
	"math"
	"strings"
	"testing"
)

// phiDerivTol bounds |φ'(z) − the central difference of φ| at step phiStep: the
// difference's truncation error is h²/6 times φ's third derivative (at most 0.1 for the
// logistic φ, 0 for the hinge away from its kink), about 2e-12, and its rounding error
// about 1e-16/h = 1e-11; 1e-6 leaves five orders of room.
const (
	phiStep     = 1e-5
	phiDerivTol = 1e-6
)

// TestLossRegistry: every registered loss (lossDefs) parses by its name, ParseLoss's
// error names them all, a loss ranks exactly when it is pairwise or listwise, and a
// pairwise loss's φ' is the derivative of its φ (away from the hinge's kink at 1).
func TestLossRegistry(t *testing.T) {
	_, err := ParseLoss("nope")
	if err == nil {
		t.Fatal("ParseLoss(nope) accepted")
	}
	for _, d := range lossDefs() {
		l, perr := ParseLoss(string(d.name))
		if perr != nil || l != d.name {
			t.Errorf("ParseLoss(%s) = %v, %v", d.name, l, perr)
		}
		if !strings.Contains(err.Error(), string(d.name)) || !strings.Contains(LossNames(), string(d.name)) {
			t.Errorf("%s missing from the list: %v; %s", d.name, err, LossNames())
		}
		if d.name.Rank() != (d.form != pointwise) || d.name.pairwise() != (d.phi != nil) {
			t.Errorf("%s: Rank %v pairwise %v, form %d", d.name, d.name.Rank(), d.name.pairwise(), d.form)
		}
		if d.phi == nil {
			continue
		}
		for _, z := range []float64{-3, -0.5, 0, 0.25, 0.9, 1.5, 4} {
			num := (d.phi.value(z+phiStep) - d.phi.value(z-phiStep)) / (2 * phiStep)
			if got := d.phi.deriv(z); math.Abs(got-num) > phiDerivTol {
				t.Errorf("%s: φ'(%g) = %g, the difference gives %g", d.name, z, got, num)
			}
		}
	}
}
