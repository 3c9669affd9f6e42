package zoo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Finite-difference check parameters. The reference evaluator works in float64, so the
// central difference (f(x+h) - f(x-h)) / 2h has truncation error h²·|f”'|/6 ≈ 1e-12 for
// the O(1..10) third derivatives of these small graphs, and rounding error about
// ε·|f|/h ≈ 2.2e-16·10/1e-6 ≈ 2e-9. fdTol leaves a margin of ~500× over the larger of
// the two while still catching any wrong gradient (errors of a wrong rule are O(1)).
const (
	fdStep = 1e-6
	fdTol  = 1e-6
	// fdMaxChecks bounds the number of elements checked per parameter (spread evenly),
	// which keeps the test fast under -race.
	fdMaxChecks = 24
)

// gradCase is a small forward graph: build returns its output and the parameters to
// differentiate; ints gives fixed values for integer parameters (by parameter number).
type gradCase struct {
	name  string
	build func(b *hlo.Builder) (out *hlo.Instruction, params []*hlo.Instruction)
	ints  map[int][]float64
	// want lists opcodes that the gradient part of the graph must contain.
	want []hlo.Opcode
	// positive makes the random parameter values positive (for log, sqrt, ...).
	positive bool
}

func nhwcConv(b *hlo.Builder, x, k *hlo.Instruction, wd []hlo.WindowDim, groups int) *hlo.Instruction {
	return b.Conv(x, k, hlo.NHWC(), hlo.Window{Dims: wd}, groups)
}

func wdim(size, stride, lo, hi, ld, rd int) hlo.WindowDim {
	return hlo.WindowDim{Size: size, Stride: stride, PadLo: lo, PadHi: hi, LhsDilate: ld, RhsDilate: rd}
}

func gradCases() []gradCase {
	f32 := hlo.F32
	return []gradCase{
		{name: "elementwise", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, y := b.Param(f32, 3, 4), b.Param(f32, 3, 4)
			one := b.Full(f32, 1, 3, 4)
			y2 := b.AddOp(b.Mul(y, y), one)
			t := b.Tanh(b.Mul(x, y))
			t = b.AddOp(t, b.Div(b.Exp(x), y2))
			t = b.Sub(t, b.Sigmoid(x))
			t = b.AddOp(t, b.Mul(b.Sqrt(y2), b.Rsqrt(b.AddOp(b.Mul(x, x), one))))
			t = b.Sub(t, b.Max(x, y))
			t = b.AddOp(t, b.Min(x, b.Neg(y)))
			t = b.AddOp(t, b.Log(b.AddOp(b.Mul(x, x), one)))
			t = b.AddOp(t, b.Convert(b.Mul(b.Convert(x, hlo.BF16), b.Convert(y, hlo.BF16)), f32))
			t = b.AddOp(t, b.Select(b.Compare("GT", x, y), x, b.Mul(y, y)))
			t = b.AddOp(t, b.Unary(hlo.OpAbs, b.Sub(x, y)))
			return t, []*hlo.Instruction{x, y}
		}, want: []hlo.Opcode{hlo.OpSelect, hlo.OpConvert}},
		{name: "broadcast", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, y, z := b.Param(f32, 3), b.Param(f32, 4, 2, 3), b.Param(f32, 3, 4)
			t := b.Mul(b.Broadcast(x, []int{2}, 4, 2, 3), y)
			u := b.Broadcast(z, []int{2, 0}, 4, 2, 3) // unsorted dimensions
			s := b.Broadcast(b.Reshape(x, 1, 3), []int{1, 2}, 4, 1, 3)
			t = b.AddOp(b.Mul(t, u), b.Mul(b.Concat(1, s, s), y))
			return b.Tanh(t), []*hlo.Instruction{x, y, z}
		}, want: []hlo.Opcode{hlo.OpReduce, hlo.OpTranspose}},
		{name: "reshape_transpose", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 2, 3, 4)
			t := b.Reshape(b.Transpose(x, 2, 0, 1), 4, 6)
			return b.Tanh(b.Mul(t, t)), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpTranspose, hlo.OpReshape}},
		{name: "dot_general", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, y := b.Param(f32, 2, 3, 4), b.Param(f32, 4, 2, 5)
			d := b.Dot(x, y, hlo.DotDims{LhsBatch: []int{0}, RhsBatch: []int{1}, LhsContracting: []int{2}, RhsContracting: []int{0}})
			p, q := b.Param(f32, 3, 4, 5), b.Param(f32, 5, 6, 3)
			e := b.Dot(p, q, hlo.DotDims{LhsContracting: []int{0, 2}, RhsContracting: []int{2, 0}})
			u, v := b.Param(f32, 2, 3, 2, 4), b.Param(f32, 2, 5, 2, 4) // attention-style [B,S,H,D]
			a := b.Dot(u, v, hlo.DotDims{LhsBatch: []int{0, 2}, RhsBatch: []int{0, 2}, LhsContracting: []int{3}, RhsContracting: []int{3}})
			s := b.AddOp(b.ReduceSum(b.Tanh(d), 0, 1, 2), b.ReduceSum(b.Tanh(e), 0, 1))
			s = b.AddOp(s, b.ReduceSum(b.Tanh(a), 0, 1, 2, 3))
			return s, []*hlo.Instruction{x, y, p, q, u, v}
		}, want: []hlo.Opcode{hlo.OpDot}},
		{name: "reduce", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 3, 4, 5)
			s := b.ReduceSum(b.Mul(x, x), 1)
			m := b.Reduce(x, hlo.OpMaximum, -1e30, 0, 2)
			return b.AddOp(b.ReduceSum(s, 0, 1), b.ReduceSum(b.Tanh(m), 0)), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpBroadcast, hlo.OpCompare}},
		{name: "softmax_layernorm", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			n := newNet(b, true, f32)
			x := n.weight(4, 6)
			y := n.gelu(n.layerNorm(x))
			return n.softmax(b.Mul(y, x), 1), n.params
		}},
		{name: "slice_concat_pad", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 5, 6)
			s1 := b.Add(&hlo.Instruction{Opcode: hlo.OpSlice, Operands: []*hlo.Instruction{x},
				Slice: []hlo.SliceDim{{Start: 1, Limit: 5, Stride: 2}, {Start: 0, Limit: 6, Stride: 3}}}) // [2,2]
			s2 := b.Slice(x, []int{0, 2}, []int{2, 4}) // [2,2]
			c := b.Concat(0, s1, b.Tanh(s2), s1)       // [6,2]
			p := b.Pad(c, b.ScalarConst(f32, 0.5), []hlo.PadDim{{Lo: 1, Hi: 2, Interior: 1}, {Lo: 0, Hi: 1, Interior: 0}})
			return b.Mul(p, p), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpPad, hlo.OpSlice}},
		{name: "gather", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			table := b.Param(f32, 6, 3)
			ids := b.Param(hlo.S32, 5)
			g := b.Gather(table, ids)
			return b.Tanh(b.Mul(g, g)), []*hlo.Instruction{table}
		}, ints: map[int][]float64{1: {4, 0, 4, 2, 5}}, want: []hlo.Opcode{hlo.OpScatter}},
		// jnp.take(table, ids[2,3], axis=0): indices [2,3,1], result [2,3,D] (flax.go).
		{name: "gather_nd", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			table := b.Param(f32, 6, 3)
			ids := b.Param(hlo.S32, 2, 3, 1)
			g := gatherRowsND(b, table, ids)
			return b.Tanh(b.Mul(g, g)), []*hlo.Instruction{table}
		}, ints: map[int][]float64{1: {4, 0, 4, 2, 5, 0}}, want: []hlo.Opcode{hlo.OpScatter}},
		// jax.nn.gelu(approximate=False): 0.5·x·(erf(x·√½) + 1).
		{name: "erf", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 3, 4)
			e := b.Unary(hlo.OpErf, b.Mul(x, b.Full(f32, math.Sqrt(0.5), 3, 4)))
			return b.Mul(b.Mul(x, b.Full(f32, 0.5, 3, 4)), b.AddOp(e, b.Full(f32, 1, 3, 4))), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpExp}},
		{name: "dynamic_slice", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, u := b.Param(f32, 5, 4), b.Param(f32, 2, 2)
			i, j := b.Param(hlo.S32), b.Param(hlo.S32)
			d := b.DynamicSlice(x, []*hlo.Instruction{i, j}, 2, 3)
			w := b.DynamicUpdateSlice(b.Tanh(x), b.Mul(u, u), []*hlo.Instruction{j, i})
			return b.AddOp(b.ReduceSum(b.Mul(d, d), 0, 1), b.ReduceSum(b.Mul(w, x), 0, 1)), []*hlo.Instruction{x, u}
		}, ints: map[int][]float64{2: {2}, 3: {1}}, want: []hlo.Opcode{hlo.OpDynamicUpdateSlice, hlo.OpDynamicSlice}},
		{name: "conv_strided_same", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, k := b.Param(f32, 2, 5, 5, 4), b.Param(f32, 3, 3, 4, 3)
			return b.Conv2D(x, k, 2, 1), []*hlo.Instruction{x, k}
		}, want: []hlo.Opcode{hlo.OpConvolution, hlo.OpReverse}},
		{name: "conv_grouped", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, k := b.Param(f32, 2, 6, 6, 4), b.Param(f32, 3, 3, 2, 6)
			return b.Conv2D(x, k, 1, 2), []*hlo.Instruction{x, k}
		}, want: []hlo.Opcode{hlo.OpConvolution}},
		{name: "conv_depthwise", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, k := b.Param(f32, 1, 5, 5, 3), b.Param(f32, 3, 3, 1, 6) // channel multiplier 2
			y := b.Conv2D(x, k, 2, 3)
			k2 := b.Param(f32, 3, 3, 1, 6) // multiplier 1
			z := b.Conv2D(y, k2, 1, 6)
			return z, []*hlo.Instruction{x, k, k2}
		}, want: []hlo.Opcode{hlo.OpConvolution}},
		{name: "conv_transposed_dilated", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x, k := b.Param(f32, 1, 3, 3, 2), b.Param(f32, 2, 2, 2, 3)
			up := nhwcConv(b, x, k, []hlo.WindowDim{wdim(2, 1, 1, 1, 2, 1), wdim(2, 1, 1, 1, 2, 1)}, 1) // [1,6,6,3]
			k2 := b.Param(f32, 3, 3, 3, 2)
			at := nhwcConv(b, up, k2, []hlo.WindowDim{wdim(3, 1, 2, 2, 1, 2), wdim(3, 2, 1, 2, 1, 2)}, 1) // atrous, strided
			return at, []*hlo.Instruction{x, k, k2}
		}, want: []hlo.Opcode{hlo.OpConvolution}},
		{name: "conv_nchw_crop", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			// bf01_oi01->bf01, with a 1×1 stride-2 window on an even input (the kernel
			// gradient crops the last row instead of padding negatively).
			x, k := b.Param(f32, 2, 3, 4, 5), b.Param(f32, 4, 3, 1, 2)
			cd := hlo.ConvDims{InputBatch: 0, InputFeature: 1, InputSpatial: []int{2, 3},
				KernelOutput: 0, KernelInput: 1, KernelSpatial: []int{2, 3},
				OutputBatch: 0, OutputFeature: 1, OutputSpatial: []int{2, 3}}
			y := b.Conv(x, k, cd, hlo.Window{Dims: []hlo.WindowDim{wdim(1, 2, 0, 0, 1, 1), wdim(2, 2, 0, 1, 1, 1)}}, 1)
			return y, []*hlo.Instruction{x, k}
		}, want: []hlo.Opcode{hlo.OpConvolution, hlo.OpSlice}},
		{name: "maxpool", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 1, 5, 5, 2)
			n := newNet(b, false, f32)
			p := n.maxPool(x, 3, 2)
			v := b.ReduceWindow(b.Tanh(x), hlo.OpMaximum, -1e30, hlo.Window{Dims: []hlo.WindowDim{
				wdim(1, 1, 0, 0, 1, 1), wdim(2, 2, 0, 0, 1, 1), wdim(2, 2, 0, 0, 1, 1), wdim(1, 1, 0, 0, 1, 1)}})
			return b.AddOp(b.ReduceSum(b.Mul(p, p), 0, 1, 2, 3), b.ReduceSum(v, 0, 1, 2, 3)), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpPad, hlo.OpSelect}},
		{name: "avgpool", build: func(b *hlo.Builder) (*hlo.Instruction, []*hlo.Instruction) {
			x := b.Param(f32, 2, 5, 4, 1)
			one := wdim(1, 1, 0, 0, 1, 1)
			a := b.ReduceWindow(x, hlo.OpAdd, 0, hlo.Window{Dims: []hlo.WindowDim{one, wdim(3, 2, 1, 1, 1, 1), wdim(2, 1, 0, 1, 1, 1), one}})
			return b.Tanh(a), []*hlo.Instruction{x}
		}, want: []hlo.Opcode{hlo.OpReduceWindow}},
	}
}

// buildGradCase builds loss = Σ out·probe (probe a random non-differentiated input) and
// its gradients, with ROOT tuple(loss, grads...).
func buildGradCase(t *testing.T, c gradCase) (*hlo.Module, int, []*hlo.Instruction) {
	t.Helper()
	return buildGradCaseWith(t, c, Grad)
}

// gradFunc is Grad or GradJAX.
type gradFunc func(b *hlo.Builder, loss *hlo.Instruction, params []*hlo.Instruction, stop ...*hlo.Instruction) ([]*hlo.Instruction, error)

// buildGradCaseWith builds c with its loss and the gradient grad emits.
func buildGradCaseWith(t *testing.T, c gradCase, grad gradFunc) (*hlo.Module, int, []*hlo.Instruction) {
	t.Helper()
	b := hlo.NewBuilder("grad_" + c.name)
	out, params := c.build(b)
	probe := b.Param(out.Shape.Elem, out.Shape.Dims...)
	all := make([]int, out.Shape.Rank())
	for i := range all {
		all[i] = i
	}
	loss := b.Convert(b.ReduceSum(b.Mul(out, probe), all...), hlo.F32)
	nfwd := len(b.Instructions())
	grads, err := grad(b, loss, params)
	if err != nil {
		t.Fatalf("Grad: %v", err)
	}
	for i, g := range grads {
		if !g.Shape.Compatible(params[i].Shape) {
			t.Errorf("gradient %d has shape %s, want %s", i, g.Shape.StringNoLayout(), params[i].Shape.StringNoLayout())
		}
	}
	m, err := b.Build(append([]*hlo.Instruction{loss}, grads...)...)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return m, nfwd, params
}

func TestGradShapesAndOps(t *testing.T) {
	for _, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			m, nfwd, _ := buildGradCase(t, c)
			have := map[hlo.Opcode]bool{}
			for _, in := range m.Entry.Instructions[nfwd:] {
				have[in.Opcode] = true
			}
			for _, op := range c.want {
				if !have[op] {
					t.Errorf("gradient graph has no %s", op)
				}
			}
		})
	}
}

func TestGradFiniteDifferences(t *testing.T) { checkGradCases(t, Grad) }

// TestGradJAXFiniteDifferences checks GradJAX (JAX's dot_general transpose rules) on the
// same cases, the dot cases among them with batch, several contracting and unsorted
// contracting dimensions.
func TestGradJAXFiniteDifferences(t *testing.T) { checkGradCases(t, GradJAX) }

func checkGradCases(t *testing.T, grad gradFunc) {
	for ci, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m, _, params := buildGradCaseWith(t, c, grad)
			rng := rand.New(rand.NewPCG(uint64(ci), 42))
			ps := m.Entry.Parameters()
			vals := make([]tensor, len(ps))
			for i, p := range ps {
				vals[i] = newTensor(p.Shape.Dims)
				if iv, ok := c.ints[p.ParamNum]; ok {
					copy(vals[i].data, iv)
					continue
				}
				for j := range vals[i].data {
					v := rng.NormFloat64()
					if c.positive {
						v = math.Abs(v) + 0.5
					}
					vals[i].data[j] = v
				}
			}
			checkFiniteDifferences(t, m, vals, params)
		})
	}
}

// checkFiniteDifferences compares the gradient of every parameter of params (element 1+k
// of m's root tuple, element 0 the scalar loss) at the inputs vals with central finite
// differences at up to fdMaxChecks evenly spaced elements, within fdTol, reporting each
// mismatch; it returns, per parameter, whether any checked gradient element was nonzero.
func checkFiniteDifferences(t *testing.T, m *hlo.Module, vals []tensor, params []*hlo.Instruction) []bool {
	t.Helper()
	lossOf := func() float64 {
		res, err := evaluate(m, vals)
		if err != nil {
			t.Fatalf("evaluate: %v", err)
		}
		return res[m.Entry.Root].elems[0].t.data[0]
	}
	res, err := evaluate(m, vals)
	if err != nil {
		t.Fatalf("evaluate: %v", err)
	}
	root := res[m.Entry.Root]
	nonzero := make([]bool, len(params))
	for k, p := range params {
		grad := root.elems[1+k].t
		data := vals[p.ParamNum].data
		step := max(1, len(data)/fdMaxChecks)
		for j := 0; j < len(data); j += step {
			orig := data[j]
			data[j] = orig + fdStep
			up := lossOf()
			data[j] = orig - fdStep
			down := lossOf()
			data[j] = orig
			fd := (up - down) / (2 * fdStep)
			ad := grad.data[j]
			nonzero[k] = nonzero[k] || ad != 0
			if math.Abs(fd-ad) > fdTol*max(1, math.Abs(fd), math.Abs(ad)) {
				t.Errorf("param %d (%s) element %d: autodiff %.9g, finite difference %.9g", k, p.Shape.StringNoLayout(), j, ad, fd)
			}
		}
	}
	return nonzero
}

func TestGradErrors(t *testing.T) {
	b := hlo.NewBuilder("errs")
	x := b.Param(hlo.F32, 2, 3)
	if _, err := Grad(b, x, []*hlo.Instruction{x}); err == nil {
		t.Error("Grad accepted a non-scalar loss")
	}
	s := b.ReduceSum(b.Unary(hlo.OpSine, x), 0, 1)
	if _, err := Grad(b, s, []*hlo.Instruction{x}); err == nil {
		t.Error("Grad accepted an op without a gradient rule")
	}
	other := hlo.NewBuilder("other").Param(hlo.F32)
	if _, err := Grad(b, other, nil); err == nil {
		t.Error("Grad accepted a loss from another builder")
	}
}

func TestGradUnusedParamIsZero(t *testing.T) {
	b := hlo.NewBuilder("unused")
	x, y := b.Param(hlo.F32, 3), b.Param(hlo.F32, 2, 2)
	loss := b.ReduceSum(b.Mul(x, x), 0)
	gs, err := Grad(b, loss, []*hlo.Instruction{x, y})
	if err != nil {
		t.Fatal(err)
	}
	if gs[1].Opcode != hlo.OpBroadcast || !slices.Equal(gs[1].Shape.Dims, []int{2, 2}) {
		t.Errorf("gradient of an unused parameter is %s, want zeros f32[2,2]", gs[1])
	}
}

// TestBatchGroupShapeRule checks the convolution shape rule the kernel gradients of
// grouped convolutions rely on: with batch_group_count G the output batch is the input
// batch / G, and uneven splits are rejected.
func TestBatchGroupShapeRule(t *testing.T) {
	b := hlo.NewBuilder("bgc")
	x := b.Param(hlo.F32, 6, 5, 5, 2) // [Cin, H, W, N] in the f01b roles
	g := b.Param(hlo.F32, 2, 3, 3, 6) // [N, Ho, Wo, Cout]
	cd := hlo.ConvDims{InputBatch: 0, InputFeature: 3, InputSpatial: []int{1, 2},
		KernelInput: 0, KernelOutput: 3, KernelSpatial: []int{1, 2},
		OutputBatch: 2, OutputFeature: 3, OutputSpatial: []int{0, 1}}
	win := hlo.Window{Dims: []hlo.WindowDim{wdim(3, 1, 0, 0, 1, 1), wdim(3, 1, 0, 0, 1, 1)}}
	ok := b.Add(&hlo.Instruction{Opcode: hlo.OpConvolution, Operands: []*hlo.Instruction{x, g}, Conv: &cd, Window: &win, BatchGroupCount: 3})
	if err := b.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 3, 2, 6}; !slices.Equal(ok.Shape.Dims, want) {
		t.Errorf("shape %v, want %v", ok.Shape.Dims, want)
	}
	b.Add(&hlo.Instruction{Opcode: hlo.OpConvolution, Operands: []*hlo.Instruction{x, g}, Conv: &cd, Window: &win, BatchGroupCount: 4})
	if b.Err() == nil {
		t.Error("batch_group_count 4 accepted for an input batch of 6")
	}
}
