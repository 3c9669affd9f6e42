package gnn

import (
	"fmt"
	"math"
	"strings"
)

// adam is the Adam optimizer (Kingma & Ba, 2015) with bias correction:
//
//	m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;  θ ← θ − lr · m̂ / (√v̂ + ε)
//
// with m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ). Its moments are saved in checkpoints so that a
// resumed run continues exactly where it stopped.
type adam struct {
	lr, beta1, beta2, eps float64
	step                  int64
	m, v                  Params
}

func newAdam(ps Params, lr float64) *adam {
	a := &adam{lr: lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, m: ps.Clone(), v: ps.Clone()}
	for i := range a.m {
		clear(a.m[i].Data)
		clear(a.v[i].Data)
	}
	return a
}

// update applies one step with gradients grads (one per parameter, in order; nil: the
// parameter was not read, e.g. another task's head, and neither it nor its moments change).
func (a *adam) update(ps Params, grads [][]float32) {
	a.step++
	t := float64(a.step)
	c1 := 1 - math.Pow(a.beta1, t)
	c2 := 1 - math.Pow(a.beta2, t)
	for i, p := range ps {
		g := grads[i]
		if g == nil {
			continue // not read by this step's net (another task's head): unchanged
		}
		m, v := a.m[i].Data, a.v[i].Data
		for j := range p.Data {
			gj := float64(g[j])
			mj := a.beta1*float64(m[j]) + (1-a.beta1)*gj
			vj := a.beta2*float64(v[j]) + (1-a.beta2)*gj*gj
			m[j], v[j] = float32(mj), float32(vj)
			p.Data[j] -= float32(a.lr * (mj / c1) / (math.Sqrt(vj/c2) + a.eps))
		}
	}
}

// state returns the moments as named tensors ("adam.m/NAME", "adam.v/NAME").
func (a *adam) state() Params {
	var out Params
	for i := range a.m {
		out = append(out, &Param{Name: "adam.m/" + a.m[i].Name, Shape: a.m[i].Shape, Data: a.m[i].Data})
	}
	for i := range a.v {
		out = append(out, &Param{Name: "adam.v/" + a.v[i].Name, Shape: a.v[i].Shape, Data: a.v[i].Data})
	}
	return out
}

// restore sets the moments and step from tensors written by state.
func (a *adam) restore(step int64, ts Params) error {
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
	a.step = step
	return nil
}
