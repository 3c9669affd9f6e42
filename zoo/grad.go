package zoo

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Grad appends to b the reverse-mode gradient of the scalar loss with respect to each of
// params and returns one gradient per parameter, with the parameter's shape and element
// type, in the order of params.
//
// The forward graph is b.Instructions() up to and including loss. Only instructions on a
// path from a parameter in params to loss are differentiated; integer and predicate values
// (indices, masks) carry no gradient, and the instructions listed in stop are treated as
// constants (like JAX's stop_gradient, e.g. the max subtracted inside a softmax). A
// parameter that does not influence loss gets a zero gradient.
//
// Supported ops: add, subtract, multiply, divide, maximum, minimum, negate, abs, exp, log,
// tanh, erf, logistic, sqrt, rsqrt, convert, copy, select, broadcast, reshape, bitcast,
// transpose, reverse, dot (general dimension numbers), convolution (strides, padding, lhs
// and rhs dilation, feature groups), reduce with an add or max reducer, reduce-window
// with an add or max reducer, slice, concatenate, pad, gather (the Builder.Gather form,
// and jnp.take's with [N..., 1] indices, gatherRowsND),
// dynamic-slice and dynamic-update-slice. Other ops on a differentiated path are an
// error. Gradient contributions are summed in reverse instruction order, so the emitted
// graph is deterministic.
//
// Ties: the gradient of reduce-max goes to every maximal element, the gradient of a max
// reduce-window to the first maximal element of each window (as select-and-scatter with
// a GE select does), and maximum(x, y) sends it to x where x >= y.
func Grad(b *hlo.Builder, loss *hlo.Instruction, params []*hlo.Instruction, stop ...*hlo.Instruction) ([]*hlo.Instruction, error) {
	return grad(b, loss, params, stop, false)
}

// GradJAX is Grad with the transpose rules of JAX's dot_general
// (jax/_src/lax/lax.py, _dot_general_transpose_lhs and _dot_general_transpose_rhs): the
// gradient of a dot's lhs is dot_general(cotangent, rhs) then a transpose into the lhs's
// dimension order (as Grad emits), and the gradient of its rhs is
// dot_general(cotangent, lhs), the cotangent first, then a transpose into the rhs's
// order. For a dense layer x[B,S,D]·W[D,O] the weight gradient is thus the dot
// f[O,D] = g[B,S,O]·x[B,S,D] contracting {0,1} with {0,1}, transposed to [D,O], as in a
// JAX training step. Grad instead emits dot(lhs, cotangent) for the rhs, which is what
// the zoo's existing models are built with; every other rule is Grad's. An identity
// transpose is omitted, as lax.transpose omits it.
func GradJAX(b *hlo.Builder, loss *hlo.Instruction, params []*hlo.Instruction, stop ...*hlo.Instruction) ([]*hlo.Instruction, error) {
	return grad(b, loss, params, stop, true)
}

func grad(b *hlo.Builder, loss *hlo.Instruction, params, stop []*hlo.Instruction, jaxDot bool) ([]*hlo.Instruction, error) {
	if err := b.Err(); err != nil {
		return nil, err
	}
	if loss == nil || !loss.Shape.IsArray() || loss.Shape.Rank() != 0 || !loss.Shape.Elem.IsFloat() {
		return nil, fmt.Errorf("grad: the loss must be a floating-point scalar")
	}
	all := b.Instructions()
	n := -1
	for i := len(all) - 1; i >= 0; i-- {
		if all[i] == loss {
			n = i
			break
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("grad: loss %s was not built by this builder", loss.Name)
	}
	fwd := all[: n+1 : n+1]
	pos := make(map[*hlo.Instruction]int, len(fwd))
	for i, in := range fwd {
		pos[in] = i
	}
	isParam := make(map[*hlo.Instruction]bool, len(params))
	for _, p := range params {
		if _, ok := pos[p]; !ok {
			return nil, fmt.Errorf("grad: parameter %s is not part of the forward graph", p.Name)
		}
		if !p.Shape.IsArray() || !p.Shape.Elem.IsFloat() {
			return nil, fmt.Errorf("grad: parameter %s is not a floating-point array", p.Name)
		}
		isParam[p] = true
	}
	stopped := make(map[*hlo.Instruction]bool, len(stop))
	for _, s := range stop {
		stopped[s] = true
	}

	// active: depends on a parameter through differentiable floating-point values.
	active := make([]bool, len(fwd))
	for i, in := range fwd {
		switch {
		case stopped[in] || !in.Shape.IsArray() || !in.Shape.Elem.IsFloat():
		case isParam[in]:
			active[i] = true
		default:
			for _, op := range in.Operands {
				if j, ok := pos[op]; ok && active[j] {
					active[i] = true
					break
				}
			}
		}
	}
	g := &gradder{b: b, consts: map[string]*hlo.Instruction{}, jaxDot: jaxDot}
	adj := make([]*hlo.Instruction, len(fwd))
	// Adjoints flow backwards from the loss along active values only; an instruction
	// whose adjoint stays nil is not on a path from a parameter to the loss.
	if active[n] {
		adj[n] = g.scalar(loss.Shape.Elem, 1)
	}
	for i := n; i >= 0; i-- {
		in, gy := fwd[i], adj[i]
		if gy == nil || isParam[in] {
			continue
		}
		act := func(k int) bool { return active[pos[in.Operands[k]]] }
		acc := func(k int, c *hlo.Instruction) {
			j := pos[in.Operands[k]]
			if adj[j] == nil {
				adj[j] = c
			} else {
				adj[j] = b.AddOp(adj[j], c)
			}
		}
		if err := g.vjp(in, gy, act, acc); err != nil {
			return nil, fmt.Errorf("grad of %s: %w", in, err)
		}
		if err := b.Err(); err != nil {
			return nil, fmt.Errorf("grad of %s: %w", in, err)
		}
	}
	out := make([]*hlo.Instruction, len(params))
	for k, p := range params {
		if gp := adj[pos[p]]; gp != nil {
			out[k] = gp
		} else {
			out[k] = g.zeros(p.Shape.Elem, p.Shape.Dims)
		}
	}
	if err := b.Err(); err != nil {
		return nil, fmt.Errorf("grad: %w", err)
	}
	return out, nil
}

// gradder emits gradient instructions, sharing scalar constants and zero broadcasts.
type gradder struct {
	b      *hlo.Builder
	consts map[string]*hlo.Instruction
	// jaxDot emits a dot's rhs gradient as JAX's _dot_general_transpose_rhs does
	// (GradJAX).
	jaxDot bool
}

func (g *gradder) scalar(t hlo.ElemType, v float64) *hlo.Instruction {
	key := t.String() + ":" + strconv.FormatFloat(v, 'g', -1, 64)
	if c, ok := g.consts[key]; ok {
		return c
	}
	c := g.b.ScalarConst(t, v)
	g.consts[key] = c
	return c
}

// full returns the scalar v broadcast to dims (shared per type, value and dimensions).
func (g *gradder) full(t hlo.ElemType, v float64, dims []int) *hlo.Instruction {
	if len(dims) == 0 {
		return g.scalar(t, v)
	}
	var sb strings.Builder
	sb.WriteString(t.String())
	sb.WriteString(":")
	sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	for _, d := range dims {
		sb.WriteString(",")
		sb.WriteString(strconv.Itoa(d))
	}
	key := sb.String()
	if c, ok := g.consts[key]; ok {
		return c
	}
	c := g.b.Broadcast(g.scalar(t, v), nil, dims...)
	g.consts[key] = c
	return c
}

func (g *gradder) zeros(t hlo.ElemType, dims []int) *hlo.Instruction { return g.full(t, 0, dims) }

func (g *gradder) zerosLike(x *hlo.Instruction) *hlo.Instruction {
	return g.zeros(x.Shape.Elem, x.Shape.Dims)
}

// vjp emits the vector-Jacobian products of in for its active operands (act) given the
// adjoint gy of its result, passing each to acc.
func (g *gradder) vjp(in, gy *hlo.Instruction, act func(int) bool, acc func(int, *hlo.Instruction)) error {
	b := g.b
	ops := in.Operands
	t := in.Shape.Elem
	switch in.Opcode {
	case hlo.OpAdd:
		for k := 0; k < 2; k++ {
			if act(k) {
				acc(k, gy)
			}
		}
	case hlo.OpSubtract:
		if act(0) {
			acc(0, gy)
		}
		if act(1) {
			acc(1, b.Neg(gy))
		}
	case hlo.OpMultiply:
		if act(0) {
			acc(0, b.Mul(gy, ops[1]))
		}
		if act(1) {
			acc(1, b.Mul(gy, ops[0]))
		}
	case hlo.OpDivide:
		if act(0) {
			acc(0, b.Div(gy, ops[1]))
		}
		if act(1) { // d(x/y)/dy = -(x/y)/y
			acc(1, b.Neg(b.Div(b.Mul(gy, in), ops[1])))
		}
	case hlo.OpMaximum, hlo.OpMinimum:
		dir := "GE"
		if in.Opcode == hlo.OpMinimum {
			dir = "LE"
		}
		mask := b.Compare(dir, ops[0], ops[1])
		z := g.zerosLike(gy)
		if act(0) {
			acc(0, b.Select(mask, gy, z))
		}
		if act(1) {
			acc(1, b.Select(mask, z, gy))
		}
	case hlo.OpNegate:
		acc(0, b.Neg(gy))
	case hlo.OpAbs:
		acc(0, b.Mul(gy, b.Unary(hlo.OpSign, ops[0])))
	case hlo.OpExp:
		acc(0, b.Mul(gy, in))
	case hlo.OpLog:
		acc(0, b.Div(gy, ops[0]))
	case hlo.OpTanh: // 1 - tanh²
		one := g.full(t, 1, in.Shape.Dims)
		acc(0, b.Mul(gy, b.Sub(one, b.Mul(in, in))))
	case hlo.OpErf: // JAX's rule: (2/√π)·(g·exp(-(x·x)))
		x := ops[0]
		acc(0, b.Mul(g.full(t, 2/math.Sqrt(math.Pi), in.Shape.Dims), b.Mul(gy, b.Exp(b.Neg(b.Mul(x, x))))))
	case hlo.OpLogistic: // σ(1-σ)
		one := g.full(t, 1, in.Shape.Dims)
		acc(0, b.Mul(gy, b.Mul(in, b.Sub(one, in))))
	case hlo.OpSqrt: // 1/(2√x)
		acc(0, b.Div(b.Mul(gy, g.full(t, 0.5, in.Shape.Dims)), in))
	case hlo.OpRsqrt: // -½ x^(-3/2) = -½ r³
		r3 := b.Mul(b.Mul(in, in), in)
		acc(0, b.Mul(gy, b.Mul(r3, g.full(t, -0.5, in.Shape.Dims))))
	case hlo.OpConvert:
		acc(0, b.Convert(gy, ops[0].Shape.Elem))
	case hlo.OpCopy:
		acc(0, gy)
	case hlo.OpSelect:
		z := g.zerosLike(gy)
		if act(1) {
			acc(1, b.Select(ops[0], gy, z))
		}
		if act(2) {
			acc(2, b.Select(ops[0], z, gy))
		}
	case hlo.OpBroadcast:
		acc(0, g.unbroadcast(gy, ops[0], in.Dimensions))
	case hlo.OpReshape, hlo.OpBitcast:
		acc(0, b.Reshape(gy, ops[0].Shape.Dims...))
	case hlo.OpTranspose:
		inv := make([]int, len(in.Dimensions))
		for i, p := range in.Dimensions {
			inv[p] = i
		}
		acc(0, g.transpose(gy, inv))
	case hlo.OpReverse:
		acc(0, g.reverse(gy, in.Dimensions))
	case hlo.OpDot:
		g.dot(in, gy, act, acc)
	case hlo.OpConvolution:
		return g.conv(in, gy, act, acc)
	case hlo.OpReduce:
		if len(ops) == 2 && act(1) {
			return fmt.Errorf("the gradient of a reduce init value is not supported")
		}
		return g.reduce(in, gy, acc)
	case hlo.OpReduceWindow:
		return g.reduceWindow(in, gy, act, acc)
	case hlo.OpSlice:
		x := ops[0]
		pads := make([]hlo.PadDim, len(in.Slice))
		for i, sd := range in.Slice {
			st := max(sd.Stride, 1)
			n := in.Shape.Dims[i]
			last := sd.Start
			if n > 0 {
				last = sd.Start + (n-1)*st + 1
			}
			pads[i] = hlo.PadDim{Lo: sd.Start, Hi: x.Shape.Dims[i] - last, Interior: st - 1}
		}
		acc(0, b.Pad(gy, g.scalar(t, 0), pads))
	case hlo.OpConcatenate:
		d := in.Dimensions[0]
		off := 0
		for k, op := range ops {
			size := op.Shape.Dims[d]
			if act(k) {
				start := make([]int, gy.Shape.Rank())
				limit := slices.Clone(gy.Shape.Dims)
				start[d], limit[d] = off, off+size
				acc(k, b.Slice(gy, start, limit))
			}
			off += size
		}
	case hlo.OpPad:
		if act(1) {
			return fmt.Errorf("the gradient of a pad value is not supported")
		}
		x := ops[0]
		sd := make([]hlo.SliceDim, len(in.Padding))
		for i, p := range in.Padding {
			if p.Lo < 0 || p.Hi < 0 {
				return fmt.Errorf("the gradient of negative padding is not supported")
			}
			n := x.Shape.Dims[i]
			sd[i] = hlo.SliceDim{Start: p.Lo, Limit: p.Lo + max(n-1, 0)*(p.Interior+1) + min(n, 1), Stride: p.Interior + 1}
		}
		acc(0, g.slice(gy, sd))
	case hlo.OpGather:
		if rowLookupND(in) {
			acc(0, scatterAddND(b, g.zerosLike(ops[0]), ops[1], gy))
			break
		}
		if v, _ := in.ExtraAttr("collapsed_slice_dims"); v != "{0}" || ops[1].Shape.Rank() != 1 {
			return fmt.Errorf("only the Builder.Gather row-lookup form and jnp.take's (rowLookupND) are supported")
		}
		acc(0, b.ScatterAdd(g.zerosLike(ops[0]), ops[1], gy))
	case hlo.OpDynamicSlice:
		acc(0, b.DynamicUpdateSlice(g.zerosLike(ops[0]), gy, ops[1:]))
	case hlo.OpDynamicUpdateSlice:
		upd := ops[1]
		if act(0) {
			acc(0, b.DynamicUpdateSlice(gy, g.zerosLike(upd), ops[2:]))
		}
		if act(1) {
			acc(1, b.DynamicSlice(gy, ops[2:], upd.Shape.Dims...))
		}
	default:
		return fmt.Errorf("no gradient rule for %s", in.Opcode)
	}
	return nil
}

// transpose is Builder.Transpose that skips identity permutations.
func (g *gradder) transpose(x *hlo.Instruction, perm []int) *hlo.Instruction {
	if isIdentity(perm) {
		return x
	}
	return g.b.Transpose(x, perm...)
}

// reverse reverses x along the given dimensions, skipping dimensions of size 1.
func (g *gradder) reverse(x *hlo.Instruction, dims []int) *hlo.Instruction {
	var ds []int
	for _, d := range dims {
		if x.Shape.Dims[d] > 1 {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return x
	}
	return g.b.Add(&hlo.Instruction{Opcode: hlo.OpReverse, Operands: []*hlo.Instruction{x}, Dimensions: ds, HasDimensions: true})
}

// slice is a strided slice; it returns x when the slice is the identity.
func (g *gradder) slice(x *hlo.Instruction, sd []hlo.SliceDim) *hlo.Instruction {
	id := true
	for i, s := range sd {
		if s.Start != 0 || s.Limit != x.Shape.Dims[i] || s.Stride != 1 {
			id = false
		}
	}
	if id {
		return x
	}
	return g.b.Add(&hlo.Instruction{Opcode: hlo.OpSlice, Operands: []*hlo.Instruction{x}, Slice: sd})
}

// pad pads x with zeros; it returns x when the padding is empty.
func (g *gradder) pad(x *hlo.Instruction, pads []hlo.PadDim) *hlo.Instruction {
	empty := true
	for _, p := range pads {
		if p != (hlo.PadDim{}) {
			empty = false
		}
	}
	if empty {
		return x
	}
	return g.b.Pad(x, g.scalar(x.Shape.Elem, 0), pads)
}

func isIdentity(perm []int) bool {
	for i, p := range perm {
		if p != i {
			return false
		}
	}
	return true
}

// permuteTo transposes r, whose dimension p corresponds to target dimension src[p], into
// target order.
func (g *gradder) permuteTo(r *hlo.Instruction, src []int) *hlo.Instruction {
	perm := make([]int, len(src))
	for p, t := range src {
		perm[t] = p
	}
	return g.transpose(r, perm)
}

// unbroadcast sums gy over the dimensions a broadcast of x along dims added, and
// transposes the rest into x's order.
func (g *gradder) unbroadcast(gy, x *hlo.Instruction, dims []int) *hlo.Instruction {
	kept := make([]bool, gy.Shape.Rank())
	for _, d := range dims {
		kept[d] = true
	}
	var red []int
	for d, k := range kept {
		if !k {
			red = append(red, d)
		}
	}
	s := gy
	if len(red) > 0 {
		s = g.b.ReduceSum(gy, red...)
	}
	// s's dimensions are dims in ascending order; x's dimension i is dims[i].
	sorted := slices.Clone(dims)
	slices.Sort(sorted)
	src := make([]int, len(dims)) // src[position in s] = x dimension
	for i, d := range dims {
		src[slices.Index(sorted, d)] = i
	}
	return g.permuteTo(s, src)
}

// freeDims lists, in ascending order, the dimensions of a rank-r array in neither list.
func freeDims(r int, a, b []int) []int {
	var out []int
	for d := 0; d < r; d++ {
		if !slices.Contains(a, d) && !slices.Contains(b, d) {
			out = append(out, d)
		}
	}
	return out
}

func seq(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// dot differentiates a dot with general dimension numbers. The result dimensions are
// [batch..., lhs free..., rhs free...].
func (g *gradder) dot(in, gy *hlo.Instruction, act func(int) bool, acc func(int, *hlo.Instruction)) {
	x, y := in.Operands[0], in.Operands[1]
	dd := hlo.DotDims{LhsContracting: []int{x.Shape.Rank() - 1}, RhsContracting: []int{0}}
	if in.Dot != nil {
		dd = *in.Dot
	}
	lf := freeDims(x.Shape.Rank(), dd.LhsBatch, dd.LhsContracting)
	rf := freeDims(y.Shape.Rank(), dd.RhsBatch, dd.RhsContracting)
	nb := len(dd.LhsBatch)
	gB := seq(0, nb)
	gLF := seq(nb, nb+len(lf))
	gRF := seq(nb+len(lf), nb+len(lf)+len(rf))
	if act(0) {
		r := g.b.Dot(gy, y, hlo.DotDims{LhsBatch: gB, RhsBatch: slices.Clone(dd.RhsBatch), LhsContracting: gRF, RhsContracting: rf})
		src := append(slices.Clone(dd.LhsBatch), lf...)
		for _, d := range sortedCopy(dd.RhsContracting) {
			src = append(src, dd.LhsContracting[slices.Index(dd.RhsContracting, d)])
		}
		acc(0, g.permuteTo(r, src))
	}
	if act(1) && g.jaxDot {
		// JAX: dot_general(g, x) contracting g's lhs-free dimensions with x's, batch
		// with batch; the result is batch, g's rhs-free dimensions, then x's remaining
		// (contracting) dimensions in x's order, transposed by argsort(rhs batch + rhs
		// free + rhs contracting sorted by the lhs contracting dimensions).
		r := g.b.Dot(gy, x, hlo.DotDims{LhsBatch: gB, RhsBatch: slices.Clone(dd.LhsBatch), LhsContracting: gLF, RhsContracting: lf})
		src := append(slices.Clone(dd.RhsBatch), rf...)
		for _, d := range sortedCopy(dd.LhsContracting) {
			src = append(src, dd.RhsContracting[slices.Index(dd.LhsContracting, d)])
		}
		acc(1, g.permuteTo(r, src))
	} else if act(1) {
		r := g.b.Dot(x, gy, hlo.DotDims{LhsBatch: slices.Clone(dd.LhsBatch), RhsBatch: gB, LhsContracting: lf, RhsContracting: gLF})
		src := slices.Clone(dd.RhsBatch)
		for _, d := range sortedCopy(dd.LhsContracting) {
			src = append(src, dd.RhsContracting[slices.Index(dd.LhsContracting, d)])
		}
		src = append(src, rf...)
		acc(1, g.permuteTo(r, src))
	}
}

func sortedCopy(xs []int) []int {
	c := slices.Clone(xs)
	slices.Sort(c)
	return c
}

// conv differentiates a convolution. The input gradient is a convolution of gy with the
// spatially reversed kernel whose input and output features are swapped (regrouped for
// feature groups), with lhs dilation equal to the forward stride; the kernel gradient is
// a convolution of the input with gy in which the batch and feature roles are swapped,
// with rhs dilation equal to the forward stride and batch_group_count equal to the
// forward feature_group_count.
func (g *gradder) conv(in, gy *hlo.Instruction, act func(int) bool, acc func(int, *hlo.Instruction)) error {
	b := g.b
	x, k := in.Operands[0], in.Operands[1]
	cd := *in.Conv
	if in.BatchGroupCount > 1 {
		return fmt.Errorf("the gradient of a convolution with batch_group_count is not supported")
	}
	G := in.GroupCount()
	ns := len(cd.InputSpatial)
	win := make([]hlo.WindowDim, ns)
	for i := range win {
		if in.Window != nil && len(in.Window.Dims) == ns {
			win[i] = in.Window.Dims[i]
		} else {
			win[i] = hlo.WindowDim{Size: k.Shape.Dims[cd.KernelSpatial[i]], Stride: 1}
		}
		if win[i].Reversal {
			return fmt.Errorf("the gradient of a reversed convolution window is not supported")
		}
	}
	if act(0) {
		kk := k
		kd := hlo.ConvDims{KernelInput: cd.KernelOutput, KernelOutput: cd.KernelInput, KernelSpatial: slices.Clone(cd.KernelSpatial)}
		cin, cout := x.Shape.Dims[cd.InputFeature], k.Shape.Dims[cd.KernelOutput]
		switch {
		case G > 1 && cin == G && cout == G:
			// One input and one output feature per group (depthwise, multiplier 1): the
			// regrouped kernel has the same layout, so the labels stay as they are.
			kd = hlo.ConvDims{KernelInput: cd.KernelInput, KernelOutput: cd.KernelOutput, KernelSpatial: slices.Clone(cd.KernelSpatial)}
		case G > 1:
			// [spatial..., cin/G, G·cout/G] → [spatial..., cout/G, G·cin/G]: each group's
			// kernel block transposed in place.
			perm := append(slices.Clone(cd.KernelSpatial), cd.KernelInput, cd.KernelOutput)
			kk = g.transpose(kk, perm)
			sp := make([]int, ns)
			for i, d := range cd.KernelSpatial {
				sp[i] = k.Shape.Dims[d]
			}
			kk = b.Reshape(kk, append(slices.Clone(sp), cin/G, G, cout/G)...)
			kk = g.transpose(kk, append(seq(0, ns), ns+2, ns+1, ns))
			kk = b.Reshape(kk, append(slices.Clone(sp), cout/G, cin)...)
			kd = hlo.ConvDims{KernelInput: ns, KernelOutput: ns + 1, KernelSpatial: seq(0, ns)}
		}
		kk = g.reverse(kk, kd.KernelSpatial)
		nd := hlo.ConvDims{
			InputBatch: cd.OutputBatch, InputFeature: cd.OutputFeature, InputSpatial: slices.Clone(cd.OutputSpatial),
			KernelInput: kd.KernelInput, KernelOutput: kd.KernelOutput, KernelSpatial: kd.KernelSpatial,
			OutputBatch: cd.InputBatch, OutputFeature: cd.InputFeature, OutputSpatial: slices.Clone(cd.InputSpatial),
		}
		nw := make([]hlo.WindowDim, ns)
		for i, w := range win {
			s, ld, d := max(w.Stride, 1), max(w.LhsDilate, 1), max(w.RhsDilate, 1)
			K := w.Size
			H := x.Shape.Dims[cd.InputSpatial[i]]
			Ho := in.Shape.Dims[cd.OutputSpatial[i]]
			lo := (K-1)*d - w.PadLo
			hi := (H-1)*ld + (K-1)*d + 1 - lo - ((Ho-1)*s + 1)
			nw[i] = hlo.WindowDim{Size: K, Stride: ld, PadLo: lo, PadHi: hi, LhsDilate: s, RhsDilate: d}
		}
		acc(0, b.Conv(gy, kk, nd, hlo.Window{Dims: nw}, G))
	}
	if act(1) {
		xx := x
		nd := hlo.ConvDims{
			InputBatch: cd.InputFeature, InputFeature: cd.InputBatch, InputSpatial: slices.Clone(cd.InputSpatial),
			KernelInput: cd.OutputBatch, KernelOutput: cd.OutputFeature, KernelSpatial: slices.Clone(cd.OutputSpatial),
			OutputBatch: cd.KernelInput, OutputFeature: cd.KernelOutput, OutputSpatial: slices.Clone(cd.KernelSpatial),
		}
		nw := make([]hlo.WindowDim, ns)
		var crop []hlo.SliceDim
		for i, w := range win {
			s, ld, d := max(w.Stride, 1), max(w.LhsDilate, 1), max(w.RhsDilate, 1)
			K := w.Size
			H := x.Shape.Dims[cd.InputSpatial[i]]
			Ho := in.Shape.Dims[cd.OutputSpatial[i]]
			lo := w.PadLo
			hi := (K-1)*d + (Ho-1)*s + 1 - ((H-1)*ld + 1) - lo
			if ld == 1 && (lo < 0 || hi < 0) {
				// Input elements in the negative padding never meet the window: crop them
				// instead of emitting a negative padding.
				if crop == nil {
					crop = make([]hlo.SliceDim, x.Shape.Rank())
					for j, n := range x.Shape.Dims {
						crop[j] = hlo.SliceDim{Start: 0, Limit: n, Stride: 1}
					}
				}
				dim := cd.InputSpatial[i]
				if lo < 0 {
					crop[dim].Start = -lo
					lo = 0
				}
				if hi < 0 {
					crop[dim].Limit = H + hi
					hi = 0
				}
			}
			nw[i] = hlo.WindowDim{Size: Ho, Stride: d, PadLo: lo, PadHi: hi, LhsDilate: ld, RhsDilate: s}
		}
		if crop != nil {
			xx = g.slice(xx, crop)
		}
		dk := &hlo.Instruction{Opcode: hlo.OpConvolution, Operands: []*hlo.Instruction{xx, gy}, Conv: &nd, Window: &hlo.Window{Dims: nw}}
		if G > 1 {
			dk.BatchGroupCount = G
		}
		acc(1, b.Add(dk))
	}
	return nil
}

// reduce differentiates a single-input reduce with an add or max reducer.
func (g *gradder) reduce(in, gy *hlo.Instruction, acc func(int, *hlo.Instruction)) error {
	if len(in.Operands) != 2 || in.ToApply == nil || in.ToApply.Root == nil {
		return fmt.Errorf("only single-input reduces are supported")
	}
	x := in.Operands[0]
	var kept []int
	for d := 0; d < x.Shape.Rank(); d++ {
		if !slices.Contains(in.Dimensions, d) {
			kept = append(kept, d)
		}
	}
	bg := g.b.Broadcast(gy, kept, x.Shape.Dims...)
	switch in.ToApply.Root.Opcode {
	case hlo.OpAdd:
		acc(0, bg)
	case hlo.OpMaximum:
		mask := g.b.Compare("EQ", x, g.b.Broadcast(in, kept, x.Shape.Dims...))
		acc(0, g.b.Select(mask, bg, g.zerosLike(x)))
	default:
		return fmt.Errorf("no gradient rule for a reduce with a %s reducer", in.ToApply.Root.Opcode)
	}
	return nil
}

// reduceWindow differentiates a reduce-window with an add or max reducer, stride and
// padding (no base or window dilation).
func (g *gradder) reduceWindow(in, gy *hlo.Instruction, act func(int) bool, acc func(int, *hlo.Instruction)) error {
	b := g.b
	x := in.Operands[0]
	if act(1) {
		return fmt.Errorf("the gradient of a reduce-window init value is not supported")
	}
	if in.ToApply == nil || in.ToApply.Root == nil {
		return fmt.Errorf("reduce-window has no reducer")
	}
	r := x.Shape.Rank()
	for _, w := range in.Window.Dims {
		if max(w.LhsDilate, 1) != 1 || max(w.RhsDilate, 1) != 1 || w.Reversal {
			return fmt.Errorf("the gradient of a dilated reduce-window is not supported")
		}
	}
	switch in.ToApply.Root.Opcode {
	case hlo.OpAdd:
		// dx = reduce-window-add over gy dilated by the stride and padded by size-1-lo.
		pads := make([]hlo.PadDim, r)
		wd := make([]hlo.WindowDim, r)
		for i, w := range in.Window.Dims {
			s := max(w.Stride, 1)
			H, Ho := x.Shape.Dims[i], in.Shape.Dims[i]
			lo := w.Size - 1 - w.PadLo
			hi := H + w.Size - 1 - lo - ((Ho-1)*s + 1)
			pads[i] = hlo.PadDim{Lo: lo, Hi: hi, Interior: s - 1}
			wd[i] = hlo.WindowDim{Size: w.Size, Stride: 1, LhsDilate: 1, RhsDilate: 1}
		}
		acc(0, b.ReduceWindow(g.pad(gy, pads), hlo.OpAdd, 0, hlo.Window{Dims: wd}))
	case hlo.OpMaximum:
		acc(0, g.maxPoolGrad(in, gy))
	default:
		return fmt.Errorf("no gradient rule for a reduce-window with a %s reducer", in.ToApply.Root.Opcode)
	}
	return nil
}

// maxPoolGrad routes gy to the first maximal element of each window: for each window
// offset it compares the strided view of the (padded) input at that offset with the
// result, keeps the hits not yet claimed by an earlier offset, and scatters gy there by
// padding with interior stride-1. This is the math of select-and-scatter(GE, add)
// written with elementwise ops, slices and pads.
func (g *gradder) maxPoolGrad(in, gy *hlo.Instruction) *hlo.Instruction {
	b := g.b
	x := in.Operands[0]
	r := x.Shape.Rank()
	ws := in.Window.Dims
	pads := make([]hlo.PadDim, r)
	padded := make([]int, r)
	for i, w := range ws {
		pads[i] = hlo.PadDim{Lo: w.PadLo, Hi: w.PadHi}
		padded[i] = x.Shape.Dims[i] + w.PadLo + w.PadHi
	}
	xp := x
	if slices.ContainsFunc(pads, func(p hlo.PadDim) bool { return p != hlo.PadDim{} }) {
		xp = b.Pad(x, in.Operands[1], pads)
	}
	z := g.zerosLike(gy)
	var free, total *hlo.Instruction
	off := make([]int, r)
	count := 1
	for _, w := range ws {
		count *= w.Size
	}
	for it := 0; it < count; it++ {
		rem := it
		for i := r - 1; i >= 0; i-- {
			off[i] = rem % ws[i].Size
			rem /= ws[i].Size
		}
		sd := make([]hlo.SliceDim, r)
		bp := make([]hlo.PadDim, r)
		for i, w := range ws {
			s := max(w.Stride, 1)
			last := off[i] + (in.Shape.Dims[i]-1)*s + 1
			sd[i] = hlo.SliceDim{Start: off[i], Limit: last, Stride: s}
			bp[i] = hlo.PadDim{Lo: off[i], Hi: padded[i] - last, Interior: s - 1}
		}
		eq := b.Compare("EQ", g.slice(xp, sd), in)
		hit := eq
		if free != nil {
			hit = b.Binary(hlo.OpAnd, eq, free)
		}
		if it < count-1 {
			if free == nil {
				free = b.Unary(hlo.OpNot, eq)
			} else {
				free = b.Binary(hlo.OpAnd, free, b.Unary(hlo.OpNot, eq))
			}
		}
		back := g.pad(b.Select(hit, gy, z), bp)
		if total == nil {
			total = back
		} else {
			total = b.AddOp(total, back)
		}
	}
	crop := make([]hlo.SliceDim, r)
	for i, w := range ws {
		crop[i] = hlo.SliceDim{Start: w.PadLo, Limit: w.PadLo + x.Shape.Dims[i], Stride: 1}
	}
	return g.slice(total, crop)
}

// gatherRowsND is the gather jnp.take(table, ids, axis=0) lowers to: table [V, D...]
// rows at s32 indices [N..., 1] (index_vector_dim the last), the result [N..., D...]
// (offset_dims the trailing dimensions).
func gatherRowsND(b *hlo.Builder, table, indices *hlo.Instruction) *hlo.Instruction {
	ts, is := table.Shape, indices.Shape
	lead := is.Dims[:is.Rank()-1]
	out := append(slices.Clone(lead), ts.Dims[1:]...)
	sizes := append([]int{1}, ts.Dims[1:]...)
	offs := seq(len(lead), len(out))
	return b.Add(&hlo.Instruction{Opcode: hlo.OpGather, Operands: []*hlo.Instruction{table, indices}, Shape: hlo.Array(ts.Elem, out...),
		Extra: []hlo.Attr{
			{Key: "offset_dims", Value: hlo.IntSet(offs)}, {Key: "collapsed_slice_dims", Value: "{0}"}, {Key: "start_index_map", Value: "{0}"},
			{Key: "index_vector_dim", Value: strconv.Itoa(len(lead))}, {Key: "slice_sizes", Value: hlo.IntSet(sizes)},
		}})
}

// rowLookupND reports whether in is gatherRowsND's form with indices of rank 2 or more.
func rowLookupND(in *hlo.Instruction) bool {
	if len(in.Operands) != 2 {
		return false
	}
	table, is := in.Operands[0].Shape, in.Operands[1].Shape
	r := is.Rank()
	if r < 2 || is.Dims[r-1] != 1 {
		return false
	}
	want := map[string]string{
		"offset_dims": hlo.IntSet(seq(r-1, r-1+table.Rank()-1)), "collapsed_slice_dims": "{0}", "start_index_map": "{0}",
		"index_vector_dim": strconv.Itoa(r - 1), "slice_sizes": hlo.IntSet(append([]int{1}, table.Dims[1:]...)),
	}
	for k, v := range want {
		if got, _ := in.ExtraAttr(k); got != v {
			return false
		}
	}
	return true
}

// scatterAddND is the gradient of gatherRowsND, as JAX emits it: updates [N..., D...]
// added into operand [V, D...] at indices [N..., 1] (update_window_dims the trailing
// dimensions, index_vector_dim the last).
func scatterAddND(b *hlo.Builder, operand, indices, updates *hlo.Instruction) *hlo.Instruction {
	lead := indices.Shape.Rank() - 1
	return b.Add(&hlo.Instruction{Opcode: hlo.OpScatter, Operands: []*hlo.Instruction{operand, indices, updates},
		ToApply: b.Reducer(hlo.OpAdd, operand.Shape.Elem),
		Extra: []hlo.Attr{
			{Key: "update_window_dims", Value: hlo.IntSet(seq(lead, lead+operand.Shape.Rank()-1))}, {Key: "inserted_window_dims", Value: "{0}"},
			{Key: "scatter_dims_to_operand_dims", Value: "{0}"}, {Key: "index_vector_dim", Value: strconv.Itoa(lead)},
		}})
}
