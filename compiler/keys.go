package compiler

import (
	"encoding/binary"
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// hasher accumulates a structural description (varint-encoded) and hashes it with
// 64-bit FNV-1a in one pass at the end.
type hasher struct {
	buf []byte
}

// newHasher returns a hasher from a pool; sum returns it.
func newHasher() *hasher {
	h := hasherPool.Get().(*hasher)
	h.buf = h.buf[:0]
	return h
}

var hasherPool = sync.Pool{New: func() any { return &hasher{buf: make([]byte, 0, 256)} }}

func (h *hasher) str(s string) {
	h.int(len(s))
	h.buf = append(h.buf, s...)
}

func (h *hasher) int(x int) {
	h.buf = binary.AppendVarint(h.buf, int64(x))
}

func (h *hasher) ints(xs []int) {
	h.int(len(xs))
	for _, x := range xs {
		h.int(x)
	}
}

func (h *hasher) shape(s hlo.Shape, layouts bool) {
	h.int(int(s.Elem))
	if s.IsTuple() {
		h.int(len(s.Tuple))
		for _, e := range s.Tuple {
			h.shape(e, layouts)
		}
		return
	}
	h.ints(s.Dims)
	if layouts {
		h.ints(s.LayoutOrDefault().MinorToMajor)
	}
}

// attrs hashes the attributes that change what an instruction computes.
func (h *hasher) attrs(in *hlo.Instruction) {
	h.int(int(in.Opcode))
	h.ints(in.Dimensions)
	h.int(in.Index)
	for _, s := range in.Slice {
		h.ints([]int{s.Start, s.Limit, s.Stride})
	}
	for _, p := range in.Padding {
		h.ints([]int{p.Lo, p.Hi, p.Interior})
	}
	if in.Window != nil {
		for _, w := range in.Window.Dims {
			h.ints([]int{w.Size, w.Stride, w.PadLo, w.PadHi, w.LhsDilate, w.RhsDilate})
		}
	}
	if in.Conv != nil {
		c := in.Conv
		h.ints([]int{c.InputBatch, c.InputFeature, c.KernelInput, c.KernelOutput, c.OutputBatch, c.OutputFeature})
		h.ints(c.InputSpatial)
		h.ints(c.KernelSpatial)
		h.ints(c.OutputSpatial)
	}
	h.int(in.FeatureGroupCount)
	h.int(in.BatchGroupCount)
	if in.Dot != nil {
		h.ints(in.Dot.LhsBatch)
		h.ints(in.Dot.LhsContracting)
		h.ints(in.Dot.RhsBatch)
		h.ints(in.Dot.RhsContracting)
	}
	h.str(in.Direction)
	if in.ToApply != nil {
		// Reducers are identified by their root op.
		h.int(int(in.ToApply.Root.Opcode))
	}
	if in.Opcode == hlo.OpConstant && in.Shape.Rank() == 0 {
		h.str(in.Literal)
	}
	for _, a := range in.Extra {
		if a.Key == "tile" || a.Key == "codegen_flags" {
			continue
		}
		h.str(a.Key)
		h.str(a.Value)
	}
}

// sum hashes what was written and returns the hasher to the pool (do not use it after).
func (h *hasher) sum() string {
	f := fnv.New64a()
	f.Write(h.buf)
	var b [8]byte
	s := hex.EncodeToString(f.Sum(b[:0]))
	hasherPool.Put(h)
	return s
}

// NodeKey is the stable structural hash of one instruction in context-free form: its
// opcode, attributes, result shape and operand shapes, without layouts and names. Two
// identical layers in different models share a key.
func NodeKey(in *hlo.Instruction) string {
	h := newHasher()
	h.str("node")
	h.attrs(in)
	h.shape(in.Shape, false)
	h.int(len(in.Operands))
	for _, op := range in.Operands {
		h.shape(op.Shape, false)
	}
	return h.sum()
}

// EdgeKey is the structural hash of a producer -> consumer edge (the consumer's operand
// number i), built from both node keys and their layouts.
func EdgeKey(producer, consumer *hlo.Instruction, i int) string {
	h := newHasher()
	h.str("edge")
	h.attrs(producer)
	h.shape(producer.Shape, true)
	h.attrs(consumer)
	h.shape(consumer.Shape, true)
	h.int(i)
	for _, op := range consumer.Operands {
		h.shape(op.Shape, true)
	}
	return h.sum()
}

// KernelKey is the structural hash of a fused computation: every instruction's opcode,
// attributes and shape with its layout, and the wiring between them by position; names
// are ignored. Identical kernels in different programs share a key.
func KernelKey(c *hlo.Computation) string {
	h := newHasher()
	h.str("kernel")
	pos := make(map[*hlo.Instruction]int, len(c.Instructions))
	for i, in := range c.Instructions {
		pos[in] = i
		h.attrs(in)
		h.shape(in.Shape, true)
		h.int(in.ParamNum)
		h.int(len(in.Operands))
		for _, op := range in.Operands {
			if p, ok := pos[op]; ok {
				h.int(p)
			} else {
				h.int(-1)
			}
		}
	}
	h.int(pos[c.Root])
	return h.sum()
}

// EdgeName is the config name of the edge producer -> consumer.
func EdgeName(producer, consumer *hlo.Instruction) string {
	return producer.Name + "->" + consumer.Name
}

func itoa(i int) string { return strconv.Itoa(i) }
