package features

import (
	"fmt"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// The module graph: the one builder of the graph of a whole HLO module (which
// instructions are nodes, which edges join them), used by the gym's observations, the rl
// tuning policy and the TpuGraphs layout import. Each consumer featurizes the nodes its
// own way (ModuleNodeFeatures with its blocks, or Kernel per computation for TpuGraphs)
// and differs from the others only in its EdgePolicy.

// GraphScope selects the computations whose instructions are nodes.
type GraphScope int

const (
	// ScopeModule: every computation of the module, in the module's order (fusion
	// bodies, reducers and branches included).
	ScopeModule GraphScope = iota
	// ScopeFlow: the entry and, recursively, the computations its call and while
	// instructions run, each once, in the order first reached depth-first
	// (hlo.FlowComputations with calls, depth first): the computations opt.OpCount
	// counts. Fusion bodies, reducers and conditional branches are not nodes.
	ScopeFlow
)

// CalleeField names the field of an instruction that calls a computation.
type CalleeField int

const (
	CalleeCalls     CalleeField = iota // Instruction.Calls: a fusion's or call's computation
	CalleeCondition                    // Instruction.Condition: a while's condition
	CalleeBody                         // Instruction.Body: a while's body
	CalleeToApply                      // Instruction.ToApply: a reducer, comparator or scatter combiner
)

// callee returns the computation in calls through f.
func (f CalleeField) callee(in *hlo.Instruction) *hlo.Computation {
	switch f {
	case CalleeCalls:
		return in.Calls
	case CalleeCondition:
		return in.Condition
	case CalleeBody:
		return in.Body
	case CalleeToApply:
		return in.ToApply
	}
	return nil
}

// CalleeEdges says what counts as an edge between an instruction and a computation it
// calls through Field, when that computation's instructions are nodes (a callee outside
// the scope has none).
type CalleeEdges struct {
	Field CalleeField
	// Opcode restricts the rule to instructions of one opcode; hlo.OpInvalid (the zero
	// value) applies it to every instruction with the field set.
	Opcode hlo.Opcode
	// Params adds an edge from the instruction's operand k to the callee's parameter k
	// (the data flowing in), in the callee's instruction order.
	Params bool
	// Result adds an edge from the callee's root to the instruction (the value flowing
	// out), after the Params edges.
	Result bool
}

// EdgePolicy is what a module graph's edges are. Every graph has an edge from each
// operand to its user within a computation (one per operand position: an operand used
// twice is two edges); Callees adds edges into and out of called computations, per
// instruction in the order listed.
type EdgePolicy struct {
	Scope   GraphScope
	Callees []CalleeEdges
	// CalleesLast puts every callee edge after every operand edge (each group in
	// computation and instruction order); otherwise an instruction's callee edges follow
	// its operand edges.
	CalleesLast bool
}

// OperandEdges is the policy of the rl tuning policy's encoder: every instruction of the
// module a node, operand -> user edges within computations only.
func OperandEdges() EdgePolicy { return EdgePolicy{Scope: ScopeModule} }

// DataflowEdges is the policy of the gym's observations: the flow computations (ScopeFlow)
// with the data flowing through calls and loops: a call's operands to its callee's
// parameters and the callee's root to the call; a while's operands to its condition's
// and its body's parameters and the body's root to the while.
func DataflowEdges() EdgePolicy {
	return EdgePolicy{Scope: ScopeFlow, Callees: []CalleeEdges{
		{Field: CalleeCalls, Opcode: hlo.OpCall, Params: true, Result: true},
		{Field: CalleeCondition, Opcode: hlo.OpWhile, Params: true},
		{Field: CalleeBody, Opcode: hlo.OpWhile, Params: true, Result: true},
	}}
}

// CalleeRootEdges is the policy of TpuGraphs' layout graphs (the layout import): every
// computation of the module, with an edge from a called computation's root to each
// instruction that calls it (a fusion or call, a while's body and condition, a
// reducer's caller), after all operand edges.
func CalleeRootEdges() EdgePolicy {
	return EdgePolicy{Scope: ScopeModule, CalleesLast: true, Callees: []CalleeEdges{
		{Field: CalleeCalls, Result: true},
		{Field: CalleeBody, Result: true},
		{Field: CalleeCondition, Result: true},
		{Field: CalleeToApply, Result: true},
	}}
}

// ModuleGraph is the graph of a module under an EdgePolicy: node i is Nodes[i]; the
// nodes of Computations[c] are Start[c] .. Start[c+1]-1, in instruction order; edge j
// goes from Src[j] (a value) to Dst[j] (the node that reads it).
type ModuleGraph struct {
	Computations []*hlo.Computation
	// InLoop holds the computations run inside a while loop's condition or body, at any
	// depth (ScopeFlow; nil for ScopeModule).
	InLoop   map[*hlo.Computation]bool
	Start    []int32
	Nodes    []*hlo.Instruction
	Index    map[*hlo.Instruction]int32
	Src, Dst []int32
	// OutDegree is the number of edges out of each node.
	OutDegree []int
}

// BuildModuleGraph returns the graph of m under policy p. It fails for a module without
// an entry computation, or (ScopeFlow) with a while loop that has no condition or body.
func BuildModuleGraph(m *hlo.Module, p EdgePolicy) (*ModuleGraph, error) {
	g := &ModuleGraph{Index: map[*hlo.Instruction]int32{}}
	switch p.Scope {
	case ScopeModule:
		if m == nil || m.Entry == nil {
			return nil, fmt.Errorf("module has no entry computation")
		}
		g.Computations = m.Computations
	case ScopeFlow:
		flow, err := hlo.FlowComputations(m, hlo.FlowOptions{Calls: true, Order: hlo.DepthFirst})
		if err != nil {
			return nil, err
		}
		g.Computations, g.InLoop = flow.Computations, flow.InLoop
	default:
		return nil, fmt.Errorf("module graph: unknown scope %d", p.Scope)
	}
	nodes := map[*hlo.Computation]bool{}
	for _, c := range g.Computations {
		nodes[c] = true
		g.Start = append(g.Start, int32(len(g.Nodes)))
		for _, in := range c.Instructions {
			g.Index[in] = int32(len(g.Nodes))
			g.Nodes = append(g.Nodes, in)
		}
	}
	g.Start = append(g.Start, int32(len(g.Nodes)))
	g.OutDegree = make([]int, len(g.Nodes))
	var calleeSrc, calleeDst []int32
	edge := func(s, d int32, callee bool) {
		if callee && p.CalleesLast {
			calleeSrc, calleeDst = append(calleeSrc, s), append(calleeDst, d)
		} else {
			g.Src, g.Dst = append(g.Src, s), append(g.Dst, d)
		}
		g.OutDegree[s]++
	}
	for _, c := range g.Computations {
		for _, in := range c.Instructions {
			d := g.Index[in]
			for _, op := range in.Operands {
				if s, ok := g.Index[op]; ok {
					edge(s, d, false)
				}
			}
			for _, r := range p.Callees {
				callee := r.Field.callee(in)
				if callee == nil || !nodes[callee] || r.Opcode != hlo.OpInvalid && in.Opcode != r.Opcode {
					continue
				}
				if r.Params {
					for _, q := range callee.Instructions {
						if q.Opcode == hlo.OpParameter && q.ParamNum >= 0 && q.ParamNum < len(in.Operands) {
							if s, ok := g.Index[in.Operands[q.ParamNum]]; ok {
								edge(s, g.Index[q], true)
							}
						}
					}
				}
				if r.Result && callee.Root != nil {
					if s, ok := g.Index[callee.Root]; ok {
						edge(s, d, true)
					}
				}
			}
		}
	}
	g.Src, g.Dst = append(g.Src, calleeSrc...), append(g.Dst, calleeDst...)
	return g, nil
}
