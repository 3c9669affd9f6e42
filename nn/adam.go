package nn

import (
	"fmt"
	"math"
	"strings"
)

// Adam is the Adam optimizer (Kingma & Ba, 2015) with bias correction:
//
//	m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  θ ← θ − lr · m̂ / (√v̂ + ε)
//
// with m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ), computed per element in float32 (the parameters'
// and moments' precision) as θ ← θ − α·m / (√v + ε̂) with the step's constants
// α = lr·√(1−β₂ᵗ)/(1−β₁ᵗ) and ε̂ = ε·√(1−β₂ᵗ) computed once in float64: the same
// formula, with one float32 division and square root per element where the float64 form
// took three divisions and a square root (a tenth of a training step, issue 25). With
// ClipNorm > 0 the gradients are first scaled by min(1, ClipNorm/‖g‖), ‖g‖ the L2 norm
// over every parameter's gradient (global-norm clipping, for the heavy-tailed gradients
// of policy-gradient training). Its moments and step are saved
// by State and read back by Restore. Update runs on two goroutines for models of
// adamSplitMin elements or more; every element's update is independent of the others',
// so the result is the same bits either way. An Adam is not safe for concurrent use.
type Adam struct {
	// LR is the learning rate; it may be changed between updates.
	LR float64
	// Beta1, Beta2 and Eps are β₁, β₂ and ε (NewAdam: 0.9, 0.999, 1e-8).
	Beta1, Beta2, Eps float64
	// ClipNorm > 0 clips the gradients' global L2 norm to it; 0: no clipping.
	ClipNorm float64

	step int64
	m, v Params
}

// NewAdam returns an optimizer for ps (zero moments, step 0) with learning rate lr.
func NewAdam(ps Params, lr float64) *Adam {
	a := &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, m: ps.Clone(), v: ps.Clone()}
	for i := range a.m {
		clear(a.m[i].Data)
		clear(a.v[i].Data)
	}
	return a
}

// Step is the number of updates applied (or restored).
func (a *Adam) Step() int64 { return a.step }

// GradNorm is the L2 norm over every gradient (nil ones skipped).
func GradNorm(grads [][]float32) float64 {
	var ss float64
	for _, g := range grads {
		for _, x := range g {
			ss += float64(x) * float64(x)
		}
	}
	return math.Sqrt(ss)
}

// Update applies one step with gradients grads (one per parameter of ps, in order; nil:
// the parameter was not read, e.g. another task's head, and neither it nor its moments
// change). ps must be the parameters NewAdam was given (or of their layout).
func (a *Adam) Update(ps Params, grads [][]float32) {
	scale := 1.0
	if a.ClipNorm > 0 {
		if norm := GradNorm(grads); norm > a.ClipNorm {
			scale = a.ClipNorm / norm
		}
	}
	a.step++
	t := float64(a.step)
	c1 := 1 - math.Pow(a.Beta1, t)
	c2 := 1 - math.Pow(a.Beta2, t)
	total := 0
	for i, p := range ps {
		if grads[i] != nil { // nil: not read by this step's net (another task's head): unchanged
			total += len(p.Data)
		}
	}
	if total < adamSplitMin {
		a.updateRange(ps, grads, 0, total, scale, c1, c2)
		return
	}
	// Every element's update is independent of the others', so the two halves run on two
	// goroutines with the same results as one loop.
	half := total / 2
	done := make(chan struct{})
	go func() {
		a.updateRange(ps, grads, half, total, scale, c1, c2)
		close(done)
	}()
	a.updateRange(ps, grads, 0, half, scale, c1, c2)
	<-done
}

// adamSplitMin is the number of updated elements from which Update splits its loop over
// two goroutines (below it, starting one costs about what it saves; the default model
// has about 50k parameters).
const adamSplitMin = 8192

// updateRange updates the elements [from, to) of the parameters that have gradients,
// counted in order over those parameters only.
func (a *Adam) updateRange(ps Params, grads [][]float32, from, to int, scale, c1, c2 float64) {
	at := 0
	for i, p := range ps {
		if grads[i] == nil {
			continue
		}
		lo, hi := max(from-at, 0), min(to-at, len(p.Data))
		if lo < hi {
			a.update(p.Data[lo:hi], grads[i][lo:hi], a.m[i].Data[lo:hi], a.v[i].Data[lo:hi], scale, c1, c2)
		}
		at += len(p.Data)
		if at >= to {
			return
		}
	}
}

// update is Update's loop over one parameter: the optimizer's constants in locals and
// every slice cut to the parameter's length, so that the loop reloads nothing and checks
// no bounds. See Adam for the formula.
func (a *Adam) update(p, g, m, v []float32, scale, c1, c2 float64) {
	b1, b2 := float32(a.Beta1), float32(a.Beta2)
	ob1, ob2 := float32(1-a.Beta1), float32(1-a.Beta2)
	alpha := float32(a.LR * math.Sqrt(c2) / c1)
	eps := float32(a.Eps * math.Sqrt(c2))
	sc := float32(scale)
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for j := range p {
		gj := g[j] * sc
		mj := b1*m[j] + ob1*gj
		vj := b2*v[j] + ob2*gj*gj
		m[j], v[j] = mj, vj
		p[j] -= alpha * mj / (float32(math.Sqrt(float64(vj))) + eps)
	}
}

// State returns the moments as named tensors ("adam.m/NAME", "adam.v/NAME"), sharing
// their storage.
func (a *Adam) State() Params {
	var out Params
	for i := range a.m {
		out = append(out, &Param{Name: "adam.m/" + a.m[i].Name, Shape: a.m[i].Shape, Data: a.m[i].Data})
	}
	for i := range a.v {
		out = append(out, &Param{Name: "adam.v/" + a.v[i].Name, Shape: a.v[i].Shape, Data: a.v[i].Data})
	}
	return out
}

// Restore sets the step and the moments from tensors written by State (other tensors
// in ts are ignored); every moment must be present with its size.
func (a *Adam) Restore(step int64, ts Params) error {
	byName := map[string]*Param{}
	for _, t := range ts {
		if strings.HasPrefix(t.Name, "adam.") {
			byName[t.Name] = t
		}
	}
	for _, set := range []struct {
		prefix string
		ps     Params
	}{{"adam.m/", a.m}, {"adam.v/", a.v}} {
		for _, p := range set.ps {
			t, ok := byName[set.prefix+p.Name]
			if !ok || len(t.Data) != len(p.Data) {
				return fmt.Errorf("optimizer state lacks %s%s", set.prefix, p.Name)
			}
			copy(p.Data, t.Data)
		}
	}
	if step < 0 {
		return fmt.Errorf("optimizer step %d is negative", step)
	}
	a.step = step
	return nil
}
