// Package features turns compiled kernels into the tensors a learned cost model reads: a
// graph per kernel (node opcodes, node features, operand→user edges), kernel features, and
// one feature vector per configuration (tile and flags). Every width and name is described
// here, in one place, and versioned: SchemaVersion changes whenever a feature is added,
// removed or redefined, and datasets and checkpoints record it.
package features

import (
	"fmt"
	"sync"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// SchemaVersion is the version of the feature schema. Version 2 added every logical
// dimension modulo 8 and 128 to the node features; version 3 removed them again (the
// features are version 1's): they let the model memorize shapes, and a fusion model's
// MAPE on held-out programs went from 9% to 46% (scripts/quality.sh). Padding is described
// by the physical minor dimension modulo 128 and the second-minor modulo 8, the two the
// (8,128) tiling pads. Version 4 appended the rest of XLA's opcode list to the vocabulary
// (collectives, async pairs, transfers, batch norm, linear algebra: they were <unk>) and a
// node feature for bounded dynamic dimensions (f32[<=N], sized at the bound). Version 5:
// a GEMM kernel's M and N follow the MXU's orientation (the output's minor dimension on
// the columns, cost.KernelInfo.ColsDim and DotSwapped, tpusim-1.3), so the kernel
// features' M and N of reoriented dots and convolutions changed meaning. Version 6: the
// kernel features in_bytes_log and in_padded_log count the bytes the kernel reads
// (cost.KernelInfo.ReadBytes), not the sizes of its operands: a gathered embedding table
// (RoleGather) counts the rows it gathers, an operand updated in place (RoleAliased)
// nothing. Gather kernels of the same ~2.7 µs ranged from 9 to 25 in in_bytes_log with
// the size of their tables, so a held-out program with a bigger table extrapolated (issue
// 20: dlrm_mlperf_b16 at 4,020% in a quality run of 20-epoch models; docs/training.md).
// Version 7 added the kernel feature mxu_pad_log, the MXU's padded work per useful
// multiply-add of a GEMM kernel (K and N/Groups padded to the 128-wide array; see
// mxuPadLog), before the iteration-space features.
const SchemaVersion = 7

// MaxRank is the rank shapes are padded to in node features.
const MaxRank = 6

// vocabulary is the opcode vocabulary, in a frozen order. Id 0 is
// "<unk>" for opcodes this version does not know. New opcodes are appended at the end
// (never inserted), so ids never shift.
var vocabulary = [...]string{
	"<unk>",
	"parameter", "constant", "iota", "abs", "negate", "sign", "not", "floor", "ceil", "round-nearest-afz",
	"round-nearest-even", "convert", "bitcast-convert", "copy", "is-finite", "popcnt", "real", "imag", "add",
	"subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and", "or", "xor", "shift-left",
	"shift-right-arithmetic", "shift-right-logical", "compare", "select", "clamp", "exponential",
	"exponential-minus-one", "log", "log-plus-one", "sqrt", "rsqrt", "cbrt", "tanh", "logistic", "sine",
	"cosine", "tan", "erf", "power", "atan2", "dot", "convolution", "reduce", "reduce-window",
	"select-and-scatter", "broadcast", "reshape", "transpose", "bitcast", "slice", "concatenate", "pad",
	"reverse", "gather", "scatter", "dynamic-slice", "dynamic-update-slice", "tuple", "get-tuple-element",
	"fusion", "call", "while", "conditional", "sort", "custom-call", "rng", "rng-bit-generator", "all-reduce",
	"after-all",
	// Version 4: the rest of XLA's opcode list (collectives, async pairs, transfers,
	// batch norm, linear algebra, ...), in the order hlo appended them.
	"acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh", "count-leading-zeros",
	"reduce-precision", "complex", "mulhi", "stochastic-convert", "add-dependency", "domain",
	"opt-barrier", "get-dimension-size", "set-dimension-size", "dynamic-reshape", "copy-start",
	"copy-done", "all-gather", "all-gather-start", "all-gather-done", "all-reduce-start",
	"all-reduce-done", "all-to-all", "ragged-all-to-all", "reduce-scatter", "collective-broadcast",
	"collective-permute", "collective-permute-start", "collective-permute-done", "collective-reduce",
	"async-start", "async-update", "async-done", "send", "send-done", "recv", "recv-done", "infeed",
	"outfeed", "partition-id", "replica-id", "batch-norm-training", "batch-norm-inference",
	"batch-norm-grad", "cholesky", "triangular-solve", "fft", "topk", "rng-get-and-update-state",
	"map", "ragged-dot", "scaled-dot", "scan", "shuffle",
}

// Vocabulary returns the opcode names by id (a copy).
func Vocabulary() []string { return append([]string(nil), vocabulary[:]...) }

// OpcodeID returns the vocabulary id of op (0 if unknown).
func OpcodeID(op hlo.Opcode) int32 {
	name := op.String()
	for i, n := range vocabulary {
		if n == name {
			return int32(i)
		}
	}
	return 0
}

// opcodeTable maps every opcode (a uint8) to its vocabulary id. It is computed once and
// never written after: a constant, not state.
var opcodeTable = sync.OnceValue(func() *[256]int32 {
	var t [256]int32
	for _, op := range hlo.AllOpcodes() {
		t[op] = OpcodeID(op)
	}
	return &t
})

// opcodeIDs returns the opcode → id table for call sites that need many lookups.
func opcodeIDs() *[256]int32 { return opcodeTable() }

// Schema describes the feature vectors: their names, in order (the widths are the
// lengths).
type Schema struct {
	Version int      `json:"version"`
	Vocab   []string `json:"vocab"`
	Node    []string `json:"node"`
	Kernel  []string `json:"kernel"`
	Config  []string `json:"config"`
}

// CurrentSchema returns the schema this package produces.
func CurrentSchema() Schema {
	return Schema{Version: SchemaVersion, Vocab: Vocabulary(), Node: nodeNames(), Kernel: kernelNames(), Config: configNames()}
}

// Widths of the feature vectors (TestWidths checks them against the name lists).
const (
	NodeWidth   = 75
	KernelWidth = 35
	ConfigWidth = 31
)

// ConfigSet names which configuration features a model reads. The stored vectors (in
// datasets, from Config) always hold every feature; a set is a prefix of them.
type ConfigSet string

// The configuration feature sets.
const (
	// ConfigPaper is what the MLSys 2021 model had: the raw tile (per tiled dimension its
	// log2 size, its size relative to the dimension and the blocks along it — arithmetic
	// on the tile and the kernel's shape) and the raw flags. Nothing from the cost
	// package's plan, which on our simulator is close to the answer and on real hardware
	// nobody has.
	ConfigPaper ConfigSet = "paper"
	// ConfigPlan adds what the tile implies statically (the plan: steps, bytes per step,
	// VMEM footprint, MXU passes, vector work, edge waste).
	ConfigPlan ConfigSet = "plan"
	// ConfigTiling is the paper's set and features derived from it and the kernel's
	// iteration space by arithmetic on the (8,128) tiling (TilingFeatures): the blocks in
	// all, whether the kernel runs in one block (no overlap of DMA and compute), and per
	// tiled dimension the tile's size against the dimension padded to its alignment and
	// the waste beyond that padding. Nothing from the cost package's plan.
	ConfigTiling ConfigSet = "tiling"
)

// PaperConfigWidth is the width of ConfigPaper: 3 tiled dimensions × 3 + 3 flags.
const PaperConfigWidth = 12

// TilingWidth is the number of features TilingFeatures derives.
const TilingWidth = 2 + 3*2

// ConfigSets lists the sets, the default first.
func ConfigSets() []ConfigSet { return []ConfigSet{ConfigPaper, ConfigPlan, ConfigTiling} }

// ParseConfigSet returns the set named s.
func ParseConfigSet(s string) (ConfigSet, error) {
	for _, c := range ConfigSets() {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown feature set %q (want paper, plan or tiling)", s)
}

// Width is the number of configuration features of the set (0 for an unknown set).
func (c ConfigSet) Width() int {
	switch c {
	case ConfigPaper:
		return PaperConfigWidth
	case ConfigPlan:
		return ConfigWidth
	case ConfigTiling:
		return PaperConfigWidth + TilingWidth
	}
	return 0
}

// Stored is how many of the stored config features the set reads (a prefix); Derived
// reports whether it appends TilingFeatures.
func (c ConfigSet) Stored() int {
	if c == ConfigTiling {
		return PaperConfigWidth
	}
	return c.Width()
}

// Derived reports whether the set appends TilingFeatures to its stored prefix.
func (c ConfigSet) Derived() bool { return c == ConfigTiling }

// Names lists the set's feature names (a prefix of the schema's Config names, then the
// derived ones).
func (c ConfigSet) Names() []string {
	n := configNames()[:c.Stored()]
	if c.Derived() {
		n = append(n, tilingNames()...)
	}
	return n
}
