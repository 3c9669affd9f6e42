package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// fdInput is one float input of a gradient check: its shape and values.
type fdInput struct {
	shape []int
	data  []float64
}

// scalarLoss builds Σ out ⊙ r (r fixed random weights, so every output entry matters)
// over the graph that build makes from float64 input nodes, runs it and returns the loss
// and, with grads, the analytic gradient of every input.
func scalarLoss(t *testing.T, ins []fdInput, build func(g *G.ExprGraph, xs []*G.Node) *G.Node, grads bool) (float64, [][]float64) {
	t.Helper()
	l, gs := scalarLossWRT(t, ins, build, func(int) bool { return grads })
	if !grads {
		return l, nil
	}
	return l, gs
}

// scalarLossWRT is scalarLoss with gradients (nil for the others) of the inputs i for
// which wrt(i) holds.
func scalarLossWRT(t *testing.T, ins []fdInput, build func(g *G.ExprGraph, xs []*G.Node) *G.Node, wrt func(int) bool) (float64, [][]float64) {
	t.Helper()
	g := G.NewGraph()
	var xs, diff []*G.Node
	for i, in := range ins {
		v := tensor.New(tensor.WithShape(in.shape...), tensor.WithBacking(append([]float64(nil), in.data...)))
		x := G.NewTensor(g, tensor.Float64, len(in.shape), G.WithShape(in.shape...), G.WithName(string(rune('a'+i))), G.WithValue(v))
		xs = append(xs, x)
		if wrt(i) {
			diff = append(diff, x)
		}
	}
	out := build(g, xs)
	n := out.Shape().TotalSize()
	rng := rand.New(rand.NewPCG(3, 4))
	r := make([]float64, n)
	for i := range r {
		r[i] = 2*rng.Float64() - 1
	}
	rn := G.NewTensor(g, tensor.Float64, out.Shape().Dims(), G.WithShape(out.Shape()...), G.WithName("r"),
		G.WithValue(tensor.New(tensor.WithShape(out.Shape()...), tensor.WithBacking(r))))
	loss := G.Must(G.Sum(G.Must(G.HadamardProd(out, rn))))
	var vm G.VM
	if len(diff) > 0 {
		if _, err := G.Grad(loss, diff...); err != nil {
			t.Fatal(err)
		}
		vm = G.NewTapeMachine(g, G.BindDualValues(diff...))
	} else {
		vm = G.NewTapeMachine(g)
	}
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	gs := make([][]float64, len(xs))
	for i, x := range xs {
		if !wrt(i) {
			continue
		}
		gv, err := x.Grad()
		if err != nil {
			t.Fatal(err)
		}
		gs[i] = append([]float64(nil), gv.Data().([]float64)...)
	}
	return loss.Value().Data().(float64), gs
}

// checkGrad compares the analytic gradients of build with central finite differences.
func checkGrad(t *testing.T, ins []fdInput, build func(g *G.ExprGraph, xs []*G.Node) *G.Node) {
	t.Helper()
	const step, rel, abs = 1e-6, 1e-6, 1e-8
	_, analytic := scalarLoss(t, ins, build, true)
	nonzero := false
	for i := range ins {
		for j := range ins[i].data {
			x := ins[i].data[j]
			ins[i].data[j] = x + step
			lp, _ := scalarLoss(t, ins, build, false)
			ins[i].data[j] = x - step
			lm, _ := scalarLoss(t, ins, build, false)
			ins[i].data[j] = x
			fd := (lp - lm) / (2 * step)
			a := analytic[i][j]
			if math.Abs(a-fd) > abs+rel*math.Max(math.Abs(a), math.Abs(fd)) {
				t.Errorf("input %d[%d]: analytic %.10g, finite difference %.10g", i, j, a, fd)
			}
			nonzero = nonzero || a != 0
		}
	}
	if !nonzero {
		t.Error("every gradient is 0: the check is vacuous")
	}
}

func randInput(rng *rand.Rand, shape ...int) fdInput {
	d := make([]float64, Size(shape))
	for i := range d {
		d[i] = 2*rng.Float64() - 1
	}
	return fdInput{shape: shape, data: d}
}

func intNode(g *G.ExprGraph, name string, idx []int) *G.Node {
	return G.NewVector(g, tensor.Int, G.WithShape(len(idx)), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithShape(len(idx)), tensor.WithBacking(append([]int(nil), idx...)))))
}

func TestOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Groups of 3 slots over 5 rows: padding, repeated rows, an empty group.
	idx := []int{0, 2, -1, 4, 4, 1, -1, -1, -1, 3, 0, 2}
	for _, red := range []Reduction{ReduceSum, ReduceMean, ReduceMax} {
		t.Run("gather/"+string(red), func(t *testing.T) {
			checkGrad(t, []fdInput{randInput(rng, 5, 4)}, func(g *G.ExprGraph, xs []*G.Node) *G.Node {
				return Gather(xs[0], intNode(g, "idx", idx), red, 3)
			})
		})
	}
	t.Run("bias", func(t *testing.T) {
		checkGrad(t, []fdInput{randInput(rng, 3, 4), randInput(rng, 4)}, func(g *G.ExprGraph, xs []*G.Node) *G.Node {
			return Bias(xs[0], xs[1])
		})
	})
	t.Run("relu", func(t *testing.T) {
		checkGrad(t, []fdInput{randInput(rng, 3, 4)}, func(g *G.ExprGraph, xs []*G.Node) *G.Node { return ReLU(xs[0]) })
	})
	t.Run("l2", func(t *testing.T) {
		checkGrad(t, []fdInput{randInput(rng, 3, 4)}, func(g *G.ExprGraph, xs []*G.Node) *G.Node { return L2Norm(xs[0], 1e-6) })
	})
	t.Run("sage", func(t *testing.T) {
		// 4 nodes, edges 0→1, 0→2, 1→3, 2→3: two operand and two user slots per node.
		in := []int{-1, -1, 0, -1, 0, -1, 1, 2}
		out := []int{1, 2, 3, -1, 3, -1, -1, -1}
		ins := []fdInput{randInput(rng, 4, 3)}
		for range 2 { // two layers, 3 → 2 → 2
			w := 3
			if len(ins) > 1 {
				w = 2
			}
			ins = append(ins, randInput(rng, w, 2), randInput(rng, w, 2), randInput(rng, w, 2), randInput(rng, 2))
		}
		for i := range ins[4].data { // live ReLUs
			ins[4].data[i] += 0.5
			ins[8].data[i] += 0.5
		}
		checkGrad(t, ins, func(g *G.ExprGraph, xs []*G.Node) *G.Node {
			adj := Adjacency{In: intNode(g, "in", in), Out: intNode(g, "out", out), DIn: 2, DOut: 2}
			layers := []SAGELayer{{xs[1], xs[2], xs[3], xs[4]}, {xs[5], xs[6], xs[7], xs[8]}}
			return SAGE(xs[0], adj, layers, 1e-6)
		})
	})
}

func TestGatherForward(t *testing.T) {
	h := []float32{1, 2, 3, 4, 5, 6} // rows [1 2] [3 4] [5 6]
	idx := []int{0, 2, -1, -1, 1, 1}
	for red, want := range map[Reduction][]float32{
		ReduceSum:  {6, 8, 0, 0, 6, 8},
		ReduceMean: {3, 4, 0, 0, 3, 4},
		ReduceMax:  {5, 6, 0, 0, 3, 4},
	} {
		g := G.NewGraph()
		hn := G.NewMatrix(g, tensor.Float32, G.WithShape(3, 2), G.WithName("h"), G.WithValue(tensor.New(tensor.WithShape(3, 2), tensor.WithBacking(h))))
		out := Gather(hn, intNode(g, "idx", idx), red, 2)
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := out.Value().Data().([]float32)
		vm.Close()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: got %v, want %v", red, got, want)
				break
			}
		}
	}
}
