package zoo

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// This file is a tiny reference evaluator for the tests: it interprets an entry
// computation built by hlo.Builder in float64 on small tensors, following XLA's operation
// semantics. Element types are ignored (every value is a float64), so bf16 and f32 graphs
// evaluate exactly; integers and predicates are stored as whole numbers and 0/1.

type tensor struct {
	dims []int
	data []float64
}

// value is an array (t) or a tuple (elems).
type value struct {
	t     tensor
	elems []value
}

func newTensor(dims []int) tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return tensor{dims: append([]int{}, dims...), data: make([]float64, n)}
}

func stridesOf(dims []int) []int {
	s := make([]int, len(dims))
	acc := 1
	for i := len(dims) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= dims[i]
	}
	return s
}

// forEach calls f with every multi-index of dims in row-major order and its linear index.
func forEach(dims []int, f func(idx []int, lin int)) {
	n := 1
	for _, d := range dims {
		n *= d
	}
	idx := make([]int, len(dims))
	for lin := 0; lin < n; lin++ {
		f(idx, lin)
		for i := len(dims) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < dims[i] {
				break
			}
			idx[i] = 0
		}
	}
}

func (t tensor) at(idx []int) float64 {
	off := 0
	s := stridesOf(t.dims)
	for i, x := range idx {
		off += x * s[i]
	}
	return t.data[off]
}

// evaluate runs the entry computation of m on the given parameter values (by parameter
// number) and returns the value of every instruction.
func evaluate(m *hlo.Module, params []tensor) (map[*hlo.Instruction]value, error) {
	vals := map[*hlo.Instruction]value{}
	for _, in := range m.Entry.Instructions {
		v, err := evalOne(in, vals, params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, err)
		}
		vals[in] = v
	}
	return vals, nil
}

func arr(t tensor) value { return value{t: t} }

func evalOne(in *hlo.Instruction, vals map[*hlo.Instruction]value, params []tensor) (value, error) {
	op := func(i int) tensor { return vals[in.Operands[i]].t }
	dims := in.Shape.Dims
	switch in.Opcode {
	case hlo.OpParameter:
		if in.ParamNum >= len(params) {
			return value{}, fmt.Errorf("no value for parameter %d", in.ParamNum)
		}
		p := params[in.ParamNum]
		if len(p.data) != int(in.Shape.Elements()) {
			return value{}, fmt.Errorf("parameter %d has %d values, want %d", in.ParamNum, len(p.data), in.Shape.Elements())
		}
		return arr(p), nil
	case hlo.OpConstant:
		var v float64
		switch in.Literal {
		case "true":
			v = 1
		case "false":
			v = 0
		default:
			f, err := strconv.ParseFloat(in.Literal, 64)
			if err != nil {
				return value{}, fmt.Errorf("unsupported literal %q", in.Literal)
			}
			v = f
		}
		t := newTensor(dims)
		for i := range t.data {
			t.data[i] = v
		}
		return arr(t), nil
	case hlo.OpIota:
		t := newTensor(dims)
		d := in.Dimensions[0]
		forEach(dims, func(idx []int, lin int) { t.data[lin] = float64(idx[d]) })
		return arr(t), nil
	case hlo.OpTuple:
		var v value
		for _, o := range in.Operands {
			v.elems = append(v.elems, vals[o])
		}
		return v, nil
	case hlo.OpGetTupleElement:
		return vals[in.Operands[0]].elems[in.Index], nil
	case hlo.OpBroadcast:
		x := op(0)
		t := newTensor(dims)
		sub := make([]int, x.dimsLen())
		forEach(dims, func(idx []int, lin int) {
			for i, d := range in.Dimensions {
				sub[i] = idx[d]
			}
			t.data[lin] = x.at(sub)
		})
		return arr(t), nil
	case hlo.OpReshape, hlo.OpBitcast, hlo.OpCopy:
		x := op(0)
		return arr(tensor{dims: append([]int{}, dims...), data: append([]float64{}, x.data...)}), nil
	case hlo.OpTranspose:
		x := op(0)
		t := newTensor(dims)
		sub := make([]int, len(dims))
		forEach(dims, func(idx []int, lin int) {
			for i, p := range in.Dimensions {
				sub[p] = idx[i]
			}
			t.data[lin] = x.at(sub)
		})
		return arr(t), nil
	case hlo.OpReverse:
		x := op(0)
		t := newTensor(dims)
		sub := make([]int, len(dims))
		forEach(dims, func(idx []int, lin int) {
			copy(sub, idx)
			for _, d := range in.Dimensions {
				sub[d] = dims[d] - 1 - idx[d]
			}
			t.data[lin] = x.at(sub)
		})
		return arr(t), nil
	case hlo.OpSlice:
		x := op(0)
		t := newTensor(dims)
		sub := make([]int, len(dims))
		forEach(dims, func(idx []int, lin int) {
			for i, sd := range in.Slice {
				sub[i] = sd.Start + idx[i]*sd.Stride
			}
			t.data[lin] = x.at(sub)
		})
		return arr(t), nil
	case hlo.OpPad:
		x, pv := op(0), op(1).data[0]
		t := newTensor(dims)
		for i := range t.data {
			t.data[i] = pv
		}
		os := stridesOf(dims)
		forEach(x.dims, func(idx []int, lin int) {
			off := 0
			for i, p := range in.Padding {
				q := p.Lo + idx[i]*(p.Interior+1)
				if q < 0 || q >= dims[i] {
					return
				}
				off += q * os[i]
			}
			t.data[off] = x.data[lin]
		})
		return arr(t), nil
	case hlo.OpConcatenate:
		t := newTensor(dims)
		d := in.Dimensions[0]
		os := stridesOf(dims)
		base := 0
		for k := range in.Operands {
			x := op(k)
			forEach(x.dims, func(idx []int, lin int) {
				off := 0
				for i, v := range idx {
					if i == d {
						v += base
					}
					off += v * os[i]
				}
				t.data[off] = x.data[lin]
			})
			base += x.dims[d]
		}
		return arr(t), nil
	case hlo.OpDot:
		return arr(evalDot(in, op(0), op(1))), nil
	case hlo.OpConvolution:
		return arr(evalConv(in, op(0), op(1))), nil
	case hlo.OpReduce:
		return evalReduce(in, op(0), op(1).data[0])
	case hlo.OpReduceWindow:
		return evalReduceWindow(in, op(0), op(1).data[0])
	case hlo.OpGather:
		table, ids := op(0), op(1)
		t := newTensor(dims)
		row := len(table.data) / table.dims[0]
		for n, id := range ids.data {
			copy(t.data[n*row:(n+1)*row], table.data[int(id)*row:(int(id)+1)*row])
		}
		return arr(t), nil
	case hlo.OpScatter:
		base, ids, upd := op(0), op(1), op(2)
		t := tensor{dims: append([]int{}, dims...), data: append([]float64{}, base.data...)}
		row := len(base.data) / base.dims[0]
		for n, id := range ids.data {
			for j := 0; j < row; j++ {
				t.data[int(id)*row+j] += upd.data[n*row+j]
			}
		}
		return arr(t), nil
	case hlo.OpDynamicSlice, hlo.OpDynamicUpdateSlice:
		x := op(0)
		first := 1
		size := dims
		if in.Opcode == hlo.OpDynamicUpdateSlice {
			first = 2
			size = op(1).dims
		}
		starts := make([]int, len(x.dims))
		for i := range starts {
			s := int(op(first + i).data[0])
			starts[i] = min(max(s, 0), x.dims[i]-size[i])
		}
		xs := stridesOf(x.dims)
		if in.Opcode == hlo.OpDynamicSlice {
			t := newTensor(dims)
			forEach(dims, func(idx []int, lin int) {
				off := 0
				for i, v := range idx {
					off += (v + starts[i]) * xs[i]
				}
				t.data[lin] = x.data[off]
			})
			return arr(t), nil
		}
		u := op(1)
		t := tensor{dims: append([]int{}, dims...), data: append([]float64{}, x.data...)}
		forEach(u.dims, func(idx []int, lin int) {
			off := 0
			for i, v := range idx {
				off += (v + starts[i]) * xs[i]
			}
			t.data[off] = u.data[lin]
		})
		return arr(t), nil
	}
	if in.Opcode.IsElementwise() {
		return evalElementwise(in, op)
	}
	return value{}, fmt.Errorf("the reference evaluator does not support %s", in.Opcode)
}

func (t tensor) dimsLen() int { return len(t.dims) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func evalElementwise(in *hlo.Instruction, op func(int) tensor) (value, error) {
	t := newTensor(in.Shape.Dims)
	xs := make([]tensor, len(in.Operands))
	for i := range xs {
		xs[i] = op(i)
	}
	get := func(k, i int) float64 {
		if len(xs[k].data) == 1 && len(t.data) != 1 {
			return xs[k].data[0] // scalar predicate of select
		}
		return xs[k].data[i]
	}
	var f func(i int) float64
	switch in.Opcode {
	case hlo.OpAdd:
		f = func(i int) float64 { return get(0, i) + get(1, i) }
	case hlo.OpSubtract:
		f = func(i int) float64 { return get(0, i) - get(1, i) }
	case hlo.OpMultiply:
		f = func(i int) float64 { return get(0, i) * get(1, i) }
	case hlo.OpDivide:
		f = func(i int) float64 { return get(0, i) / get(1, i) }
	case hlo.OpMaximum:
		f = func(i int) float64 { return math.Max(get(0, i), get(1, i)) }
	case hlo.OpMinimum:
		f = func(i int) float64 { return math.Min(get(0, i), get(1, i)) }
	case hlo.OpAnd:
		f = func(i int) float64 { return b2f(get(0, i) != 0 && get(1, i) != 0) }
	case hlo.OpOr:
		f = func(i int) float64 { return b2f(get(0, i) != 0 || get(1, i) != 0) }
	case hlo.OpNot:
		f = func(i int) float64 { return b2f(get(0, i) == 0) }
	case hlo.OpNegate:
		f = func(i int) float64 { return -get(0, i) }
	case hlo.OpAbs:
		f = func(i int) float64 { return math.Abs(get(0, i)) }
	case hlo.OpSign:
		f = func(i int) float64 {
			x := get(0, i)
			return b2f(x > 0) - b2f(x < 0)
		}
	case hlo.OpExp:
		f = func(i int) float64 { return math.Exp(get(0, i)) }
	case hlo.OpLog:
		f = func(i int) float64 { return math.Log(get(0, i)) }
	case hlo.OpTanh:
		f = func(i int) float64 { return math.Tanh(get(0, i)) }
	case hlo.OpErf:
		f = func(i int) float64 { return math.Erf(get(0, i)) }
	case hlo.OpLogistic:
		f = func(i int) float64 { return 1 / (1 + math.Exp(-get(0, i))) }
	case hlo.OpSqrt:
		f = func(i int) float64 { return math.Sqrt(get(0, i)) }
	case hlo.OpRsqrt:
		f = func(i int) float64 { return 1 / math.Sqrt(get(0, i)) }
	case hlo.OpConvert:
		f = func(i int) float64 {
			x := get(0, i)
			if !in.Shape.Elem.IsFloat() {
				return math.Trunc(x)
			}
			return x
		}
	case hlo.OpSelect:
		f = func(i int) float64 {
			if get(0, i) != 0 {
				return get(1, i)
			}
			return get(2, i)
		}
	case hlo.OpCompare:
		f = func(i int) float64 {
			x, y := get(0, i), get(1, i)
			switch in.Direction {
			case "EQ":
				return b2f(x == y)
			case "NE":
				return b2f(x != y)
			case "LT":
				return b2f(x < y)
			case "LE":
				return b2f(x <= y)
			case "GT":
				return b2f(x > y)
			case "GE":
				return b2f(x >= y)
			}
			return math.NaN()
		}
	default:
		return value{}, fmt.Errorf("the reference evaluator does not support %s", in.Opcode)
	}
	for i := range t.data {
		t.data[i] = f(i)
	}
	return arr(t), nil
}

func combine(op hlo.Opcode, a, b float64) (float64, error) {
	switch op {
	case hlo.OpAdd:
		return a + b, nil
	case hlo.OpMaximum:
		return math.Max(a, b), nil
	case hlo.OpMinimum:
		return math.Min(a, b), nil
	case hlo.OpMultiply:
		return a * b, nil
	}
	return 0, fmt.Errorf("unsupported reducer %s", op)
}

func evalReduce(in *hlo.Instruction, x tensor, init float64) (value, error) {
	t := newTensor(in.Shape.Dims)
	for i := range t.data {
		t.data[i] = init
	}
	red := map[int]bool{}
	for _, d := range in.Dimensions {
		red[d] = true
	}
	os := stridesOf(in.Shape.Dims)
	rop := in.ToApply.Root.Opcode
	var err error
	forEach(x.dims, func(idx []int, lin int) {
		off, k := 0, 0
		for i, v := range idx {
			if !red[i] {
				off += v * os[k]
				k++
			}
		}
		var e error
		t.data[off], e = combine(rop, t.data[off], x.data[lin])
		if e != nil {
			err = e
		}
	})
	return arr(t), err
}

func evalReduceWindow(in *hlo.Instruction, x tensor, init float64) (value, error) {
	t := newTensor(in.Shape.Dims)
	ws := in.Window.Dims
	wdims := make([]int, len(ws))
	for i, w := range ws {
		wdims[i] = w.Size
	}
	rop := in.ToApply.Root.Opcode
	pos := make([]int, len(ws))
	var err error
	forEach(in.Shape.Dims, func(o []int, lin int) {
		acc := init
		forEach(wdims, func(w []int, _ int) {
			inside := true
			for i := range ws {
				pos[i] = o[i]*max(ws[i].Stride, 1) + w[i] - ws[i].PadLo
				inside = inside && pos[i] >= 0 && pos[i] < x.dims[i]
			}
			v := init
			if inside {
				v = x.at(pos)
			}
			var e error
			acc, e = combine(rop, acc, v)
			if e != nil {
				err = e
			}
		})
		t.data[lin] = acc
	})
	return arr(t), err
}

func evalDot(in *hlo.Instruction, x, y tensor) tensor {
	dd := *in.Dot
	t := newTensor(in.Shape.Dims)
	lf := freeDims(len(x.dims), dd.LhsBatch, dd.LhsContracting)
	rf := freeDims(len(y.dims), dd.RhsBatch, dd.RhsContracting)
	cdims := make([]int, len(dd.LhsContracting))
	for i, d := range dd.LhsContracting {
		cdims[i] = x.dims[d]
	}
	xi := make([]int, len(x.dims))
	yi := make([]int, len(y.dims))
	nb := len(dd.LhsBatch)
	forEach(in.Shape.Dims, func(o []int, lin int) {
		for i := range dd.LhsBatch {
			xi[dd.LhsBatch[i]] = o[i]
			yi[dd.RhsBatch[i]] = o[i]
		}
		for i, d := range lf {
			xi[d] = o[nb+i]
		}
		for i, d := range rf {
			yi[d] = o[nb+len(lf)+i]
		}
		s := 0.0
		forEach(cdims, func(c []int, _ int) {
			for i := range c {
				xi[dd.LhsContracting[i]] = c[i]
				yi[dd.RhsContracting[i]] = c[i]
			}
			s += x.at(xi) * y.at(yi)
		})
		t.data[lin] = s
	})
	return t
}

// evalConv is XLA's convolution with feature_group_count (output feature group g reads
// input feature group g) and batch_group_count (output feature group g reads input batch
// group g), strides, padding and lhs/rhs dilation.
func evalConv(in *hlo.Instruction, x, k tensor) tensor {
	cd := *in.Conv
	t := newTensor(in.Shape.Dims)
	G, BG := in.GroupCount(), max(in.BatchGroupCount, 1)
	kin, cout := k.dims[cd.KernelInput], k.dims[cd.KernelOutput]
	nOut := in.Shape.Dims[cd.OutputBatch]
	ns := len(cd.InputSpatial)
	kdims := make([]int, ns)
	for i, d := range cd.KernelSpatial {
		kdims[i] = k.dims[d]
	}
	xi := make([]int, len(x.dims))
	ki := make([]int, len(k.dims))
	forEach(in.Shape.Dims, func(o []int, lin int) {
		f := o[cd.OutputFeature]
		fg := f / (cout / G)
		bgi := f / (cout / BG)
		s := 0.0
		for c := 0; c < kin; c++ {
			xi[cd.InputFeature] = fg*kin + c
			xi[cd.InputBatch] = bgi*nOut + o[cd.OutputBatch]
			ki[cd.KernelInput], ki[cd.KernelOutput] = c, f
			forEach(kdims, func(kk []int, _ int) {
				for i := 0; i < ns; i++ {
					w := in.Window.Dims[i]
					p := o[cd.OutputSpatial[i]]*max(w.Stride, 1) + kk[i]*max(w.RhsDilate, 1) - w.PadLo
					ld := max(w.LhsDilate, 1)
					if p < 0 || p%ld != 0 || p/ld >= x.dims[cd.InputSpatial[i]] {
						return
					}
					xi[cd.InputSpatial[i]] = p / ld
					ki[cd.KernelSpatial[i]] = kk[i]
				}
				s += x.at(xi) * k.at(ki)
			})
		}
		t.data[lin] = s
	})
	return t
}
