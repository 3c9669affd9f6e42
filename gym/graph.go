package gym

import (
	"fmt"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/features"
)

// Graph is a module as the tensors a GraphSAGE encoder reads: node i has opcode id
// Opcodes[i] (features.Vocabulary's ids, stable across versions) and features
// NodeFeats[i*NodeWidth:(i+1)*NodeWidth]; edge j goes from node EdgeSrc[j] (a value) to
// node EdgeDst[j] (the node that reads it).
//
// The nodes are every instruction, parameters included, of the module's flow
// computations: the entry and, recursively, the computations its call and while
// instructions run (each computation once, in the order first reached) — the
// computations opt.OpCount counts. Edges are the operand → user edges inside each
// computation plus, for a call or while instruction, edges from the instruction's
// operands to the callee's parameters and from the callee's root to the instruction
// (for a while: to its condition and body parameters, and from the body's root). Reducers,
// comparators, fusion bodies and conditional branches are not nodes (their users are).
// This is the module graph of features.DataflowEdges (features.BuildModuleGraph).
//
// features.Kernel builds the graph of one fused kernel and needs its cost analysis,
// which whole unoptimized modules (loops, calls, tuples) do not have; the gym keeps the
// same opcode vocabulary with a small set of node features (NodeFeatureNames).
type Graph struct {
	Opcodes   []int32   `json:"opcodes"`
	NodeFeats []float32 `json:"node_feats"`
	EdgeSrc   []int32   `json:"edge_src"`
	EdgeDst   []int32   `json:"edge_dst"`
}

// Nodes is the number of nodes.
func (g *Graph) Nodes() int { return len(g.Opcodes) }

// nodeBlocks are the module-graph feature blocks of the gym's graphs: categories, size
// scalars and the context flags (features.ModuleNodeNames).
func nodeBlocks() features.ModuleBlocks { return features.ModuleBlocks{Context: true} }

// NodeWidth is the number of features per node (features.ModuleNodeWidth(nodeBlocks())):
// the opcode category one-hot, then log2(1+elements)/32, log2(1+bytes)/40, rank/6,
// log2(1+operands)/4, log2(1+users)/4 (elements, bytes and rank of a tuple's first
// element), is_root, is_parameter, is_known_constant (a constant whose literal the text
// spells out) and in_loop (the node is in a while condition or body, at any depth).
const NodeWidth = features.ModuleCategoryWidth + features.ModuleScalarWidth + features.ModuleContextWidth

// NodeFeatureNames names the node feature columns, in order.
func NodeFeatureNames() []string { return features.ModuleNodeNames(nodeBlocks()) }

// BuildGraph returns the graph tensors of m (see Graph): the module graph of
// features.DataflowEdges, featurized with the gym's blocks. It fails for a module without
// an entry computation or with a while loop that has no condition or body.
func BuildGraph(m *hlo.Module) (Graph, error) {
	mg, err := features.BuildModuleGraph(m, features.DataflowEdges())
	if err != nil {
		return Graph{}, fmt.Errorf("gym: %w", err)
	}
	n := len(mg.Nodes)
	g := Graph{NodeFeats: make([]float32, n*NodeWidth), EdgeSrc: mg.Src, EdgeDst: mg.Dst}
	for ci, c := range mg.Computations {
		for i := mg.Start[ci]; i < mg.Start[ci+1]; i++ {
			in := mg.Nodes[i]
			g.Opcodes = append(g.Opcodes, features.OpcodeID(in.Opcode))
			features.ModuleNodeFeatures(g.NodeFeats[int(i)*NodeWidth:(int(i)+1)*NodeWidth],
				features.ModuleNode{In: in, Shape: firstArray(in.Shape), Users: mg.OutDegree[i], Root: in == c.Root, InLoop: mg.InLoop[c]}, nodeBlocks())
		}
	}
	return g, nil
}

// firstArray is the value a node of shape s stands for in the size features: s, or for a
// tuple its first element (recursively; an empty tuple stays itself: no size).
func firstArray(s hlo.Shape) hlo.Shape {
	for s.IsTuple() && len(s.Tuple) > 0 {
		s = s.Tuple[0]
	}
	return s
}

// Histogram returns the op-count histogram of m by opcode: element i is the number of
// instructions with features.Vocabulary id i among those opt.OpCount counts (a call's
// callee at every call site, a while's condition and body once per while), so its sum is
// opt.OpCount(m).
func Histogram(m *hlo.Module) []int {
	h := make([]int, len(features.Vocabulary()))
	if m == nil || m.Entry == nil {
		return h
	}
	var count func(c *hlo.Computation, depth int)
	count = func(c *hlo.Computation, depth int) {
		if c == nil || depth > maxCallDepth {
			return
		}
		for _, in := range c.Instructions {
			if in.Opcode == hlo.OpParameter {
				continue
			}
			h[features.OpcodeID(in.Opcode)]++
			switch in.Opcode {
			case hlo.OpCall:
				if in.Calls != nil && !in.Calls.IsFusion {
					count(in.Calls, depth+1)
				}
			case hlo.OpWhile:
				count(in.Condition, depth+1)
				count(in.Body, depth+1)
			}
		}
	}
	count(m.Entry, 0)
	return h
}

// maxCallDepth guards Histogram against malformed recursive call graphs (the verifier
// rejects them; a verified module is far shallower).
const maxCallDepth = 64
