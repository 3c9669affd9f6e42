package gnn

import (
	"fmt"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/nn"
)

// The losses as Gorgonia ops (the formulas are in loss.go), each with its analytic
// gradient, checked against finite differences in grad_test.go. They are built on nn's
// op helpers.

// scalarOf returns a scalar value as float64.
func scalarOf(v G.Value) (float64, error) {
	f32, f64, err := nn.Floats(v)
	if err != nil {
		return 0, err
	}
	if f32 != nil && len(f32) == 1 {
		return float64(f32[0]), nil
	}
	if f64 != nil && len(f64) == 1 {
		return f64[0], nil
	}
	return 0, fmt.Errorf("want a scalar, got shape %v", v.Shape())
}

func scalarValue(isF32 bool, x float64) G.Value {
	if isF32 {
		return G.NewF32(float32(x))
	}
	return G.NewF64(x)
}

// rankLossOp is Σ_k w_k Σ_{i,j∈k} φ(ŷ_i − ŷ_j)·[r_i > r_j] (pairwise losses) or
// Σ_k w_k L_k (ListMLE, listMLE in loss.go) for outputs ŷ [S], the rank
// r [S] of each sample's runtime within its kernel (the count of faster samples, so that
// r_i > r_j ⟺ t_i > t_j), kernel weights w [B] and the kernels' sample ranges
// span [B+1] (kernel k's samples are span[k]..span[k+1]−1); see loss.go.
type rankLossOp struct {
	nn.OpBase
	loss Loss
}

func newRankLossOp(l Loss) rankLossOp {
	return rankLossOp{nn.OpBase{ID: fmt.Sprintf("gnn.rankLoss{%s}", l)}, l}
}

func (op rankLossOp) Arity() int { return 4 }
func (op rankLossOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(1), nn.TensorType(1), nn.TensorType(1), G.TensorType{Dims: 1, Of: tensor.Int}, hm.TypeVariable('a'))
}
func (op rankLossOp) InferShape(...G.DimSizer) (tensor.Shape, error) {
	return tensor.ScalarShape(), nil
}
func (op rankLossOp) Do(vals ...G.Value) (G.Value, error) {
	span, ok := vals[3].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: spans are %T", op, vals[3].Data())
	}
	x32, x64, err := lossInputs(vals[:3])
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		l, _ := rankLoss(op.loss, x32[0], x32[1], x32[2], span, false)
		return scalarValue(true, l), nil
	}
	l, _ := rankLoss(op.loss, x64[0], x64[1], x64[2], span, false)
	return scalarValue(false, l), nil
}

// rankLoss dispatches to the pairwise losses or listMLE.

func rankLoss[T float32 | float64](l Loss, out, rank, w []T, span []int, grad bool) (float64, []T) {
	if l.def().form == listwise {
		return listMLE(out, rank, w, span, grad)
	}
	return pairLoss(l, out, rank, w, span, grad)
}

// pairLoss evaluates the weighted pairwise loss and, with grad, its gradient with respect
// to the outputs. φ'(z) is −1 (hinge, where 1 − z > 0) or −1/(1 + e^z) (logistic).
func pairLoss[T float32 | float64](l Loss, out, rank, w []T, span []int, grad bool) (float64, []T) {
	var sum float64
	var d []T
	if grad {
		d = make([]T, len(out))
	}
	hinge := l.phi() == phiFunc(hingePhi{}) // pairHinge: the hinge's loop, without calls per pair
	for k := range w {
		wk := float64(w[k])
		if wk == 0 {
			continue
		}
		lo, hi := span[k], span[k+1]
		if hinge {
			pairHinge(l.gapWeighted(), out[lo:hi], rank[lo:hi], wk, &sum, d, lo, grad)
		} else {
			pairGeneral(l, out[lo:hi], rank[lo:hi], wk, &sum, d, lo, grad)
		}
	}
	return sum, d
}

// pairGeneral is pairLoss's loop over one kernel's samples (out, rank; the first at
// sample lo of d) for any pairwise loss, φ and φ' through phi. pairLoss uses it for the
// logistic losses; it is the reference pairHinge's bits are checked against.
func pairGeneral[T float32 | float64](l Loss, out, rank []T, wk float64, sum *float64, d []T, lo int, grad bool) {
	for i := range out {
		for j := range out {
			if rank[i] <= rank[j] {
				continue
			}
			z := float64(out[i]) - float64(out[j])
			wij := wk
			if l.gapWeighted() { // rank holds log runtimes
				wij *= pairWeight(float64(rank[i]) - float64(rank[j]))
			}
			*sum += wij * phi(l, z)
			if grad {
				dphi := phiDeriv(l, z)
				d[lo+i] += T(wij * dphi)
				d[lo+j] -= T(wij * dphi)
			}
		}
	}
}

// pairHinge is pairLoss's loop over one kernel's samples (out, rank; the first at
// sample lo of d) for the hinge losses, φ(z) = max(0, 1 − z), φ' = −1 where 1 − z > 0:
// the general loop with the loss's branches taken out of it, giving the same bits (a
// pair with 1 − z ≤ 0 adds +0 to the sum and gradients, which changes neither; a NaN
// output still makes the sum NaN).
func pairHinge[T float32 | float64](gap bool, out, rank []T, wk float64, sum *float64, d []T, lo int, grad bool) {
	s := *sum
	rank = rank[:len(out)]
	for i, ri := range rank {
		oi := float64(out[i])
		for j, rj := range rank {
			if ri <= rj {
				continue
			}
			t := 1 - (oi - float64(out[j]))
			if t <= 0 {
				continue
			}
			wij := wk
			if gap { // rank holds log runtimes
				wij *= pairWeight(float64(ri) - float64(rj))
			}
			s += wij * t
			if grad && t > 0 {
				d[lo+i] += T(-wij)
				d[lo+j] -= T(-wij)
			}
		}
	}
	*sum = s
}

func (op rankLossOp) DiffWRT(int) []bool { return []bool{true, false, false, false} }
func (op rankLossOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(rankDiffOp{nn.OpBase{ID: "gnn.rankDiff" + op.ID[len("gnn.rankLoss"):]}, op.loss}, inputs[0], inputs[1], inputs[2], inputs[3], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil, nil, nil}, nil
}

type rankDiffOp struct {
	nn.OpBase
	loss Loss
}

func (op rankDiffOp) Arity() int { return 5 }
func (op rankDiffOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(1), nn.TensorType(1), nn.TensorType(1), G.TensorType{Dims: 1, Of: tensor.Int}, hm.TypeVariable('a'), nn.TensorType(1))
}
func (op rankDiffOp) Do(vals ...G.Value) (G.Value, error) {
	span, ok := vals[3].Data().([]int)
	if !ok {
		return nil, fmt.Errorf("%v: spans are %T", op, vals[3].Data())
	}
	return lossGrad(vals[:3], vals[4],
		func(o, r, w []float32) []float32 { _, d := rankLoss(op.loss, o, r, w, span, true); return d },
		func(o, r, w []float64) []float64 { _, d := rankLoss(op.loss, o, r, w, span, true); return d })
}

// mseOp is Σ_s w_s (ŷ_s − y_s)².
type mseOp struct{ nn.OpBase }

func newMSEOp() mseOp { return mseOp{nn.OpBase{ID: "gnn.mse"}} }

func (op mseOp) Arity() int { return 3 }
func (op mseOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(1), nn.TensorType(1), nn.TensorType(1), hm.TypeVariable('a'))
}
func (op mseOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return tensor.ScalarShape(), nil }
func (op mseOp) Do(vals ...G.Value) (G.Value, error) {
	x32, x64, err := lossInputs(vals[:3])
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		l, _ := mse(x32[0], x32[1], x32[2], false)
		return scalarValue(true, l), nil
	}
	l, _ := mse(x64[0], x64[1], x64[2], false)
	return scalarValue(false, l), nil
}

func mse[T float32 | float64](out, y, w []T, grad bool) (float64, []T) {
	var sum float64
	var d []T
	if grad {
		d = make([]T, len(out))
	}
	for i := range out {
		e := float64(out[i]) - float64(y[i])
		sum += float64(w[i]) * e * e
		if grad {
			d[i] = T(2 * float64(w[i]) * e)
		}
	}
	return sum, d
}

func (op mseOp) DiffWRT(int) []bool { return []bool{true, false, false} }
func (op mseOp) SymDiff(inputs G.Nodes, output, grad *G.Node) (G.Nodes, error) {
	d, err := G.ApplyOp(mseDiffOp{nn.OpBase{ID: "gnn.mseDiff"}}, inputs[0], inputs[1], inputs[2], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{d, nil, nil}, nil
}

type mseDiffOp struct{ nn.OpBase }

func (op mseDiffOp) Arity() int { return 4 }
func (op mseDiffOp) Type() hm.Type {
	return hm.NewFnType(nn.TensorType(1), nn.TensorType(1), nn.TensorType(1), hm.TypeVariable('a'), nn.TensorType(1))
}
func (op mseDiffOp) Do(vals ...G.Value) (G.Value, error) {
	return lossGrad(vals[:3], vals[3],
		func(o, y, w []float32) []float32 { _, d := mse(o, y, w, true); return d },
		func(o, y, w []float64) []float64 { _, d := mse(o, y, w, true); return d })
}

// lossInputs reads a loss's three float inputs (outputs, targets, weights) in their
// precision: the float32 or the float64 array is set for each.
func lossInputs(in []G.Value) (x32 [3][]float32, x64 [3][]float64, err error) {
	for i, v := range in {
		if x32[i], x64[i], err = nn.Floats(v); err != nil {
			return x32, x64, err
		}
	}
	return x32, x64, nil
}

// lossGrad computes a loss's gradient with respect to its first input from the three
// float inputs (outputs, targets, weights) in their precision, scaled by the incoming
// scalar gradient g.
func lossGrad(in []G.Value, g G.Value, f32 func(a, b, c []float32) []float32, f64 func(a, b, c []float64) []float64) (G.Value, error) {
	x32, x64, err := lossInputs(in)
	if err != nil {
		return nil, err
	}
	scale, err := scalarOf(g)
	if err != nil {
		return nil, err
	}
	if x32[0] != nil {
		d := f32(x32[0], x32[1], x32[2])
		for i := range d {
			d[i] *= float32(scale)
		}
		return nn.Dense(d, len(d)), nil
	}
	d := f64(x64[0], x64[1], x64[2])
	for i := range d {
		d[i] *= scale
	}
	return nn.Dense(d, len(d)), nil
}
