package compiler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// DefaultTripCount is the trip count assumed for a while loop whose trip count neither
// its backend_config (known_trip_count) nor its induction variable gives: one iteration,
// so the loop's time is a lower bound. Such loops are reported (trip_count -1 in `sim
// --json`) and counted as unknown.
const DefaultTripCount = 1

// Step is one thing an executed computation does, in program order: exactly one field is
// set. Done is the completion (-done) of an asynchronous collective started earlier in
// the same block.
type Step struct {
	Kernel     *Kernel
	Loop       *Loop
	Cond       *Conditional
	Collective *Collective
	Done       *Collective
}

// Block is the schedule of one executed computation: the entry, a loop body or
// condition, a conditional branch.
type Block struct {
	Name  string // the computation's name
	Steps []Step
}

// Loop is a while loop: the condition and body run TripCount times.
type Loop struct {
	Name       string // the while instruction's name
	TripCount  int64  // DefaultTripCount when unknown
	TripKnown  bool
	TripSource string // "backend_config", "induction", "bound" (an upper bound; TripCount) or "default"
	Cond, Body *Block
}

// Conditional is a conditional: one of Branches runs, Branches[i] with probability
// Weights[i] (equal weights unless the branch index is a constant).
type Conditional struct {
	Name     string
	Branches []*Block
	Weights  []float64
}

// peel skips value-preserving wrappers around a scalar.
func peel(x *hlo.Instruction) *hlo.Instruction {
	for (x.Opcode == hlo.OpCopy || x.Opcode == hlo.OpConvert || x.Opcode == hlo.OpBitcast || x.Opcode == hlo.OpReshape) && len(x.Operands) == 1 {
		x = x.Operands[0]
	}
	return x
}

// intConstant returns the value of a scalar integer (or integral) constant.
func intConstant(x *hlo.Instruction) (int64, bool) {
	x = peel(x)
	if x.Opcode != hlo.OpConstant || x.Shape.Rank() != 0 {
		return 0, false
	}
	s := strings.TrimSpace(x.Literal)
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, true
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == float64(int64(f)) {
		return int64(f), true
	}
	return 0, false
}

// branchIndex returns the constant branch a conditional takes, or -1.
func branchIndex(in *hlo.Instruction, n int) int {
	if len(in.Operands) == 0 {
		return -1
	}
	x := peel(in.Operands[0])
	if x.Opcode != hlo.OpConstant || x.Shape.Rank() != 0 {
		return -1
	}
	switch strings.TrimSpace(x.Literal) {
	case "true":
		return 0
	case "false":
		return 1
	}
	v, ok := intConstant(x)
	if !ok {
		return -1
	}
	if v < 0 || v >= int64(n) {
		return n - 1 // XLA: an out-of-range index runs the last branch
	}
	return int(v)
}

var knownTrip = regexp.MustCompile(`known_trip_count"?\s*[:=]\s*\{\s*"?n"?\s*[:=]\s*"?(\d+)`)

// TripCount derives how many times while loop w runs, as XLA does: known_trip_count in
// its backend_config when present; else from the induction variable: element i of the
// loop tuple whose init is an integer constant, which the body's root advances by a
// constant step (add or subtract) and which the condition's root compares (lt, le, gt,
// ge, ne) against a constant. When the condition's root is a conjunction (`and(i < N,
// not done)`, the generate loops of decoders, whose other conjuncts depend on data), a
// conjunct of that form bounds the loop: the least such count is an upper bound, src
// "bound". src is "backend_config", "induction" or "bound"; ok is false when none applies.
//
// When the init of i is computed rather than constant (Gemma's generate loop starts i at
// the prompt length, a reduce over the prompt mask, and runs while i < N), the count is an
// upper bound, src "bound": the most trips any start allows. Counting up (lt, le, step >
// 0) that is the count from the least value the start can take, derived from its defining
// ops (startRange: a sum of a 0/1 mask is ≥ 0, an unsigned value ≥ 0, ...); when no lower
// limit can be derived (a signed parameter, a sum of a signed array) the start is assumed
// non-negative, as an index or position is, and the bound N itself is charged (no count
// when N ≤ 0: the assumption would then say the loop never runs). Counting down (gt, ge,
// step < 0) needs a derived upper limit of the start; ne with a computed start has no
// bound. Trips of one start through a tuple or get-tuple-element of the init are followed.
func TripCount(w *hlo.Instruction) (n int64, src string, ok bool) {
	if v, has := w.ExtraAttr("backend_config"); has {
		if m := knownTrip.FindStringSubmatch(strings.ReplaceAll(v, `\`, "")); m != nil {
			if n, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				return n, "backend_config", true
			}
		}
	}
	if w.Condition == nil || w.Body == nil || len(w.Operands) != 1 {
		return 0, "", false
	}
	root := peel(w.Condition.Root)
	if root.Opcode != hlo.OpAnd {
		n, exact, ok := inductionTrips(w, root)
		if !exact {
			return n, "bound", ok
		}
		return n, "induction", ok
	}
	// A conjunction: every conjunct must hold to iterate, so each induction conjunct's
	// count bounds the trips (nested ands flattened).
	var conj []*hlo.Instruction
	var flatten func(x *hlo.Instruction)
	flatten = func(x *hlo.Instruction) {
		x = peel(x)
		if x.Opcode == hlo.OpAnd && len(conj) < 64 {
			for _, op := range x.Operands {
				flatten(op)
			}
			return
		}
		conj = append(conj, x)
	}
	flatten(root)
	found := false
	for _, c := range conj {
		if k, _, ok := inductionTrips(w, c); ok && (!found || k < n) {
			n, found = k, true
		}
	}
	if !found {
		return 0, "", false
	}
	return n, "bound", true
}

// inductionTrips is the trip count that the compare cmp of w's condition gives by
// itself (see TripCount); exact is false when the start is computed and n is the most
// trips it allows.
func inductionTrips(w *hlo.Instruction, cmp *hlo.Instruction) (n int64, exact, ok bool) {
	if cmp.Opcode != hlo.OpCompare || len(cmp.Operands) != 2 {
		return 0, false, false
	}
	dir := strings.ToUpper(cmp.Direction)
	a, b := peel(cmp.Operands[0]), peel(cmp.Operands[1])
	bound, okB := intConstant(b)
	iv := a
	if !okB {
		bound, okB = intConstant(a)
		iv = b
		dir = map[string]string{"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "NE": "NE"}[dir]
	}
	if !okB || iv.Opcode != hlo.OpGetTupleElement || peel(iv.Operands[0]).Opcode != hlo.OpParameter {
		return 0, false, false
	}
	i := iv.Index
	init := tupleElement(w.Operands[0], i, maxRangeDepth)
	if init == nil {
		return 0, false, false
	}
	sr := startRange(init)
	exact = sr.HasLo && sr.HasHi && sr.Lo == sr.Hi
	root := w.Body.Root
	if root.Opcode != hlo.OpTuple || i >= len(root.Operands) {
		return 0, false, false
	}
	upd := peel(root.Operands[i])
	isIV := func(x *hlo.Instruction) bool {
		x = peel(x)
		return x.Opcode == hlo.OpGetTupleElement && x.Index == i && peel(x.Operands[0]).Opcode == hlo.OpParameter
	}
	var step int64
	switch {
	case upd.Opcode == hlo.OpAdd && isIV(upd.Operands[0]):
		step, ok = intConstant(upd.Operands[1])
	case upd.Opcode == hlo.OpAdd && isIV(upd.Operands[1]):
		step, ok = intConstant(upd.Operands[0])
	case upd.Opcode == hlo.OpSubtract && isIV(upd.Operands[0]):
		step, ok = intConstant(upd.Operands[1])
		step = -step
	default:
		ok = false
	}
	if !ok || step == 0 {
		return 0, false, false
	}
	// The start that allows the most trips: the least one counting up, the greatest
	// counting down (TripCount).
	var start int64
	assumed := false
	switch {
	case exact:
		start = sr.Lo
	case step > 0 && (dir == "LT" || dir == "LE"):
		start, assumed = sr.Lo, !sr.HasLo // unknown: assumed ≥ 0, an index
	case step < 0 && (dir == "GT" || dir == "GE") && sr.HasHi:
		start = sr.Hi
	default:
		return 0, false, false
	}
	d := bound - start
	if (bound >= start) != (d >= 0) { // the difference overflows int64
		return 0, false, false
	}
	switch {
	case dir == "LT" && step > 0:
		n = ceilDiv64(d, step)
	case dir == "LE" && step > 0:
		n = floorDiv64(d, step) + 1
	case dir == "GT" && step < 0:
		n = ceilDiv64(-d, -step)
	case dir == "GE" && step < 0:
		n = floorDiv64(-d, -step) + 1
	case dir == "NE" && d%step == 0 && d/step >= 0:
		n = d / step
	default:
		return 0, false, false
	}
	if assumed && n <= 0 {
		return 0, false, false
	}
	return max(n, 0), exact, true
}

// tupleElement is element i of the tuple value x, followed through tuple and
// get-tuple-element instructions (and value-preserving wrappers); nil when x is not built
// from a tuple instruction within depth steps.
func tupleElement(x *hlo.Instruction, i, depth int) *hlo.Instruction {
	x = peel(x)
	switch {
	case depth <= 0:
		return nil
	case x.Opcode == hlo.OpTuple && i < len(x.Operands):
		return x.Operands[i]
	case x.Opcode == hlo.OpGetTupleElement && len(x.Operands) == 1:
		if t := tupleElement(x.Operands[0], x.Index, depth-1); t != nil {
			return tupleElement(t, i, depth-1)
		}
	}
	return nil
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv64(a, b int64) int64 { return -floorDiv64(-a, b) }

// block builds the schedule of flow computation c, run mult times per program run,
// adding mult to the weight of each of its kernels.
func (s *State) block(mod *hlo.Module, c *hlo.Computation, mult float64, kernels map[*hlo.Instruction]*Kernel) (*Block, error) {
	b := &Block{Name: c.Name}
	started := map[*hlo.Instruction]*Collective{}
	for _, in := range c.Instructions {
		switch in.Opcode {
		case hlo.OpFusion:
			k := kernels[in]
			if k == nil {
				return nil, fmt.Errorf("fusion %s is not in the kernel table", in.Name)
			}
			k.Weight += mult
			b.Steps = append(b.Steps, Step{Kernel: k})
			continue
		case hlo.OpWhile:
			ti := s.Trips[in]
			l := &Loop{Name: in.Name, TripCount: ti.N, TripKnown: ti.Known, TripSource: ti.Source}
			var err error
			if l.Cond, err = s.block(mod, in.Condition, mult*float64(ti.N), kernels); err != nil {
				return nil, err
			}
			if l.Body, err = s.block(mod, in.Body, mult*float64(ti.N), kernels); err != nil {
				return nil, err
			}
			b.Steps = append(b.Steps, Step{Loop: l})
			continue
		case hlo.OpConditional:
			bs, err := hlo.BranchComputations(mod, in)
			if err != nil {
				return nil, err
			}
			cd := &Conditional{Name: in.Name, Weights: make([]float64, len(bs))}
			if taken := branchIndex(in, len(bs)); taken >= 0 {
				cd.Weights[taken] = 1
			} else {
				for i := range cd.Weights {
					cd.Weights[i] = 1 / float64(len(bs))
				}
			}
			for i, bc := range bs {
				blk, err := s.block(mod, bc, mult*cd.Weights[i], kernels)
				if err != nil {
					return nil, err
				}
				cd.Branches = append(cd.Branches, blk)
			}
			b.Steps = append(b.Steps, Step{Cond: cd})
			continue
		}
		kind, ok := collectiveKind(in)
		switch {
		case ok && kind != "":
			col, err := newCollective(in, kind)
			if err != nil {
				return nil, err
			}
			if strings.HasSuffix(in.Opcode.String(), "-start") {
				col.Async = true
				started[in] = col
			}
			b.Steps = append(b.Steps, Step{Collective: col})
		case ok && len(in.Operands) == 1 && started[in.Operands[0]] != nil:
			b.Steps = append(b.Steps, Step{Done: started[in.Operands[0]]})
		}
	}
	return b, nil
}
