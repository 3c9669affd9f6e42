package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/compiler/spmd"
)

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
// and its scratch buffer) are rewritten when only element 0 is read. It reports whether
// it rewrote any.
func rewriteCustomCalls(comps []*hlo.Computation) (changed bool) {
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
			changed = true
			for _, g := range gtes {
				// get-tuple-element(x, 0) of the old tuple is x itself now.
				g.Opcode, g.Operands, g.Index = hlo.OpBitcast, []*hlo.Instruction{in}, 0
			}
		}
	}
	return changed
}

// runInlineCalls is the pass inline-calls: it inlines every call instruction (XLA's
// CallInliner, opt's call-inliner) when the module has any, so that the flow
// computations are the entry and what its loops and conditionals run.
func runInlineCalls(m *hlo.Module, _ *State) (bool, error) {
	has := false
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpCall && in.Calls != nil && !in.Calls.IsFusion {
				has = true
			}
		}
	}
	if !has {
		return false, nil
	}
	p, err := opt.Lookup("call-inliner")
	if err != nil {
		return false, err
	}
	return p.Run(m)
}

// runUnfuse is the pass unfuse: see unfuse.
func runUnfuse(m *hlo.Module, s *State) (bool, error) { return unfuse(m, s.Flow), nil }

// runRewriteCustomCalls is the pass rewrite-custom-calls: see rewriteCustomCalls.
func runRewriteCustomCalls(_ *hlo.Module, s *State) (bool, error) {
	return rewriteCustomCalls(s.Flow), nil
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
// that the fusion pass decides the kernels as it does for any module, and reports whether
// there were any. Inlined copies are named "<fusion>.<instruction>" (made unique in the
// module).
func unfuse(m *hlo.Module, flow []*hlo.Computation) (changed bool) {
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
		return false
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
	return true
}

// prepared is a module after the config-independent prefix of a pass list (prefixLen):
// calls inlined, the input's fusions unfused, library custom-calls rewritten,
// simplification passes run. It is read-only; Compile clones it.
type prepared struct {
	mod           *hlo.Module
	log           []PassRun
	before, after int // opt.OpCount around the simplification group
	partitions    int // devices the module was partitioned over (0: not partitioned)
	err           error
}

type prepKey struct {
	m      *hlo.Module
	passes string // prefixKey of the prefix
	check  bool
	parts  int // Options.Partitions
}

type prepOnce struct {
	once sync.Once
	p    *prepared
}

// prepare returns m after the config-independent prefix of a pass list, memoized in
// opts.Kernels by module identity, the prefix's pass names and opts.Check (the module
// must not be modified after it was compiled with a cache). A prefix with a pass one of
// hooks selects runs afresh, calling them, so that the hooks see it (a dump is written);
// the memoized prefix calls no hook.
func prepare(m *hlo.Module, opts Options, prefix []Pass, hooks []PassHook) *prepared {
	c := opts.Kernels
	if c == nil || hooksSelect(hooks, passNames(prefix)) {
		return prepareModule(m, opts, prefix, hooks)
	}
	k := prepKey{m, prefixKey(prefix), opts.Check, opts.Partitions}
	c.mu.Lock()
	if c.prep == nil {
		c.prep = map[prepKey]*prepOnce{}
	}
	e := c.prep[k]
	if e == nil {
		e = &prepOnce{}
		c.prep[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.p = prepareModule(m, opts, prefix, nil) })
	return e.p
}

// prefixKey names a config-independent prefix in the memo: its passes' names, a group's
// members and iteration cap in brackets.
func prefixKey(prefix []Pass) string {
	var b strings.Builder
	for _, p := range prefix {
		b.WriteString(p.Name)
		if p.Run == nil {
			fmt.Fprintf(&b, "[%s]*%d", prefixKey(p.Group), p.MaxIterations)
		}
		b.WriteByte(',')
	}
	return b.String()
}

// Release drops what c memoized about module m (its prepared forms): a caller that is
// done compiling m frees them. Kernel analyses stay (other modules share them).
func (c *KernelCache) Release(m *hlo.Module) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.prep {
		if k.m == m {
			delete(c.prep, k)
		}
	}
}

// prepareModule clones m and runs the config-independent prefix on it, on a State whose
// Options carry only Check (a prefix pass reads no other input; the store is empty and
// the config too), logging each run.
func prepareModule(m *hlo.Module, opts Options, prefix []Pass, hooks []PassHook) *prepared {
	mod, res, err := spmd.Partition(m, opts.Partitions)
	if err != nil {
		return &prepared{err: err}
	}
	parts := 0
	if mod == nil {
		mod = m.Clone()
	} else {
		parts = res.Partitions
	}
	s, err := newState(mod, NewConfig(), Options{Check: opts.Check, Store: nilStore{}})
	if err != nil {
		return &prepared{err: err}
	}
	r := newRunner(mod, s, opts, hooks)
	if _, err := r.run(prefix, 0); err != nil {
		return &prepared{err: err}
	}
	if !r.simplified {
		r.before = opt.OpCount(mod)
		r.after = r.before
	}
	return &prepared{mod: mod, log: r.log, before: r.before, after: r.after, partitions: parts}
}
