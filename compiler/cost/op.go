// Package cost is the one shared per-opcode cost analysis (flops, transcendentals, bytes)
// and the kernel-level analysis built on it: a kernel's iteration space, its valid tiles,
// its VMEM footprint and the analytical roofline model that XLA-style compilers use to
// pick tiles. The simulator (tpusim), the compiler's tiling pass and the features package
// all get their counts from here; nothing else recomputes them.
package cost

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// OpCost is the cost of one instruction executed on its own, in the spirit of XLA's
// HloCostAnalysis.
type OpCost struct {
	Flops           float64 // floating-point (and integer arithmetic) operations
	Transcendentals float64 // elementwise transcendental evaluations
	VectorOps       float64 // vector-unit element operations (elementwise work, weighted)
	BytesRead       float64 // logical bytes of all array operands
	BytesWritten    float64 // logical bytes of the result
}

// Bytes is BytesRead + BytesWritten.
func (c OpCost) Bytes() float64 { return c.BytesRead + c.BytesWritten }

// VectorWeight returns the vector-unit operations per element of an elementwise op (0
// for ops that are not elementwise): 1 for simple arithmetic; more for ops that expand
// into several (divide is a reciprocal estimate plus Newton steps, clamp two compares,
// integer remainder a division, erf a polynomial); transcendental ops count their
// argument reduction and scaling here and their evaluation in TranscendentalWeight.
func VectorWeight(op hlo.Opcode) float64 {
	if !op.IsElementwise() {
		return 0
	}
	switch op {
	case hlo.OpDivide, hlo.OpAtan2:
		return 4
	case hlo.OpRemainder, hlo.OpErf:
		return 6
	case hlo.OpClamp, hlo.OpPower, hlo.OpLogistic: // logistic: 1/(1+exp(-x)) around the exp
		return 2
	}
	if op.Category() == hlo.CatTranscendental {
		return 0.5
	}
	return 1
}

// TranscendentalWeight returns the transcendental evaluations per element of op: two
// for power (exp and log), one for every other transcendental op.
func TranscendentalWeight(op hlo.Opcode) float64 {
	if op.Category() != hlo.CatTranscendental {
		return 0
	}
	if op == hlo.OpPower {
		return 2
	}
	return 1
}

// Approximate reports whether the simulator times op with its streaming model only: the
// op runs as an opaque kernel that reads its operands and writes its result once at HBM
// bandwidth, plus the vector work its cost entry counts (n log n for sort-like ops).
// These are the ops of categories "other" and "control" (collectives, asynchronous
// wrappers, transfers, custom calls, loops and calls, library ops such as cholesky or
// fft); `sim --json` reports how many a program has and the share of its time they take.
func Approximate(op hlo.Opcode) bool {
	c := op.Category()
	return c == hlo.CatOther || c == hlo.CatControl
}

// sortLike reports whether an opaque kernel built around op pays n log n vector work for
// its n output elements (a sorting network or a generic loop). The other opaque ops
// (collectives, transfers, library ops with their own cost entry) stream.
func sortLike(op hlo.Opcode) bool {
	switch op {
	case hlo.OpSort, hlo.OpTopK, hlo.OpCustomCall, hlo.OpRng, hlo.OpRngBitGenerator, hlo.OpAllReduce,
		hlo.OpAfterAll, hlo.OpFusion, hlo.OpCall, hlo.OpWhile, hlo.OpConditional:
		return true
	}
	return false
}

// computationOps counts the arithmetic ops of a small scalar computation (a reducer).
func computationOps(c *hlo.Computation) float64 {
	if c == nil {
		return 1
	}
	n := 0.0
	for _, in := range c.Instructions {
		if in.Opcode.IsElementwise() {
			n++
		}
	}
	return max(n, 1)
}

// Of returns the cost of one instruction executed on its own.
//
// Contract, following XLA's HloCostAnalysis: elementwise ops cost one flop per output
// element (transcendental ops count a transcendental instead, plus their vector work);
// dot costs 2 flops per multiply-add: 2 * |output| * |contracting|; convolution costs 2 *
// |output| * |kernel window| * input features per group; reduce costs (ops in to_apply)
// per input element; reduce-window (ops in to_apply) * |window| per output element; data
// movement, tuples and sources cost no flops. Bytes count every array operand once and
// the result once, unpadded.
func Of(in *hlo.Instruction) OpCost {
	var c OpCost
	out := in.Shape
	for _, op := range in.Operands {
		if op.Shape.IsArray() {
			c.BytesRead += float64(op.Shape.Bytes())
		}
	}
	c.BytesWritten = float64(out.Bytes())
	n := float64(out.Elements())
	switch in.Opcode.Category() {
	case hlo.CatElementwise:
		c.Flops = n
		c.VectorOps = n * VectorWeight(in.Opcode)
	case hlo.CatTranscendental:
		c.Transcendentals = n * TranscendentalWeight(in.Opcode)
		c.VectorOps = n * VectorWeight(in.Opcode)
	case hlo.CatDot:
		k := 1.0
		if dd := in.Dot; dd != nil {
			for _, d := range dd.LhsContracting {
				k *= float64(in.Operands[0].Shape.Dims[d])
			}
		}
		c.Flops = 2 * n * k
	case hlo.CatConvolution:
		k := in.Operands[1].Shape
		win := 1.0
		if cd := in.Conv; cd != nil {
			for _, d := range cd.KernelSpatial {
				win *= float64(k.Dims[d])
			}
			c.Flops = 2 * n * win * float64(k.Dims[cd.KernelInput])
		}
	case hlo.CatReduce:
		inElems := float64(in.Operands[0].Shape.Elements())
		c.Flops = inElems * computationOps(in.ToApply)
		c.VectorOps = c.Flops
	case hlo.CatReduceWindow:
		win := 1.0
		if in.Window != nil {
			for _, w := range in.Window.Dims {
				win *= float64(max(w.Size, 1))
			}
		}
		if in.Opcode == hlo.OpSelectAndScatter {
			n = float64(in.Operands[1].Shape.Elements())
		}
		c.Flops = n * win * computationOps(in.ToApply)
		c.VectorOps = c.Flops
	case hlo.CatIndexed:
		if in.Opcode == hlo.OpScatter {
			// Only the updated rows move: read the updates and indices, read-modify-write
			// the touched rows of each input (N of them for a variadic scatter).
			n := hlo.ScatterArity(in)
			var upd, elems float64
			for _, u := range in.Operands[n+1:] {
				upd += float64(u.Shape.Bytes())
				elems += float64(u.Shape.Elements())
			}
			c.BytesRead = upd + float64(in.Operands[n].Shape.Bytes()) + upd
			c.BytesWritten = upd
			c.Flops = elems
			c.VectorOps = c.Flops
		} else if in.Opcode == hlo.OpGather || in.Opcode == hlo.OpDynamicSlice {
			// Only the gathered rows are read.
			c.BytesRead = c.BytesWritten
			for _, op := range in.Operands[1:] {
				c.BytesRead += float64(op.Shape.Bytes())
			}
		} else if in.Opcode == hlo.OpDynamicUpdateSlice {
			upd := float64(in.Operands[1].Shape.Bytes())
			c.BytesRead = upd
			c.BytesWritten = upd
		}
	case hlo.CatSource, hlo.CatTuple, hlo.CatControl:
		c = OpCost{}
		if in.Opcode == hlo.OpIota {
			c.BytesWritten = float64(out.Bytes())
			c.VectorOps = n
		}
	case hlo.CatOther:
		otherCost(in, &c)
	}
	return c
}

// otherCost fills the arithmetic of the library-like and collective ops (bytes are
// already counted: every array operand once, the result once).
//
//   - batch-norm-training: mean, variance and normalization, 7 ops per element;
//     batch-norm-inference 4; batch-norm-grad 10.
//   - cholesky of a batch of n x n matrices: n^3/3 multiply-adds each (2 flops);
//     triangular-solve of an n x n system with m right-hand sides: n^2 m flops.
//   - fft: 5 N log2 N flops per transform of N points (the radix-2 count).
//   - topk: a selection over the last dimension, log2(k) compares per input element.
//   - reductions over devices (all-reduce, reduce-scatter, their starts): one op per
//     input element; map: the ops of to_apply per element.
//   - ragged-dot: 2 flops per output element per contracted lhs element.
//
// Vector work equals the flops: these ops run on the vector unit in the streaming model.
func otherCost(in *hlo.Instruction, c *OpCost) {
	elems := func(i int) float64 {
		if i < len(in.Operands) && in.Operands[i].Shape.IsArray() {
			return float64(in.Operands[i].Shape.Elements())
		}
		return 0
	}
	x := hlo.Shape{}
	if len(in.Operands) > 0 {
		x = in.Operands[0].Shape
	}
	switch in.Opcode {
	case hlo.OpBatchNormTraining:
		c.Flops = 7 * elems(0)
	case hlo.OpBatchNormInference:
		c.Flops = 4 * elems(0)
	case hlo.OpBatchNormGrad:
		c.Flops = 10 * elems(0)
	case hlo.OpCholesky:
		if r := x.Rank(); r >= 2 {
			nn := float64(x.Dims[r-1])
			c.Flops = elems(0) / (nn * nn) * 2 * nn * nn * nn / 3
		}
	case hlo.OpTriangularSolve:
		if a := x; a.Rank() >= 2 {
			c.Flops = elems(1) * float64(a.Dims[a.Rank()-1])
		}
	case hlo.OpFft:
		if r := x.Rank(); r >= 1 {
			pts := float64(x.Dims[r-1])
			c.Flops = 5 * elems(0) * math.Log2(math.Max(pts, 2))
		}
	case hlo.OpTopK:
		k := 1.0
		if in.Shape.IsTuple() && len(in.Shape.Tuple) > 0 {
			if t := in.Shape.Tuple[0]; t.Rank() > 0 {
				k = float64(t.Dims[t.Rank()-1])
			}
		}
		c.Flops = elems(0) * math.Max(math.Log2(math.Max(k, 1)), 1)
	case hlo.OpAllReduce, hlo.OpAllReduceStart, hlo.OpReduceScatter, hlo.OpCollectiveReduce:
		for i := range in.Operands {
			c.Flops += elems(i)
		}
	case hlo.OpMap:
		c.Flops = float64(in.Shape.Elements()) * computationOps(in.ToApply)
	case hlo.OpRaggedDot:
		if r := x.Rank(); r >= 1 {
			c.Flops = 2 * float64(in.Shape.Elements()) * float64(x.Dims[r-1])
		}
	}
	c.VectorOps = c.Flops
}
