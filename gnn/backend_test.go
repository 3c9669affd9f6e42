//go:build blas

package gnn

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// backendTol bounds the difference between the OpenBLAS and pure-Go backends' outputs,
// relative to the largest output. Both compute every product in float32 and differ only
// in summation order: one dot product of n terms has a relative error of at most about
// n·u (u = 2⁻²⁴ ≈ 6e-8, Higham's γ_n), about 1.2e-5 for the longest of the default
// model (3 × 64 inputs of a GraphSAGE layer, added); the default model chains about six
// such products (input layer, three GraphSAGE layers, the head), whose worst cases add
// up to under 1e-4. Measured differences are far smaller (most outputs agree to 1e-6).
const backendTol = 1e-4

// withBLAS runs fn with Gorgonia's matrix products on impl, then restores the build's
// backend. No test of this package runs in parallel, so the switch is seen by fn alone.
func withBLAS(impl G.BLAS, fn func()) {
	prev := G.WhichBLAS()
	G.Use(impl)
	defer G.Use(prev)
	fn()
}

// TestBackendsAgree trains a default-size model for one epoch on OpenBLAS (this build's
// backend) and checks that the pure-Go backend (gonum's GEMM, the default build's)
// predicts the same scores for every configuration of the training and validation
// kernels within backendTol, and that a training step's loss and gradients agree too.
func TestBackendsAgree(t *testing.T) {
	if _, ok := G.WhichBLAS().(netlib.Implementation); !ok {
		t.Fatalf("the blas build runs on %T, want OpenBLAS through netlib", G.WhichBLAS())
	}
	train, val := trainRows(t)
	o := smallOptions("")
	o.Model = DefaultConfig()
	o.Epochs = 1
	r, err := trainSources(context.Background(), train, val, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Backend != "openblas" {
		t.Errorf("TrainResult.Backend = %q, want openblas", r.Backend)
	}
	m := r.Model
	var ks []*kernel
	for _, rows := range []sliceSource{train, val} {
		for i := range rows {
			k, err := m.prepare(&rows[i])
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
	}
	predict := func() [][]float64 {
		eng := newEngine(m, false, true, defaultNetCache)
		defer eng.close()
		out, err := eng.predict(ks, 8)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// One training step's loss and gradients, without applying them.
	var n0 *net // the last step's net (its parameter order)
	step := func() (float64, [][]float32) {
		eng := newEngine(m, true, true, defaultNetCache)
		defer eng.close()
		var items []item
		for _, k := range ks[:8] {
			items = append(items, item{k: k, cfgs: []int{0, 1, 2, 3}})
		}
		b, err := newBatch(m.Config, items, true, 8, m.Loss, m.Target, true)
		if err != nil {
			t.Fatal(err)
		}
		n, _, loss, err := eng.run(b)
		if err != nil {
			t.Fatal(err)
		}
		n0 = n
		var grads [][]float32
		for i := range n.params {
			g, err := n.grad32(i)
			if err != nil {
				t.Fatal(err)
			}
			grads = append(grads, append([]float32(nil), g...))
		}
		return loss, grads
	}
	blasOut := predict()
	blasLoss, blasGrads := step()
	var goOut [][]float64
	var goLoss float64
	var goGrads [][]float32
	withBLAS(gonum.Implementation{}, func() {
		goOut = predict()
		goLoss, goGrads = step()
	})
	var flatB, flatG []float64
	for i := range blasOut {
		flatB, flatG = append(flatB, blasOut[i]...), append(flatG, goOut[i]...)
	}
	if d, scale := maxDiff(flatB, flatG); d > backendTol*scale {
		t.Errorf("predictions differ by %g between the backends (largest output %g, tolerance %g of it)", d, scale, backendTol)
	} else if d == 0 {
		t.Errorf("the backends gave identical predictions: the switch to pure Go did not take effect")
	} else {
		t.Logf("%d predictions: largest difference %.3g (%.2g of the largest output)", len(flatB), d, d/scale)
	}
	if d := math.Abs(blasLoss - goLoss); d > backendTol*math.Abs(goLoss) {
		t.Errorf("training loss %g on OpenBLAS, %g in pure Go", blasLoss, goLoss)
	}
	for i := range blasGrads {
		if d, scale := maxDiff(f64(blasGrads[i]), f64(goGrads[i])); d > backendTol*scale {
			t.Errorf("gradient of %s differs by %g between the backends (largest %g)", m.Params[n0.paramIdx[i]].Name, d, scale)
		}
	}
}

// maxDiff returns the largest |a_i − b_i| and the largest |b_i|.
func maxDiff(a, b []float64) (d, scale float64) {
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
		scale = math.Max(scale, math.Abs(b[i]))
	}
	return d, scale
}

func f64(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
