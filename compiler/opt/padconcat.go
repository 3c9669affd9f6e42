package opt

import (
	"github.com/tpucost/tpucost/compiler/hlo"
)

func padAddToConcat() Pass {
	return newPass("pad-add-to-concat",
		"add(pad(a, 0), pad(b, 0)) whose operand windows are adjacent → pad(concatenate(a, b), 0) (the gradient of a split: LSTM gates, qkv)",
		runPadAddToConcat)
}

// runPadAddToConcat rewrites sums of zero-padded arrays whose operand windows tile a
// contiguous range: add(pad(a, 0), pad(b, 0)), where both pads have the same shape,
// no interior padding, and windows equal in every dimension but one, in which b's
// window starts where a's ends, becomes pad(concatenate(a, b), 0) — or the concatenate
// alone when it fills the result. Adding zeros is exact (up to the sign of a zero sum,
// as for x+0 → x), so the result is the same. It also reassociates add(add(u, pad(a)),
// pad(b)) → add(u, pad(concatenate(a, b))) (exact too: at every position at most one
// of the two pads is not zero), and a concatenate being padded again is flattened into
// the new one. Reverse-mode gradients of a split (slices of an LSTM's fused gate
// matrix, of a fused qkv projection) are exactly such sums; a chain of k pads and k-1
// adds becomes one concatenate. It applies only when the merged pads die with the
// add (OpCount never grows). XLA has no pass of this name; the rewrite is what its
// algebraic simplifier does for a concatenate's gradient in spirit.
func runPadAddToConcat(m *hlo.Module) (bool, error) {
	keep := func(mc *modCtx, x *hlo.Instruction) bool { return x.Opcode == hlo.OpAdd && pureArray(mc, x) }
	return rewriteEach(m, true, keep, func(e *editor, x *hlo.Instruction) error {
		a, b := x.Operands[0], x.Operands[1]
		if y := mergePads(e, a, x, b, x); y != nil {
			e.replace(x, y)
			return nil
		}
		// add(add(u, p1), p2) in any operand order
		for k := 0; k < 2; k++ {
			in, p2 := x.Operands[k], x.Operands[1-k]
			if in.Opcode != hlo.OpAdd || !e.wouldDie(in, x) {
				continue
			}
			for j := 0; j < 2; j++ {
				u, p1 := in.Operands[1-j], in.Operands[j]
				if y := mergePads(e, p1, in, p2, x); y != nil {
					e.replace(x, e.op(hlo.OpAdd, x.Shape, u, y))
					return nil
				}
			}
		}
		return nil
	})
}

// zeroPad reports whether p is a pad with a zero value, no interior and no negative
// padding.
func zeroPad(mc *modCtx, p *hlo.Instruction) bool {
	if p.Opcode != hlo.OpPad || !mc.isSplat(p.Operands[1], 0) {
		return false
	}
	for _, d := range p.Padding {
		if d.Interior != 0 || d.Lo < 0 || d.Hi < 0 {
			return false
		}
	}
	return true
}

// mergePads returns pad(concatenate(...), 0) equal to p1 + p2 (p1 dying with owner1,
// p2 with owner2), or nil.
func mergePads(e *editor, p1, owner1, p2, owner2 *hlo.Instruction) *hlo.Instruction {
	mc := e.mc
	if p1 == p2 || !zeroPad(mc, p1) || !zeroPad(mc, p2) || !p1.Shape.Compatible(p2.Shape) ||
		!e.wouldDie(p1, owner1) || !e.wouldDie(p2, owner2) {
		return nil
	}
	d := -1
	for i := range p1.Padding {
		if p1.Padding[i] != p2.Padding[i] {
			if d >= 0 {
				return nil // windows differ in two dimensions
			}
			d = i
		}
	}
	if d < 0 {
		return nil
	}
	first, second := p1, p2
	if p2.Padding[d].Lo < p1.Padding[d].Lo {
		first, second = p2, p1
	}
	if first.Padding[d].Lo+first.Operands[0].Shape.Dims[d] != second.Padding[d].Lo {
		return nil // not adjacent
	}
	var parts []*hlo.Instruction
	for _, p := range []*hlo.Instruction{first, second} {
		a := p.Operands[0]
		if a.Opcode == hlo.OpConcatenate && a.Dimensions[0] == d && e.onlyUsedBy(a, p) {
			parts = append(parts, a.Operands...)
		} else {
			parts = append(parts, a)
		}
	}
	cat := e.add(&hlo.Instruction{Opcode: hlo.OpConcatenate, Operands: parts, Dimensions: []int{d}, HasDimensions: true})
	pads := append([]hlo.PadDim{}, p1.Padding...)
	pads[d] = hlo.PadDim{Lo: first.Padding[d].Lo, Hi: second.Padding[d].Hi}
	for _, p := range pads {
		if p != (hlo.PadDim{}) {
			return e.add(&hlo.Instruction{Opcode: hlo.OpPad, Operands: []*hlo.Instruction{cat, p1.Operands[1]}, Padding: pads})
		}
	}
	return cat
}
