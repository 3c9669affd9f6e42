package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestLinearGradients checks Linear's gradients against finite differences, and its value
// and gradients against the separate ops (products, additions, Bias, ReLU) within
// fusedTol: two inputs with bias, addend and ReLU; one input without them.
func TestLinearGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	t.Run("two-inputs", func(t *testing.T) {
		ins := []fdInput{randInput(rng, 4, 3), randInput(rng, 4, 2), randInput(rng, 3, 5), randInput(rng, 2, 5), randInput(rng, 5), randInput(rng, 4, 5)}
		fused := func(g *G.ExprGraph, xs []*G.Node) *G.Node {
			return Linear(xs[:2], xs[2:4], xs[4], xs[5], true)
		}
		unfused := func(g *G.ExprGraph, xs []*G.Node) *G.Node {
			z := G.Must(G.Add(xs[5], G.Must(G.Add(G.Must(G.Mul(xs[0], xs[2])), G.Must(G.Mul(xs[1], xs[3]))))))
			return ReLU(Bias(z, xs[4]))
		}
		checkGrad(t, ins, fused)
		compareBuilds(t, ins, fused, unfused)
	})
	t.Run("one-input", func(t *testing.T) {
		ins := []fdInput{randInput(rng, 3, 4), randInput(rng, 4, 2)}
		fused := func(g *G.ExprGraph, xs []*G.Node) *G.Node { return Linear(xs[:1], xs[1:2], nil, nil, false) }
		unfused := func(g *G.ExprGraph, xs []*G.Node) *G.Node { return G.Must(G.Mul(xs[0], xs[1])) }
		checkGrad(t, ins, fused)
		compareBuilds(t, ins, fused, unfused)
	})
}

// compareBuilds checks that two builds of one function give the same loss and
// gradients within fusedTol (relative to the largest).
func compareBuilds(t *testing.T, ins []fdInput, a, b func(g *G.ExprGraph, xs []*G.Node) *G.Node) {
	t.Helper()
	la, ga := scalarLoss(t, ins, a, true)
	lb, gb := scalarLoss(t, ins, b, true)
	if math.Abs(la-lb) > fusedTol*math.Max(1, math.Abs(lb)) {
		t.Errorf("loss %.17g, reference %.17g", la, lb)
	}
	for i := range ga {
		d, scale := 0.0, 1.0
		for j := range ga[i] {
			d = math.Max(d, math.Abs(ga[i][j]-gb[i][j]))
			scale = math.Max(scale, math.Abs(gb[i][j]))
		}
		if d > fusedTol*scale {
			t.Errorf("gradient of input %d differs from the reference by %g", i, d)
		}
	}
}
