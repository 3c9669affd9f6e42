package features

import (
	"math"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Module-graph node features: the one featurizer of the instructions of a whole HLO module,
// read by the rl tuning policy (tune: the module the fusion pass reads) and by the gym's
// pass-ordering agent (gym: unoptimized modules with loops, calls and tuples). Both build
// their graph (which instructions are nodes, which edges join them) with BuildModuleGraph,
// each under its EdgePolicy, and featurize every node here, so that the two read the same
// scalars computed one way.
//
// The cost models' featurizer (Kernel, OfKernel) is not this one and cannot be: it reads a
// fused kernel with its cost analysis on a target (per-node flops, bytes, padding, tiling
// and the kernel's features, NodeWidth columns), which a whole unoptimized module does not
// have. The two share the opcode vocabulary (OpcodeID) and the opcode categories.

// ModuleBlocks selects the optional column blocks of a module node's features. Every
// node has the opcode category one-hot and the size scalars; a consumer adds the blocks
// its model was built with (a checkpoint records the columns it read).
type ModuleBlocks struct {
	// Movers adds one column per data-movement opcode (ModuleMovers), after the
	// categories: fusing them is what most fusion decisions are about (tune's policy).
	Movers bool
	// Context adds, last, is_root, is_parameter, is_known_constant (a constant whose
	// literal the text spells out) and in_loop (ModuleNode.InLoop) (the gym's agent).
	Context bool
}

// ModuleMovers are the data-movement opcodes of ModuleBlocks.Movers, in column order.
func ModuleMovers() []hlo.Opcode {
	return []hlo.Opcode{hlo.OpBroadcast, hlo.OpReshape, hlo.OpTranspose, hlo.OpCopy, hlo.OpSlice, hlo.OpConcatenate}
}

// The widths of the column blocks of a module node's features (ModuleNodeNames).
const (
	ModuleCategoryWidth = int(hlo.CatOther) + 1 // opcode categories hlo.CatSource..hlo.CatOther
	ModuleMoverWidth    = 6                     // len(ModuleMovers())
	ModuleScalarWidth   = 5
	ModuleContextWidth  = 4
)

// ModuleNodeNames names the columns of a module node's features with blocks b, in order:
// the categories (cat_<category>), the movers (op_<opcode>) with b.Movers, the size
// scalars — elements_log = log2(1+elements)/32, bytes_log = log2(1+bytes)/40, rank =
// rank/6, operands_log = log2(1+operands)/4, users_log = log2(1+users)/4, of
// ModuleNode.Shape, the instruction's operands and ModuleNode.Users — then the context
// flags with b.Context.
func ModuleNodeNames(b ModuleBlocks) []string {
	var ns []string
	for c := range ModuleCategoryWidth {
		ns = append(ns, "cat_"+hlo.Category(c).String())
	}
	if b.Movers {
		for _, op := range ModuleMovers() {
			ns = append(ns, "op_"+op.String())
		}
	}
	ns = append(ns, "elements_log", "bytes_log", "rank", "operands_log", "users_log")
	if b.Context {
		ns = append(ns, "is_root", "is_parameter", "is_known_constant", "in_loop")
	}
	return ns
}

// ModuleNodeWidth is the number of columns with blocks b (len(ModuleNodeNames(b))): the
// category and scalar blocks, plus the mover and context blocks b selects.
func ModuleNodeWidth(b ModuleBlocks) int {
	w := ModuleCategoryWidth + ModuleScalarWidth
	if b.Movers {
		w += ModuleMoverWidth
	}
	if b.Context {
		w += ModuleContextWidth
	}
	return w
}

// ModuleNode is one node of a module graph as the featurizer reads it.
type ModuleNode struct {
	In *hlo.Instruction
	// Shape is the value whose size the node's elements, bytes and rank describe: the
	// instruction's shape, or a value the graph builder lets a tuple stand for (the gym
	// takes a tuple's first element; tune takes the tuple itself: 0 elements, the bytes
	// of all its elements, rank 0).
	Shape hlo.Shape
	Users int // the node's users in the graph (its out-edges)
	// Root and InLoop fill the context block: the root of its computation; in a while
	// condition or body at any depth.
	Root, InLoop bool
}

// ModuleNodeFeatures writes n's features with blocks b (ModuleNodeNames) into dst, which
// must be ModuleNodeWidth(b) long and zero.
func ModuleNodeFeatures(dst []float32, n ModuleNode, b ModuleBlocks) {
	in := n.In
	dst[int(in.Opcode.Category())] = 1
	o := ModuleCategoryWidth
	if b.Movers {
		for j, op := range ModuleMovers() {
			if in.Opcode == op {
				dst[o+j] = 1
			}
		}
		o += ModuleMoverWidth
	}
	dst[o] = float32(log1p2(float64(n.Shape.Elements())) / 32)
	dst[o+1] = float32(log1p2(float64(n.Shape.Bytes())) / 40)
	dst[o+2] = float32(n.Shape.Rank()) / 6
	dst[o+3] = float32(log1p2(float64(len(in.Operands))) / 4)
	dst[o+4] = float32(log1p2(float64(n.Users)) / 4)
	if b.Context {
		o += ModuleScalarWidth
		dst[o] = b2f(n.Root)
		dst[o+1] = b2f(in.Opcode == hlo.OpParameter)
		dst[o+2] = b2f(in.Opcode == hlo.OpConstant && in.Literal != "" && in.Literal != "{...}")
		dst[o+3] = b2f(n.InLoop)
	}
}

// log1p2 is log2(1 + x) in float64 for x >= 0 (0 below), the size scalars' transform.
func log1p2(x float64) float64 { return math.Log2(1 + math.Max(x, 0)) }
