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

// TestLinearDataMatchesLinear checks LinearData against Linear (whose gradients
// TestLinearGradients checks against finite differences): the same value, and within
// fusedTol the same gradients of every input that is not data (each data input's part
// of dx is skipped, the others' computed by their own products); data inputs get none.
func TestLinearDataMatchesLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	// x0 [4,3] learned, x1 [4,2] data, x2 [4,6] learned, their weights, bias, addend.
	ins := []fdInput{randInput(rng, 4, 3), randInput(rng, 4, 2), randInput(rng, 4, 6), randInput(rng, 3, 5), randInput(rng, 2, 5), randInput(rng, 6, 5), randInput(rng, 5), randInput(rng, 4, 5)}
	data := []bool{false, true, false}
	build := func(withData bool) func(g *G.ExprGraph, xs []*G.Node) *G.Node {
		return func(g *G.ExprGraph, xs []*G.Node) *G.Node {
			if withData {
				return LinearData(xs[:3], xs[3:6], xs[6], xs[7], true, data)
			}
			return Linear(xs[:3], xs[3:6], xs[6], xs[7], true)
		}
	}
	wrt := func(i int) bool { return i != 1 }
	la, ga := scalarLossWRT(t, ins, build(true), wrt)
	lb, gb := scalarLossWRT(t, ins, build(false), wrt)
	if la != lb {
		t.Errorf("loss %.17g, Linear's %.17g", la, lb)
	}
	for i := range ga {
		if ga[i] == nil {
			continue
		}
		for j := range ga[i] {
			if d := math.Abs(ga[i][j] - gb[i][j]); d > fusedTol*math.Max(1, math.Abs(gb[i][j])) {
				t.Fatalf("gradient of input %d[%d]: %g, Linear's %g", i, j, ga[i][j], gb[i][j])
			}
		}
	}
	op := denseOp{k: 3, bias: true, add: true, relu: true, data: 0b010}
	if diff := op.DiffWRT(op.Arity()); diff[1] || !diff[0] || !diff[2] || !diff[3] {
		t.Errorf("DiffWRT = %v: want false for the data input 1 only", diff)
	}
	// A layer over data only (a head layer over configuration features): weights, bias
	// and addend still get their gradients.
	only := []fdInput{randInput(rng, 4, 2), randInput(rng, 2, 5), randInput(rng, 5), randInput(rng, 4, 5)}
	fused := func(g *G.ExprGraph, xs []*G.Node) *G.Node {
		return LinearData(xs[:1], xs[1:2], xs[2], xs[3], true, []bool{true})
	}
	plain := func(g *G.ExprGraph, xs []*G.Node) *G.Node { return Linear(xs[:1], xs[1:2], xs[2], xs[3], true) }
	notData := func(i int) bool { return i != 0 }
	_, ga = scalarLossWRT(t, only, fused, notData)
	_, gb = scalarLossWRT(t, only, plain, notData)
	for i := 1; i < len(ga); i++ {
		for j := range ga[i] {
			if d := math.Abs(ga[i][j] - gb[i][j]); d > fusedTol*math.Max(1, math.Abs(gb[i][j])) {
				t.Fatalf("data-only layer: gradient of input %d[%d]: %g, Linear's %g", i, j, ga[i][j], gb[i][j])
			}
		}
	}
}
