package opt

import (
	"github.com/tpucost/tpucost/compiler/hlo"
)

// MaxFoldElements caps constant folding: an instruction is folded only when its result
// and every operand have at most this many elements, so that folding never turns a
// cheap op on small constants into a large constant in the program text (XLA's
// HloConstantFolding keeps broadcasts and iotas unfolded for the same reason).
const MaxFoldElements = 4096

func constantFolding() Pass {
	return newPass("constant-folding",
		"evaluates pure instructions whose operands are all known constants (≤ MaxFoldElements elements; not broadcast or iota) and replaces them by a constant",
		runConstantFolding)
}

// runConstantFolding is HloConstantFolding: every pure elementwise, convert, compare,
// select, clamp, reshape, copy, transpose, reverse, slice, concatenate, pad, reduce (with
// an add/multiply/max/min/and/or reducer) and dot instruction whose operands are all
// constants with known values is replaced by a constant holding its result, computed
// as described in fold.go (rounded to the element type after every operation; never for
// integer division by zero, out-of-range float-to-int conversion, shifts or 64-bit
// integers beyond 2^53). Broadcasts and iotas stay as they are: they are cheaper than
// the constant they would become. Constants with elided payloads ("{...}") are unknown
// and never fold. Operands that become unused are deleted.
func runConstantFolding(m *hlo.Module) (bool, error) {
	keep := func(mc *modCtx, x *hlo.Instruction) bool {
		return foldable(x) && mc.pure(x) && x.Shape.Elements() <= MaxFoldElements
	}
	return rewriteEach(m, false, keep, func(e *editor, x *hlo.Instruction) error {
		vals := make([][]float64, len(x.Operands))
		for k, op := range x.Operands {
			if op.Shape.Elements() > MaxFoldElements {
				return nil
			}
			v, known, err := e.mc.knownLiteral(op)
			if err != nil || !known {
				return err
			}
			vals[k] = v
		}
		if out, ok := foldInstruction(x, vals); ok {
			e.replace(x, e.constant(x.Shape, out))
		}
		return nil
	})
}

// foldable reports whether constant folding evaluates instructions of x's opcode.
func foldable(x *hlo.Instruction) bool {
	if len(x.Operands) == 0 {
		return false // parameter, constant, iota
	}
	switch x.Opcode {
	case hlo.OpCopy, hlo.OpReshape, hlo.OpTranspose, hlo.OpReverse, hlo.OpSlice,
		hlo.OpConcatenate, hlo.OpPad, hlo.OpReduce, hlo.OpDot:
		return true
	}
	return elementwiseOpcode(x.Opcode)
}
