package nn

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ParamNode adds p to g as a tensor node named p.Name. In float32 it is bound to a
// tensor backed by p.Data itself, so updates of p (an optimizer step) are seen by the
// graph without copying; in float64 (gradient checks) it holds a converted copy.
func ParamNode(g *G.ExprGraph, p *Param, dt tensor.Dtype) *G.Node {
	var v tensor.Tensor
	if dt == tensor.Float32 {
		v = tensor.New(tensor.WithShape(p.Shape...), tensor.WithBacking(p.Data))
	} else {
		v = tensor.New(tensor.WithShape(p.Shape...), tensor.WithBacking(To64(p.Data)))
	}
	return G.NewTensor(g, dt, len(p.Shape), G.WithShape(p.Shape...), G.WithName(p.Name), G.WithValue(v))
}

// Grad32 returns the float32 gradient of a node after a run (it aliases Gorgonia's
// buffer: valid until the gradients are zeroed or the graph runs again).
func Grad32(n *G.Node) ([]float32, error) {
	gv, err := n.Grad()
	if err != nil {
		return nil, fmt.Errorf("gradient of %s: %w", n.Name(), err)
	}
	d, ok := gv.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("gradient of %s is %T, want []float32", n.Name(), gv.Data())
	}
	return d, nil
}

// Values converts a Gorgonia value (a float32 or float64 tensor or scalar) to float64s.
func Values(v G.Value) []float64 {
	switch d := v.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	case float32:
		return []float64{float64(d)}
	case float64:
		return []float64{d}
	}
	panic(fmt.Sprintf("nn: unexpected value type %T", v.Data()))
}

// To64 converts float32s to float64s.
func To64(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// Const returns a float32 tensor node of g holding data (not copied: the graph must not
// outlive changes to it) with the given shape.
func Const(g *G.ExprGraph, name string, data []float32, shape ...int) *G.Node {
	v := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(v))
}

// IntConst returns an int vector node of g holding idx (an index input of Gather or
// SAGE).
func IntConst(g *G.ExprGraph, name string, idx []int) *G.Node {
	v := tensor.New(tensor.WithShape(len(idx)), tensor.WithBacking(idx))
	return G.NewVector(g, tensor.Int, G.WithShape(len(idx)), G.WithName(name), G.WithValue(v))
}
