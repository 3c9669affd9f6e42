// Package hlo is tpucost's intermediate representation: an XLA-HLO-like module of
// computations of instructions, with shapes and physical layouts, an op table, a parser and
// printer for a real subset of XLA's HLO text format, a builder with shape inference, and a
// verifier. It knows nothing about any hardware.
package hlo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Module is a set of computations, one of which is the entry.
type Module struct {
	Name string
	// File is the path the module was parsed from, and Line, Col the position of its
	// header (1-based; "" and 0 for a module built in memory). Errors found after import
	// name it (Module.Wrap). They are not part of the module's text or of ModulesEqual.
	File      string
	Line, Col int
	// Attrs are the header attributes after the name ("is_scheduled=true", ...), kept
	// verbatim in order for printing.
	Attrs        []Attr
	Computations []*Computation // in definition order; callees before callers
	Entry        *Computation
	// StackFrames is the stack-frame index JAX writes after the header (nil if none);
	// metadata's stack_frame_id refers to its StackFrames, 1-based.
	StackFrames *StackFrameIndex
}

// StackFrameIndex is XLA's StackFrameIndexProto: flat tables whose ids are 1-based
// positions.
type StackFrameIndex struct {
	FileNames     []string
	FunctionNames []string
	FileLocations []FileLocation
	StackFrames   []StackFrame
}

// FileLocation is one source position of the stack-frame index.
type FileLocation struct {
	FileNameID, FunctionNameID, Line, EndLine, Column, EndColumn int
}

// StackFrame is one frame: a file location and its parent frame (0 for none).
type StackFrame struct{ FileLocationID, ParentFrameID int }

// Computation is a named list of instructions in a valid (topological) order.
type Computation struct {
	Name         string
	Instructions []*Instruction
	Root         *Instruction
	// IsFusion marks a computation called by a fusion instruction.
	IsFusion bool
	// Attrs are the attributes written after the closing brace
	// ("}, execution_thread="t""), kept verbatim.
	Attrs []Attr
}

// Attr is a raw attribute kept verbatim ("offset_dims={1}").
type Attr struct{ Key, Value string }

// SliceDim is one dimension of a slice attribute: [start:limit:stride].
type SliceDim struct{ Start, Limit, Stride int }

// PadDim is one dimension of a pad op's padding: low_high_interior.
type PadDim struct{ Lo, Hi, Interior int }

// WindowDim is one dimension of a convolution or reduce-window window.
type WindowDim struct {
	Size, Stride, PadLo, PadHi, LhsDilate, RhsDilate int
	Reversal                                         bool
}

// Window is a window attribute; an empty window has no dimensions.
type Window struct{ Dims []WindowDim }

// DotDims are a dot's dimension numbers.
type DotDims struct {
	LhsBatch, LhsContracting, RhsBatch, RhsContracting []int
}

// ConvDims are a convolution's dimension numbers, parsed from dim_labels such as
// "b01f_01io->b01f": which dimension of each array is batch, feature and each spatial dim.
type ConvDims struct {
	InputBatch, InputFeature   int
	InputSpatial               []int
	KernelInput, KernelOutput  int
	KernelSpatial              []int
	OutputBatch, OutputFeature int
	OutputSpatial              []int
}

// Instruction is one HLO instruction. The typed attribute fields are the ones passes and
// cost analysis read; Extra keeps every other attribute verbatim so printing round-trips.
type Instruction struct {
	Name     string
	Opcode   Opcode
	Shape    Shape
	Operands []*Instruction
	// Line, Col are the 1-based position of the instruction's definition in Module.File
	// (0 when built in memory or made by a pass); clones keep them. See At.
	Line, Col int

	// Attributes (zero when absent).
	ParamNum          int    // parameter(N)
	Literal           string // constant payload as written: "1", "{1, 2}", "{...}"
	Dimensions        []int  // dimensions={...}: broadcast, reduce, transpose, concatenate, reverse, iota(iota_dimension goes in Dimensions[0])
	HasDimensions     bool   // Dimensions was written (distinguishes "dimensions={}" from absent)
	Index             int    // get-tuple-element index
	Slice             []SliceDim
	Padding           []PadDim // pad op
	Window            *Window
	Conv              *ConvDims
	FeatureGroupCount int // 0 means absent (1)
	BatchGroupCount   int
	Dot               *DotDims
	Direction         string // compare
	FusionKind        string // kLoop, kInput, kOutput
	ToApply           *Computation
	Calls             *Computation // fusion, call
	Condition, Body   *Computation // while
	Metadata          string       // raw text inside metadata={...}
	// Sharding is the sharding= attribute (nil when absent): how the SPMD partitioner
	// splits the value over devices (see sharding.go). Shared by clones: never mutated.
	Sharding *Sharding
	Extra    []Attr // all other attributes, in order

	// ID is the instruction's index in its computation's Instructions after Renumber.
	ID int
}

// Info returns the op-table row of the instruction's opcode.
func (in *Instruction) Info() OpInfo { return in.Opcode.Info() }

// Operand returns the i-th operand.
func (in *Instruction) Operand(i int) *Instruction { return in.Operands[i] }

// ExtraAttr returns the raw value of an attribute kept in Extra.
func (in *Instruction) ExtraAttr(key string) (string, bool) {
	for _, a := range in.Extra {
		if a.Key == key {
			return a.Value, true
		}
	}
	return "", false
}

// IntSetAttr returns the integer-set attribute key of in ("{1,2}", "{}": IntSet's form)
// as integers; ok is false when in has no such attribute or it is not an integer set.
func (in *Instruction) IntSetAttr(key string) (xs []int, ok bool) {
	v, has := in.ExtraAttr(key)
	if !has {
		return nil, false
	}
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return nil, false
	}
	xs = []int{}
	if v = strings.TrimSpace(v[1 : len(v)-1]); v == "" {
		return xs, true
	}
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, false
		}
		xs = append(xs, x)
	}
	return xs, true
}

// GroupCount returns the feature group count (1 when absent).
func (in *Instruction) GroupCount() int {
	if in.FeatureGroupCount <= 0 {
		return 1
	}
	return in.FeatureGroupCount
}

// CalledComputations lists the computations this instruction calls.
func (in *Instruction) CalledComputations() []*Computation {
	var out []*Computation
	for _, c := range []*Computation{in.ToApply, in.Calls, in.Condition, in.Body} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// String is a short description for error messages: "%name = f32[2]{0} add".
func (in *Instruction) String() string {
	return fmt.Sprintf("%%%s = %s %s", in.Name, in.Shape, in.Opcode)
}

// Renumber sets each instruction's ID to its index in c.Instructions.
func (c *Computation) Renumber() {
	for i, in := range c.Instructions {
		in.ID = i
	}
}

// Users returns, for each instruction (by ID after Renumber), the instructions that use
// it, each user listed once, in instruction order. It renumbers c.
func (c *Computation) Users() [][]*Instruction {
	c.Renumber()
	users := make([][]*Instruction, len(c.Instructions))
	for _, in := range c.Instructions {
		for j, op := range in.Operands {
			dup := false
			for _, prev := range in.Operands[:j] {
				if prev == op {
					dup = true
					break
				}
			}
			if !dup && op.ID < len(users) && c.Instructions[op.ID] == op {
				users[op.ID] = append(users[op.ID], in)
			}
		}
	}
	return users
}

// Parameters returns the parameter instructions ordered by parameter number.
func (c *Computation) Parameters() []*Instruction {
	var ps []*Instruction
	for _, in := range c.Instructions {
		if in.Opcode == OpParameter {
			ps = append(ps, in)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].ParamNum < ps[j].ParamNum })
	return ps
}

// Lookup returns the instruction named name, or nil.
func (c *Computation) Lookup(name string) *Instruction {
	for _, in := range c.Instructions {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// Computation returns the computation named name, or nil.
func (m *Module) Computation(name string) *Computation {
	for _, c := range m.Computations {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// InstructionCount is the number of instructions in all computations.
func (m *Module) InstructionCount() int {
	n := 0
	for _, c := range m.Computations {
		n += len(c.Instructions)
	}
	return n
}

// Clone returns a deep copy of m: new computations and instructions with the same names,
// shapes and attributes, wired to each other.
func (m *Module) Clone() *Module {
	nm := &Module{Name: m.Name, File: m.File, Line: m.Line, Col: m.Col, Attrs: append([]Attr(nil), m.Attrs...)}
	if sf := m.StackFrames; sf != nil {
		nm.StackFrames = &StackFrameIndex{
			FileNames:     append([]string(nil), sf.FileNames...),
			FunctionNames: append([]string(nil), sf.FunctionNames...),
			FileLocations: append([]FileLocation(nil), sf.FileLocations...),
			StackFrames:   append([]StackFrame(nil), sf.StackFrames...),
		}
	}
	cmap := make(map[*Computation]*Computation, len(m.Computations))
	for _, c := range m.Computations {
		nc := c.cloneWith(cmap)
		cmap[c] = nc
		nm.Computations = append(nm.Computations, nc)
	}
	nm.Entry = cmap[m.Entry]
	return nm
}

// cloneWith clones c, mapping called computations through cmap (callees must already be
// in it; unmapped callees are kept as they are).
func (c *Computation) cloneWith(cmap map[*Computation]*Computation) *Computation {
	nc := &Computation{Name: c.Name, IsFusion: c.IsFusion, Attrs: append([]Attr(nil), c.Attrs...),
		Instructions: make([]*Instruction, len(c.Instructions))}
	imap := make(map[*Instruction]*Instruction, len(c.Instructions))
	for i, in := range c.Instructions {
		ni := in.CloneShallow()
		for j, op := range in.Operands {
			ni.Operands[j] = imap[op]
		}
		ni.ToApply = mapComp(cmap, in.ToApply)
		ni.Calls = mapComp(cmap, in.Calls)
		ni.Condition = mapComp(cmap, in.Condition)
		ni.Body = mapComp(cmap, in.Body)
		imap[in] = ni
		nc.Instructions[i] = ni
	}
	nc.Root = imap[c.Root]
	return nc
}

func mapComp(cmap map[*Computation]*Computation, c *Computation) *Computation {
	if c == nil {
		return nil
	}
	if n, ok := cmap[c]; ok {
		return n
	}
	return c
}

// CloneShallow copies the instruction and its attributes; the operand slice is copied but
// still points at the original operands.
func (in *Instruction) CloneShallow() *Instruction {
	ni := *in
	ni.Shape = in.Shape.Clone()
	ni.Operands = append([]*Instruction(nil), in.Operands...)
	ni.Dimensions = append([]int(nil), in.Dimensions...)
	ni.Slice = append([]SliceDim(nil), in.Slice...)
	ni.Padding = append([]PadDim(nil), in.Padding...)
	ni.Extra = append([]Attr(nil), in.Extra...)
	if in.Window != nil {
		w := Window{Dims: append([]WindowDim(nil), in.Window.Dims...)}
		ni.Window = &w
	}
	if in.Conv != nil {
		cd := *in.Conv
		cd.InputSpatial = append([]int(nil), cd.InputSpatial...)
		cd.KernelSpatial = append([]int(nil), cd.KernelSpatial...)
		cd.OutputSpatial = append([]int(nil), cd.OutputSpatial...)
		ni.Conv = &cd
	}
	if in.Dot != nil {
		dd := DotDims{
			LhsBatch: append([]int(nil), in.Dot.LhsBatch...), LhsContracting: append([]int(nil), in.Dot.LhsContracting...),
			RhsBatch: append([]int(nil), in.Dot.RhsBatch...), RhsContracting: append([]int(nil), in.Dot.RhsContracting...),
		}
		ni.Dot = &dd
	}
	return &ni
}
