package hlo

import (
	"fmt"
	"strings"
)

// FlowOrder is the order in which FlowComputations lists the computations it reaches.
type FlowOrder int

const (
	// BreadthFirst lists the entry, then the computations its instructions run in the
	// order met, then theirs, and so on (the compiler's flow: kernel tables and
	// schedules follow it).
	BreadthFirst FlowOrder = iota
	// DepthFirst lists each computation before those it runs, descending into a callee
	// as soon as it is met (pre-order).
	DepthFirst
	// ModuleOrder lists the reached computations in the order of Module.Computations
	// (the simplification passes rewrite them in that order).
	ModuleOrder
)

// FlowOptions selects which computations count as control flow for FlowComputations.
// While loops' conditions and bodies are always followed.
type FlowOptions struct {
	// Calls follows call instructions into their callees (fusion computations are never
	// followed: a fusion is one op of the computation it is in).
	Calls bool
	// Branches follows conditionals into their branch computations (BranchComputations).
	Branches bool
	Order    FlowOrder
}

// Flow is the result of FlowComputations: the computations the module runs as control
// flow, each once, and which of them run inside a loop.
type Flow struct {
	Computations []*Computation
	// InLoop holds the computations reached through a while loop's condition or body, at
	// any depth.
	InLoop map[*Computation]bool
}

// FlowComputations lists the computations m runs as control flow: the entry and,
// recursively, the conditions and bodies of its while loops, and, as o selects, the
// callees of calls and the branches of conditionals, each once, in o.Order. It fails
// for a module without an entry, a while without a condition or body, and (with
// o.Branches) a conditional whose branches cannot be resolved.
func FlowComputations(m *Module, o FlowOptions) (Flow, error) {
	if m == nil || m.Entry == nil {
		return Flow{}, fmt.Errorf("module has no entry computation")
	}
	f := Flow{InLoop: map[*Computation]bool{}}
	seen := map[*Computation]bool{}
	// callees are the flow computations instruction in runs, with whether they loop.
	callees := func(in *Instruction) ([]*Computation, bool, error) {
		switch {
		case in.Opcode == OpWhile:
			if in.Condition == nil || in.Body == nil {
				return nil, false, fmt.Errorf("while %s has no condition or body", in.Name)
			}
			return []*Computation{in.Condition, in.Body}, true, nil
		case in.Opcode == OpCall && o.Calls && in.Calls != nil && !in.Calls.IsFusion:
			return []*Computation{in.Calls}, false, nil
		case in.Opcode == OpConditional && o.Branches:
			bs, err := BranchComputations(m, in)
			return bs, false, err
		}
		return nil, false, nil
	}
	// visit reaches c (inside a loop or not) and, depth-first, what it runs; a
	// computation reached again inside a loop is walked again to mark its callees.
	var visit func(c *Computation, loop bool) error
	visit = func(c *Computation, loop bool) error {
		if seen[c] && (!loop || f.InLoop[c]) {
			return nil
		}
		if !seen[c] {
			seen[c] = true
			f.Computations = append(f.Computations, c)
		}
		f.InLoop[c] = f.InLoop[c] || loop
		for _, in := range c.Instructions {
			cs, loops, err := callees(in)
			if err != nil {
				return err
			}
			for _, cc := range cs {
				if err := visit(cc, loop || loops); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(m.Entry, false); err != nil {
		return Flow{}, err
	}
	switch o.Order {
	case ModuleOrder:
		f.Computations = f.Computations[:0]
		for _, c := range m.Computations {
			if seen[c] {
				f.Computations = append(f.Computations, c)
			}
		}
	case BreadthFirst:
		// Every callee was resolved by the walk above, so this one cannot fail.
		bfs := []*Computation{m.Entry}
		listed := map[*Computation]bool{m.Entry: true}
		for i := 0; i < len(bfs); i++ {
			for _, in := range bfs[i].Instructions {
				cs, _, _ := callees(in)
				for _, cc := range cs {
					if !listed[cc] {
						listed[cc] = true
						bfs = append(bfs, cc)
					}
				}
			}
		}
		f.Computations = bfs
	}
	return f, nil
}

// BranchComputations returns the branches of conditional in, in branch-index order
// (true_computation first for a predicate), from its branch_computations attribute or
// its true_computation and false_computation attributes.
func BranchComputations(m *Module, in *Instruction) ([]*Computation, error) {
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
	var out []*Computation
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
