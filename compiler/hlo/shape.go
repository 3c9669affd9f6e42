package hlo

import (
	"fmt"
	"strconv"
	"strings"
)

// ElemType is an HLO primitive element type.
type ElemType uint8

// The element types this package understands. Invalid is the zero value.
const (
	Invalid ElemType = iota
	PRED
	S8
	S16
	S32
	S64
	U8
	U16
	U32
	U64
	F16
	BF16
	F32
	F64
	C64
	Token
	TupleType // the element type of a tuple shape
)

var elemNames = [...]string{
	Invalid: "invalid", PRED: "pred", S8: "s8", S16: "s16", S32: "s32", S64: "s64",
	U8: "u8", U16: "u16", U32: "u32", U64: "u64", F16: "f16", BF16: "bf16", F32: "f32",
	F64: "f64", C64: "c64", Token: "token", TupleType: "tuple",
}

var elemBits = [...]int{
	PRED: 8, S8: 8, S16: 16, S32: 32, S64: 64, U8: 8, U16: 16, U32: 32, U64: 64,
	F16: 16, BF16: 16, F32: 32, F64: 64, C64: 64,
}

// String returns the HLO spelling of t ("f32", "bf16", ...).
func (t ElemType) String() string {
	if int(t) < len(elemNames) {
		return elemNames[t]
	}
	return fmt.Sprintf("elem(%d)", int(t))
}

// Bytes is the storage size of one element in bytes (0 for token and tuple).
func (t ElemType) Bytes() int {
	if int(t) < len(elemBits) {
		return elemBits[t] / 8
	}
	return 0
}

// IsFloat reports whether t is a floating-point type.
func (t ElemType) IsFloat() bool { return t == F16 || t == BF16 || t == F32 || t == F64 }

// ParseElemType maps an HLO spelling to its ElemType.
func ParseElemType(s string) (ElemType, bool) {
	for i, n := range elemNames {
		if n == s && ElemType(i) != Invalid && ElemType(i) != TupleType {
			return ElemType(i), true
		}
	}
	return Invalid, false
}

// Layout is a physical layout: the minor-to-major order of an array's dimensions and
// optional tiling, as in XLA's "{1,0:T(8,128)(2,1)}".
type Layout struct {
	MinorToMajor []int
	Tiles        [][]int // each tile is the tile's dimension sizes; kept for round trips
}

// Clone returns a deep copy of l (nil stays nil).
func (l *Layout) Clone() *Layout {
	if l == nil {
		return nil
	}
	c := &Layout{MinorToMajor: append([]int(nil), l.MinorToMajor...)}
	for _, t := range l.Tiles {
		c.Tiles = append(c.Tiles, append([]int(nil), t...))
	}
	return c
}

// Equal reports whether two layouts are identical (nil equals nil only).
func (l *Layout) Equal(o *Layout) bool {
	if l == nil || o == nil {
		return l == nil && o == nil
	}
	if !intsEqual(l.MinorToMajor, o.MinorToMajor) || len(l.Tiles) != len(o.Tiles) {
		return false
	}
	for i := range l.Tiles {
		if !intsEqual(l.Tiles[i], o.Tiles[i]) {
			return false
		}
	}
	return true
}

// String renders the layout in HLO syntax, e.g. "{1,0:T(8,128)(2,1)}".
func (l *Layout) String() string {
	var b strings.Builder
	b.WriteByte('{')
	writeInts(&b, l.MinorToMajor)
	if len(l.Tiles) > 0 {
		b.WriteString(":T")
		for _, t := range l.Tiles {
			b.WriteByte('(')
			writeInts(&b, t)
			b.WriteByte(')')
		}
	}
	b.WriteByte('}')
	return b.String()
}

// RowMajor returns the default layout of a rank-r array: {r-1,...,1,0}.
func RowMajor(rank int) *Layout {
	m := make([]int, rank)
	for i := range m {
		m[i] = rank - 1 - i
	}
	return &Layout{MinorToMajor: m}
}

// IsRowMajor reports whether l is the default descending layout.
func (l *Layout) IsRowMajor() bool {
	for i, d := range l.MinorToMajor {
		if d != len(l.MinorToMajor)-1-i {
			return false
		}
	}
	return true
}

// Shape is an HLO shape: an array (element type, dimensions, optional layout) or a tuple.
type Shape struct {
	Elem   ElemType
	Dims   []int
	Layout *Layout // nil: not assigned (the default row-major is implied)
	Tuple  []Shape // element shapes when Elem == TupleType
}

// Array returns an array shape with no layout.
func Array(t ElemType, dims ...int) Shape {
	return Shape{Elem: t, Dims: append([]int{}, dims...)}
}

// Scalar returns a rank-0 shape of type t.
func Scalar(t ElemType) Shape { return Shape{Elem: t, Dims: []int{}} }

// TupleOf returns a tuple shape of the given element shapes.
func TupleOf(elems ...Shape) Shape {
	return Shape{Elem: TupleType, Tuple: append([]Shape{}, elems...)}
}

// IsTuple reports whether s is a tuple shape.
func (s Shape) IsTuple() bool { return s.Elem == TupleType }

// IsArray reports whether s is an array (not tuple, not token).
func (s Shape) IsArray() bool { return s.Elem != TupleType && s.Elem != Token && s.Elem != Invalid }

// Rank is the number of dimensions of an array shape.
func (s Shape) Rank() int { return len(s.Dims) }

// Elements is the product of the dimensions (1 for a scalar, 0 for tuples).
func (s Shape) Elements() int64 {
	if !s.IsArray() {
		return 0
	}
	n := int64(1)
	for _, d := range s.Dims {
		n *= int64(d)
	}
	return n
}

// Bytes is the logical (unpadded) size in bytes; tuples sum their elements.
func (s Shape) Bytes() int64 {
	if s.IsTuple() {
		var n int64
		for _, e := range s.Tuple {
			n += e.Bytes()
		}
		return n
	}
	return s.Elements() * int64(s.Elem.Bytes())
}

// LayoutOrDefault returns the layout, or row-major when none is assigned.
func (s Shape) LayoutOrDefault() *Layout {
	if s.Layout != nil {
		return s.Layout
	}
	return RowMajor(len(s.Dims))
}

// PhysicalDims returns the dimension sizes in major-to-minor physical order under the
// shape's layout (the last element is the minor-most dimension).
func (s Shape) PhysicalDims() []int {
	l := s.LayoutOrDefault()
	out := make([]int, len(s.Dims))
	for i, d := range l.MinorToMajor {
		out[len(out)-1-i] = s.Dims[d]
	}
	return out
}

// Clone returns a deep copy of s.
func (s Shape) Clone() Shape {
	c := Shape{Elem: s.Elem, Dims: append([]int{}, s.Dims...), Layout: s.Layout.Clone()}
	if s.Tuple != nil {
		c.Tuple = make([]Shape, len(s.Tuple))
		for i, e := range s.Tuple {
			c.Tuple[i] = e.Clone()
		}
	}
	return c
}

// WithLayout returns a copy of s with layout l.
func (s Shape) WithLayout(l *Layout) Shape {
	c := s.Clone()
	c.Layout = l.Clone()
	return c
}

// Compatible reports whether two shapes have the same element type and dimensions,
// ignoring layouts.
func (s Shape) Compatible(o Shape) bool {
	if s.Elem != o.Elem {
		return false
	}
	if s.IsTuple() {
		if len(s.Tuple) != len(o.Tuple) {
			return false
		}
		for i := range s.Tuple {
			if !s.Tuple[i].Compatible(o.Tuple[i]) {
				return false
			}
		}
		return true
	}
	return intsEqual(s.Dims, o.Dims)
}

// Equal reports whether two shapes are identical including layouts.
func (s Shape) Equal(o Shape) bool {
	if !s.Compatible(o) {
		return false
	}
	if s.IsTuple() {
		for i := range s.Tuple {
			if !s.Tuple[i].Equal(o.Tuple[i]) {
				return false
			}
		}
		return true
	}
	return s.Layout.Equal(o.Layout)
}

// SameDims reports whether two array shapes have the same dimensions (types may differ).
func (s Shape) SameDims(o Shape) bool { return intsEqual(s.Dims, o.Dims) }

// String renders the shape in HLO syntax, e.g. "f32[8,128]{1,0}" or "(f32[], s32[2]{0})".
func (s Shape) String() string {
	var b strings.Builder
	s.write(&b, true)
	return b.String()
}

// StringNoLayout renders the shape without layouts, e.g. "f32[8,128]".
func (s Shape) StringNoLayout() string {
	var b strings.Builder
	s.write(&b, false)
	return b.String()
}

func (s Shape) write(b *strings.Builder, layouts bool) {
	if s.IsTuple() {
		b.WriteByte('(')
		for i, e := range s.Tuple {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b, layouts)
		}
		b.WriteByte(')')
		return
	}
	b.WriteString(s.Elem.String())
	if s.Elem == Token {
		b.WriteString("[]")
		return
	}
	b.WriteByte('[')
	writeInts(b, s.Dims)
	b.WriteByte(']')
	if layouts && s.Layout != nil {
		b.WriteString(s.Layout.String())
	}
}

func writeInts(b *strings.Builder, xs []int) {
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
}

func intsEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
