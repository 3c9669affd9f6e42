package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// sageUnfused is the GraphSAGE stack composed of the separate ops (two gathers, three
// products, bias, ReLU, L2), as SAGE computed it before the fused op: the reference the
// fused op is checked against.
func sageUnfused(h *G.Node, adj Adjacency, layers []SAGELayer, l2Eps float64) *G.Node {
	for _, l := range layers {
		ain := Gather(h, adj.In, ReduceMean, adj.DIn)
		aout := Gather(h, adj.Out, ReduceMean, adj.DOut)
		z := G.Must(G.Add(G.Must(G.Add(G.Must(G.Mul(h, l.WSelf)), G.Must(G.Mul(ain, l.WIn)))), G.Must(G.Mul(aout, l.WOut))))
		h = ReLU(Bias(z, l.B))
		if l2Eps > 0 {
			h = L2Norm(h, l2Eps)
		}
	}
	return h
}

// fusedTol bounds the difference between the fused and unfused layers in float64,
// relative to the largest value: they sum the same products in another order (one
// product of 3·Hin terms against three of Hin, added), a relative difference of a few
// float64 roundings, 2⁻⁵² ≈ 2.2e-16, per term of these 6-term sums.
const fusedTol = 1e-13

// sageCase is a small graph with padding slots, a node without operands and one without
// users (4 nodes, edges 0→1, 0→2, 1→3, 2→3, two slots per direction), and two layers'
// inputs 3 → 2 → 2 with biases that keep some ReLUs live.
func sageCase(rng *rand.Rand) (in, out []int, ins []fdInput) {
	in = []int{-1, -1, 0, -1, 0, -1, 1, 2}
	out = []int{1, 2, 3, -1, 3, -1, -1, -1}
	ins = []fdInput{randInput(rng, 4, 3)}
	for l := range 2 {
		w := 3
		if l > 0 {
			w = 2
		}
		ins = append(ins, randInput(rng, w, 2), randInput(rng, w, 2), randInput(rng, w, 2), randInput(rng, 2))
	}
	for i := range ins[4].data {
		ins[4].data[i] += 0.5
		ins[8].data[i] += 0.5
	}
	return in, out, ins
}

func sageBuild(in, out []int, eps float64, stack func(*G.Node, Adjacency, []SAGELayer, float64) *G.Node) func(g *G.ExprGraph, xs []*G.Node) *G.Node {
	return func(g *G.ExprGraph, xs []*G.Node) *G.Node {
		adj := Adjacency{In: intNode(g, "in", in), Out: intNode(g, "out", out), DIn: 2, DOut: 2}
		layers := []SAGELayer{{xs[1], xs[2], xs[3], xs[4]}, {xs[5], xs[6], xs[7], xs[8]}}
		return stack(xs[0], adj, layers, eps)
	}
}

// TestSAGEFusedMatchesUnfused checks the fused layer's value and every gradient against
// the composition of the separate ops, with and without L2 normalization, and its
// gradients without L2 against finite differences (TestOpGradients checks them with it).
func TestSAGEFusedMatchesUnfused(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in, out, ins := sageCase(rng)
	for _, eps := range []float64{0, 1e-6} {
		lf, gf := scalarLoss(t, ins, sageBuild(in, out, eps, SAGE), true)
		lu, gu := scalarLoss(t, ins, sageBuild(in, out, eps, sageUnfused), true)
		if math.Abs(lf-lu) > fusedTol*math.Max(1, math.Abs(lu)) {
			t.Errorf("eps %g: fused loss %.17g, unfused %.17g", eps, lf, lu)
		}
		for i := range gf {
			d, scale := 0.0, 1.0
			for j := range gf[i] {
				d = math.Max(d, math.Abs(gf[i][j]-gu[i][j]))
				scale = math.Max(scale, math.Abs(gu[i][j]))
			}
			if d > fusedTol*scale {
				t.Errorf("eps %g: gradient of input %d differs by %g", eps, i, d)
			}
		}
	}
	checkGrad(t, ins, sageBuild(in, out, 0, SAGE))
}

// TestSAGEFusedReusesBuffers runs one float32 machine several times with changing
// inputs: the op's buffers are reused from run to run, and every run must give what a
// fresh machine gives for its inputs, byte for byte.
func TestSAGEFusedReusesBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in, out, ins := sageCase(rng)
	type machine struct {
		vm   G.VM
		xs   []*G.Node
		loss *G.Node
	}
	build := func() machine {
		g := G.NewGraph()
		var xs []*G.Node
		for i, x := range ins {
			xs = append(xs, G.NewTensor(g, tensor.Float32, len(x.shape), G.WithShape(x.shape...), G.WithName(string(rune('a'+i)))))
		}
		y := sageBuild(in, out, 1e-6, SAGE)(g, xs)
		loss := G.Must(G.Sum(G.Must(G.Square(y))))
		if _, err := G.Grad(loss, xs...); err != nil {
			t.Fatal(err)
		}
		return machine{G.NewTapeMachine(g, G.BindDualValues(xs...)), xs, loss}
	}
	run := func(m machine, data [][]float32) []float32 {
		for i, x := range m.xs {
			if err := G.Let(x, tensor.New(tensor.WithShape(ins[i].shape...), tensor.WithBacking(append([]float32(nil), data[i]...)))); err != nil {
				t.Fatal(err)
			}
		}
		defer m.vm.Reset()
		if err := m.vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		res := []float32{m.loss.Value().Data().(float32)}
		for _, x := range m.xs {
			g, err := x.Grad()
			if err != nil {
				t.Fatal(err)
			}
			res = append(res, g.Data().([]float32)...)
			g.(tensor.Tensor).Zero()
		}
		return res
	}
	reused := build()
	defer reused.vm.Close()
	for r := range 3 {
		data := make([][]float32, len(ins))
		for i, x := range ins {
			for _, v := range x.data {
				data[i] = append(data[i], float32(v+0.1*float64(r)*rng.NormFloat64()))
			}
		}
		fresh := build()
		want := run(fresh, data)
		fresh.vm.Close()
		got := run(reused, data)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("run %d: value %d is %g on the reused machine, %g on a fresh one", r, i, got[i], want[i])
			}
		}
	}
}
