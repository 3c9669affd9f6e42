package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
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
	TripSource string // "backend_config", "induction" or "default"
	Cond, Body *Block
}

// Conditional is a conditional: one of Branches runs, Branches[i] with probability
// Weights[i] (equal weights unless the branch index is a constant).
type Conditional struct {
	Name     string
	Branches []*Block
	Weights  []float64
}

// Collective kinds, named as their HLO opcodes.
const (
	CollAllReduce         = "all-reduce"
	CollAllGather         = "all-gather"
	CollReduceScatter     = "reduce-scatter"
	CollAllToAll          = "all-to-all"
	CollCollectivePermute = "collective-permute"
)

// Collective is a cross-chip collective. Bytes is the size the ring fractions apply to:
// the operand of all-reduce, reduce-scatter, all-to-all and collective-permute, the
// (gathered) result of all-gather. GroupSize is the number of chips in each replica
// group; 0 means all chips of the program (replica_groups={} or none, as PyTorch/XLA
// writes them). Devices is how many devices its groups name together (ids 0..Devices-1):
// 16 for {{0,...,7},{8,...,15}}; 0 when no group is named.
type Collective struct {
	Name      string
	Kind      string
	Bytes     float64
	GroupSize int
	Devices   int
	// Async marks a -start: the transfer overlaps the steps up to its Done step.
	Async bool
}

// collectiveKind maps an instruction to its collective kind by opcode name, so that the
// collective opcodes (and their -start halves) are recognised as soon as the IR has them;
// a -done half does nothing of its own (ok with kind "").
func collectiveKind(in *hlo.Instruction) (kind string, ok bool) {
	name := in.Opcode.String()
	if strings.HasSuffix(name, "-done") {
		base := strings.TrimSuffix(name, "-done")
		switch base {
		case CollAllReduce, CollAllGather, CollReduceScatter, CollAllToAll, CollCollectivePermute:
			return "", true
		}
		return "", false
	}
	name = strings.TrimSuffix(name, "-start")
	switch name {
	case CollAllReduce, CollAllGather, CollReduceScatter, CollAllToAll, CollCollectivePermute:
		return name, true
	}
	return "", false
}

// arrayBytes sums the bytes of the arrays in s (tuples included).
func arrayBytes(s hlo.Shape) float64 {
	if s.IsTuple() {
		t := 0.0
		for _, e := range s.Tuple {
			t += arrayBytes(e)
		}
		return t
	}
	if !s.IsArray() {
		return 0
	}
	return float64(s.Bytes())
}

func newCollective(in *hlo.Instruction, kind string) (*Collective, error) {
	c := &Collective{Name: in.Name, Kind: kind}
	for _, op := range in.Operands {
		c.Bytes += arrayBytes(op.Shape)
	}
	if kind == CollAllGather {
		c.Bytes = arrayBytes(in.Shape)
		if in.Shape.IsTuple() && strings.HasSuffix(in.Opcode.String(), "-start") && len(in.Shape.Tuple) == 2 {
			c.Bytes = arrayBytes(in.Shape.Tuple[1]) // (operand, result) of an async start
		}
	}
	if v, ok := in.ExtraAttr("replica_groups"); ok {
		k, n, err := ReplicaGroups(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		c.GroupSize, c.Devices = k, n
	}
	return c, nil
}

var iotaGroups = regexp.MustCompile(`^\[([0-9,\s]+)\]\s*<=\s*\[([0-9,\s]+)\](T\([0-9,\s]+\))?$`)

// ReplicaGroupSize returns the number of chips in each group of a replica_groups
// attribute: "{{0,1,2,3},{4,5,6,7}}" (explicit groups, which must have equal sizes),
// "[2,4]<=[8]" (iota form: the last dimension is the group size) or "{}" (0: all chips).
func ReplicaGroupSize(v string) (int, error) {
	k, _, err := ReplicaGroups(v)
	return k, err
}

// ReplicaGroups returns the group size of a replica_groups attribute (as
// ReplicaGroupSize) and the number of devices its groups span: the largest id + 1 of
// explicit groups, the product of the iota form's device dimensions ("[2,4]<=[8]": 8).
// Both are 0 for "{}".
func ReplicaGroups(v string) (size, devices int, err error) {
	v = strings.TrimSpace(v)
	if m := iotaGroups.FindStringSubmatch(v); m != nil {
		dims := strings.Split(m[1], ",")
		k, err := strconv.Atoi(strings.TrimSpace(dims[len(dims)-1]))
		if err != nil || k <= 0 {
			return 0, 0, fmt.Errorf("replica_groups %q: bad group size", v)
		}
		n := 1
		for _, d := range strings.Split(m[2], ",") {
			x, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || x <= 0 || x > 1<<20 {
				return 0, 0, fmt.Errorf("replica_groups %q: bad device count", v)
			}
			n *= x
			if n > 1<<20 {
				return 0, 0, fmt.Errorf("replica_groups %q: more than 2^20 devices", v)
			}
		}
		return k, n, nil
	}
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return 0, 0, fmt.Errorf("replica_groups %q: expected {{...},...} or [groups,size]<=[n]", v)
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return 0, 0, nil
	}
	size = -1
	for _, g := range strings.Split(inner, "}") {
		g = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(g), ","))
		if g == "" {
			continue
		}
		if !strings.HasPrefix(g, "{") {
			return 0, 0, fmt.Errorf("replica_groups %q: expected a group {...}", v)
		}
		n := 0
		for _, x := range strings.Split(g[1:], ",") {
			if x = strings.TrimSpace(x); x != "" {
				id, err := strconv.Atoi(x)
				if err != nil || id < 0 || id >= 1<<20 {
					return 0, 0, fmt.Errorf("replica_groups %q: bad replica id %q (want 0..2^20-1)", v, x)
				}
				devices = max(devices, id+1)
				n++
			}
		}
		if size >= 0 && n != size {
			return 0, 0, fmt.Errorf("replica_groups %q: groups of different sizes (%d and %d)", v, size, n)
		}
		size = n
	}
	return max(size, 0), devices, nil
}

// ModuleChips is the number of chips a module runs on from its header:
// replica_count × num_partitions (each 1 when absent).
func ModuleChips(m *hlo.Module) int {
	n := 1
	for _, a := range m.Attrs {
		if a.Key == "replica_count" || a.Key == "num_partitions" {
			if v, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && v > 0 {
				n *= v
			}
		}
	}
	return n
}

// Custom-call classes.
const (
	ccOther = iota // unknown target: streams its operands, timed approximately
	ccFree         // Sharding, SPMD shape changes: no data moves
	ccGEMM         // matmul library call: a dot
	ccConv         // convolution library call: a convolution
	ccCopy         // MoveToHost / MoveToDevice: a copy
	ccTopK         // TopK: a sort of the operand
)

func customCallTarget(in *hlo.Instruction) string {
	v, _ := in.ExtraAttr("custom_call_target")
	return strings.Trim(v, `"`)
}

// customCallClass recognises the common custom-call targets.
func customCallClass(in *hlo.Instruction) int {
	t := customCallTarget(in)
	lt := strings.ToLower(t)
	switch {
	case t == "Sharding" || t == "SPMDFullToShardShape" || t == "SPMDShardToFullShape" || t == "LayoutConstraint":
		return ccFree
	case t == "MoveToHost" || t == "MoveToDevice":
		return ccCopy
	case t == "TopK" || lt == "topk" || strings.HasSuffix(lt, "topk"):
		return ccTopK
	case strings.Contains(lt, "conv"):
		return ccConv
	case strings.Contains(lt, "gemm") || strings.Contains(lt, "matmul"):
		return ccGEMM
	}
	return ccOther
}

// isFreeCustomCall reports whether in is a custom-call that moves no data.
func isFreeCustomCall(in *hlo.Instruction) bool {
	return in.Opcode == hlo.OpCustomCall && customCallClass(in) == ccFree
}

var dotDimsField = regexp.MustCompile(`"(lhs_batch_dimensions|lhs_contracting_dimensions|rhs_batch_dimensions|rhs_contracting_dimensions)"\s*:\s*\[([^\]]*)\]`)

// gemmDims returns the dot dimension numbers of a GEMM custom-call: from its
// backend_config's dot_dimension_numbers when present, else the batched-matmul
// convention (leading batch dims, lhs [.., M, K] x rhs [.., K, N]).
func gemmDims(in *hlo.Instruction, lr, rr int) (*hlo.DotDims, bool) {
	if v, ok := in.ExtraAttr("backend_config"); ok && strings.Contains(v, "dot_dimension_numbers") {
		v = strings.ReplaceAll(v, `\"`, `"`)
		dd := &hlo.DotDims{}
		for _, m := range dotDimsField.FindAllStringSubmatch(v, -1) {
			var xs []int
			for _, s := range strings.Split(m[2], ",") {
				s = strings.Trim(strings.TrimSpace(s), `"`)
				if s == "" {
					continue
				}
				x, err := strconv.Atoi(s)
				if err != nil {
					return nil, false
				}
				xs = append(xs, x)
			}
			switch m[1] {
			case "lhs_batch_dimensions":
				dd.LhsBatch = xs
			case "lhs_contracting_dimensions":
				dd.LhsContracting = xs
			case "rhs_batch_dimensions":
				dd.RhsBatch = xs
			case "rhs_contracting_dimensions":
				dd.RhsContracting = xs
			}
		}
		return dd, len(dd.LhsContracting) > 0
	}
	if lr < 2 || lr != rr {
		return nil, false
	}
	dd := &hlo.DotDims{LhsContracting: []int{lr - 1}, RhsContracting: []int{rr - 2}}
	for i := 0; i < lr-2; i++ {
		dd.LhsBatch = append(dd.LhsBatch, i)
		dd.RhsBatch = append(dd.RhsBatch, i)
	}
	return dd, true
}

// rewriteCustomCalls replaces the recognised library custom-calls of the flow
// computations by the op they compute (a dot, a convolution, a copy), so that they are
// fused, tiled and timed as that op. A call whose operands or result do not fit the op
// is left alone (timed approximately). Results that are tuples (a library call's result
// and its scratch buffer) are rewritten when only element 0 is read.
func rewriteCustomCalls(comps []*hlo.Computation) {
	for _, c := range comps {
		var users [][]*hlo.Instruction
		for _, in := range c.Instructions {
			if in.Opcode != hlo.OpCustomCall {
				continue
			}
			if users == nil {
				users = c.Users()
			}
			cls := customCallClass(in)
			if cls != ccGEMM && cls != ccConv && cls != ccCopy {
				continue
			}
			res := in.Shape
			var gtes []*hlo.Instruction
			if res.IsTuple() {
				if len(res.Tuple) == 0 || in == c.Root {
					continue
				}
				ok := true
				for _, u := range users[in.ID] {
					if u.Opcode != hlo.OpGetTupleElement || u.Index != 0 {
						ok = false
					}
					gtes = append(gtes, u)
				}
				if !ok {
					continue
				}
				res = res.Tuple[0]
			}
			if !res.IsArray() || len(in.Operands) == 0 {
				continue
			}
			var next hlo.Instruction
			switch cls {
			case ccCopy:
				if !in.Operands[0].Shape.IsArray() || !in.Operands[0].Shape.SameDims(res) {
					continue
				}
				next = hlo.Instruction{Opcode: hlo.OpCopy, Operands: in.Operands[:1]}
			case ccGEMM:
				if len(in.Operands) < 2 {
					continue
				}
				l, r := in.Operands[0].Shape, in.Operands[1].Shape
				dd, ok := gemmDims(in, l.Rank(), r.Rank())
				if !ok || !l.IsArray() || !r.IsArray() {
					continue
				}
				next = hlo.Instruction{Opcode: hlo.OpDot, Operands: in.Operands[:2], Dot: dd}
			case ccConv:
				if len(in.Operands) < 2 || in.Conv == nil || in.Window == nil {
					continue
				}
				next = hlo.Instruction{Opcode: hlo.OpConvolution, Operands: in.Operands[:2], Conv: in.Conv, Window: in.Window,
					FeatureGroupCount: in.FeatureGroupCount, BatchGroupCount: in.BatchGroupCount}
			}
			next.Name, next.Shape, next.Metadata = in.Name, res.Clone(), in.Metadata
			got, err := hlo.InferShape(&next)
			if err != nil || !got.SameDims(res) {
				continue
			}
			next.Shape = res.Clone()
			*in = next
			for _, g := range gtes {
				// get-tuple-element(x, 0) of the old tuple is x itself now.
				g.Opcode, g.Operands, g.Index = hlo.OpBitcast, []*hlo.Instruction{in}, 0
			}
		}
	}
}

// inlineCalls inlines every call instruction (XLA's CallInliner) when the module has any.
func inlineCalls(m *hlo.Module) error {
	has := false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpCall && in.Calls != nil && !in.Calls.IsFusion {
				has = true
			}
		}
	}
	if !has {
		return nil
	}
	p, err := opt.Lookup("call-inliner")
	if err != nil {
		return err
	}
	if _, err := opt.Run(m, p); err != nil {
		return fmt.Errorf("inlining calls: %w", err)
	}
	return nil
}

// branchComputations returns the branches of a conditional in branch-index order
// (true_computation first for a predicate).
func branchComputations(m *hlo.Module, in *hlo.Instruction) ([]*hlo.Computation, error) {
	var names []string
	if v, ok := in.ExtraAttr("branch_computations"); ok {
		v = strings.TrimSpace(v)
		v = strings.TrimSuffix(strings.TrimPrefix(v, "{"), "}")
		for _, n := range strings.Split(v, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	} else {
		t, ok1 := in.ExtraAttr("true_computation")
		f, ok2 := in.ExtraAttr("false_computation")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("conditional %s: no branch_computations nor true_computation/false_computation", in.Name)
		}
		names = []string{t, f}
	}
	var out []*hlo.Computation
	for _, n := range names {
		n = strings.TrimPrefix(strings.TrimSpace(n), "%")
		c := m.Computation(n)
		if c == nil {
			return nil, fmt.Errorf("conditional %s: branch computation %q not found", in.Name, n)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("conditional %s: no branches", in.Name)
	}
	return out, nil
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
		n, ok := inductionTrips(w, root)
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
		if k, ok := inductionTrips(w, c); ok && (!found || k < n) {
			n, found = k, true
		}
	}
	if !found {
		return 0, "", false
	}
	return n, "bound", true
}

// inductionTrips is the trip count that the compare cmp of w's condition gives by
// itself (see TripCount).
func inductionTrips(w *hlo.Instruction, cmp *hlo.Instruction) (n int64, ok bool) {
	if cmp.Opcode != hlo.OpCompare || len(cmp.Operands) != 2 {
		return 0, false
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
		return 0, false
	}
	i := iv.Index
	init := peel(w.Operands[0])
	if init.Opcode != hlo.OpTuple || i >= len(init.Operands) {
		return 0, false
	}
	start, ok := intConstant(init.Operands[i])
	if !ok {
		return 0, false
	}
	root := w.Body.Root
	if root.Opcode != hlo.OpTuple || i >= len(root.Operands) {
		return 0, false
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
		return 0, false
	}
	d := bound - start
	if (bound >= start) != (d >= 0) { // the difference overflows int64
		return 0, false
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
		return 0, false
	}
	return max(n, 0), true
}

func floorDiv64(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func ceilDiv64(a, b int64) int64 { return -floorDiv64(-a, b) }

// flowComputations lists the computations the program runs as control flow: the entry
// first, then, in the order met, the conditions and bodies of while loops and the
// branches of conditionals, recursively. A computation reached twice is listed once.
func flowComputations(m *hlo.Module) ([]*hlo.Computation, error) {
	seen := map[*hlo.Computation]bool{m.Entry: true}
	out := []*hlo.Computation{m.Entry}
	for i := 0; i < len(out); i++ {
		for _, in := range out[i].Instructions {
			var callees []*hlo.Computation
			switch in.Opcode {
			case hlo.OpWhile:
				if in.Condition == nil || in.Body == nil {
					return nil, fmt.Errorf("while %s has no condition or body", in.Name)
				}
				callees = []*hlo.Computation{in.Condition, in.Body}
			case hlo.OpConditional:
				bs, err := branchComputations(m, in)
				if err != nil {
					return nil, err
				}
				callees = bs
			}
			for _, c := range callees {
				if !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out, nil
}

// InlineFusions replaces the fusion instructions inside computation c of m (at every
// depth) by the instructions of their fused computations, as unfuse does for flow
// computations: a kernel dumped by XLA whose fused computation calls nested fusions
// (bitcast or loop fusions inside an output fusion) becomes one flat computation that
// cost.Analyze can classify. It edits m.
func InlineFusions(m *hlo.Module, c *hlo.Computation) {
	for slices.ContainsFunc(c.Instructions, func(in *hlo.Instruction) bool { return in.Opcode == hlo.OpFusion && in.Calls != nil }) {
		unfuse(m, []*hlo.Computation{c})
	}
}

// unfuse replaces the fusion instructions already in the flow computations (a module
// dumped after XLA's own fusion) by the instructions of their fused computations, so
// that the fusion pass decides the kernels as it does for any module. Inlined copies are
// named "<fusion>.<instruction>" (made unique in the module).
func unfuse(m *hlo.Module, flow []*hlo.Computation) {
	names := map[string]bool{}
	has := false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			names[in.Name] = true
		}
	}
	for _, c := range flow {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpFusion && in.Calls != nil {
				has = true
			}
		}
	}
	if !has {
		return
	}
	fresh := func(base string) string {
		n := base
		for i := 1; names[n]; i++ {
			n = fmt.Sprintf("%s.%d", base, i)
		}
		names[n] = true
		return n
	}
	for _, c := range flow {
		repl := map[*hlo.Instruction]*hlo.Instruction{}
		var out []*hlo.Instruction
		for _, in := range c.Instructions {
			for j, op := range in.Operands {
				if r, ok := repl[op]; ok {
					in.Operands[j] = r
				}
			}
			if in.Opcode != hlo.OpFusion || in.Calls == nil {
				out = append(out, in)
				continue
			}
			vals := map[*hlo.Instruction]*hlo.Instruction{}
			for _, x := range in.Calls.Instructions {
				if x.Opcode == hlo.OpParameter && x.ParamNum >= 0 && x.ParamNum < len(in.Operands) {
					vals[x] = in.Operands[x.ParamNum]
					continue
				}
				k := x.CloneShallow()
				k.Name = fresh(in.Name + "." + x.Name)
				for j, op := range x.Operands {
					k.Operands[j] = vals[op]
				}
				vals[x] = k
				out = append(out, k)
			}
			root := vals[in.Calls.Root]
			root.Shape = in.Shape.Clone()
			repl[in] = root
			if c.Root == in {
				c.Root = root
			}
		}
		c.Instructions = out
	}
	// Drop the fused computations nothing calls any more.
	used := map[*hlo.Computation]bool{}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			for _, cc := range in.CalledComputations() {
				used[cc] = true
			}
		}
	}
	var keep []*hlo.Computation
	for _, c := range m.Computations {
		if !c.IsFusion || used[c] {
			keep = append(keep, c)
		}
	}
	m.Computations = keep
}
