package compiler

import (
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// RaggedKind is how a kernel of a ragged program runs (after CoRa, Fegade et al., MLSys
// 2022; docs/ragged.md).
type RaggedKind string

// The ragged kinds of a kernel.
const (
	// RaggedDense: the kernel touches no ragged value; it runs as compiled.
	RaggedDense RaggedKind = "dense"
	// RaggedPacked: the kernel is row-independent over packed storage (projections,
	// feed-forward, normalizations, elementwise): it runs once over the sequences
	// concatenated, each padded only to the layout tile along its rows (PackAlign), and
	// reads the offsets array.
	RaggedPacked RaggedKind = "packed"
	// RaggedPerSequence: the kernel's work couples the entries of a sequence (attention's
	// lᵢ × lᵢ scores, a softmax over lᵢ, the context contracting over lᵢ): it runs a loop
	// over the sequences, each with its own bounds (Σ⌈lᵢ/t⌉ steps), horizontally fused
	// into one launch that reads the offsets array.
	RaggedPerSequence RaggedKind = "per_sequence"
	// RaggedPadKernel: the kernel of an explicit pad (hlo.InsertRaggedPads): it unpacks a
	// ragged value into the dense layout (its padding filled) for an op that cannot carry
	// raggedness, which then runs dense.
	RaggedPadKernel RaggedKind = "pad"
)

// PackAlign is the padding of each sequence in packed storage: the sublane count of a
// vreg (8 rows), the layout tile of the rows the ragged dimension maps to in every
// packed kernel of the zoo's sequence models ([tokens, hidden]: tokens on sublanes).
const PackAlign = 8

// RaggedKernel is one kernel of a ragged program: its kind and the ragged dims of its
// output (hlo.RaggedDims.String).
type RaggedKernel struct {
	Name string     `json:"name"`
	Kind RaggedKind `json:"kind"`
	Dims string     `json:"dims"`
	// Offsets: the kernel reads the offsets array (a per-sequence kernel, or a packed one
	// whose values index within a sequence: a position added per token).
	Offsets bool `json:"offsets"`
}

// RaggedPlan is the lowering of a program compiled from a module with ragged parameters
// (hlo.Ragged): each kernel's kind, in p.Kernels order, the lengths and the explicit
// pads (ops that cannot carry raggedness).
type RaggedPlan struct {
	Lengths []int           `json:"lengths"`
	Kernels []RaggedKernel  `json:"kernels"`
	Pads    []hlo.RaggedPad `json:"-"`
}

// PlanRagged classifies the kernels of p, a program compiled from a module with ragged
// entry parameters (hlo.InferRagged over p.Module, which kept the attribute through the
// passes): a kernel holding an explicit pad (InsertRaggedPads) is a pad kernel (it reads
// the offsets to unpack); a kernel with a dot or reduce over a sequence dimension, or a
// value ragged on two sequence dimensions, is per-sequence; one with any other ragged
// value packed; the rest dense. Pads lists the explicit pads and any op left that cannot
// carry raggedness. It fails when p has no ragged parameter or a kernel is not in its
// module.
func PlanRagged(p *Program) (*RaggedPlan, error) {
	ri, err := hlo.InferRagged(p.Module)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	if ri == nil {
		return nil, fmt.Errorf("%s: no ragged parameter (did a pass drop the ragged attribute?)", p.Name)
	}
	rp := &RaggedPlan{Lengths: ri.Lengths, Pads: ri.Pads}
	for _, k := range p.Kernels {
		kind, offsets := RaggedDense, false
		if k.Comp == nil {
			return nil, fmt.Errorf("%s: kernel %s has no computation", p.Name, k.Name)
		}
		if slices.ContainsFunc(k.Comp.Instructions, hlo.IsRaggedPad) {
			rp.Kernels = append(rp.Kernels, RaggedKernel{Name: k.Name, Kind: RaggedPadKernel, Dims: ri.Of(k.Comp.Root).String(), Offsets: true})
			continue
		}
		for _, in := range k.Comp.Instructions {
			d := ri.Of(in)
			if d.IsRagged() && kind == RaggedDense {
				kind = RaggedPacked
			}
			offsets = offsets || d.PerSequence()
			if perSequence(ri, in) {
				kind = RaggedPerSequence
			}
		}
		rp.Kernels = append(rp.Kernels, RaggedKernel{Name: k.Name, Kind: kind, Dims: ri.Of(k.Comp.Root).String(),
			Offsets: kind == RaggedPerSequence || kind == RaggedPacked && offsets})
	}
	return rp, nil
}

// perSequence reports whether in couples the entries of a sequence: a value ragged on
// two sequence dimensions, a dot contracting a sequence dimension, a reduce over one.
func perSequence(ri *hlo.RaggedInfo, in *hlo.Instruction) bool {
	if len(ri.Of(in).Seq) >= 2 {
		return true
	}
	switch in.Opcode {
	case hlo.OpDot:
		if in.Dot == nil {
			return false
		}
		for _, c := range in.Dot.LhsContracting {
			if slices.Contains(ri.Of(in.Operands[0]).Seq, c) {
				return true
			}
		}
	case hlo.OpReduce:
		for _, r := range in.Dimensions {
			if slices.Contains(ri.Of(in.Operands[0]).Seq, r) {
				return true
			}
		}
	}
	return false
}

// Count returns how many kernels of rp are of kind k.
func (rp *RaggedPlan) Count(k RaggedKind) int {
	n := 0
	for _, x := range rp.Kernels {
		if x.Kind == k {
			n++
		}
	}
	return n
}

// InsertRaggedPads makes the pads of a module with ragged parameters explicit before it
// is compiled (hlo.InsertRaggedPads): every op that cannot carry raggedness reads its
// ragged operands through a pad instruction, which the compiler keeps as a kernel of its
// own (a custom-call: never fused, never simplified away) and PlanRagged marks
// RaggedPadKernel. It returns where the pads are.
func InsertRaggedPads(m *hlo.Module) ([]hlo.RaggedPad, error) {
	pads, err := hlo.InsertRaggedPads(m)
	if err != nil {
		return nil, m.Wrap(err)
	}
	return pads, nil
}
