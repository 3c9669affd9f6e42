package hlo

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// ElemType is an HLO primitive element type.
type ElemType uint8

// The element types this package understands (every PrimitiveType of XLA's
// xla_data.proto). Invalid is the zero value. The numeric values are hashed into kernel
// keys: append new types at the end, never reorder.
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
	F8E4M3FN
	F8E5M2
	F8E4M3B11FNUZ
	F8E4M3FNUZ
	F8E5M2FNUZ
	F8E4M3
	F8E3M4
	F4E2M1FN
	F8E8M0FNU
	S4
	U4
	S2
	U2
	S1
	U1
	C128
	Opaque // XLA's OPAQUE_TYPE: a handle passed to custom calls, no elements
	numElemTypes
)

var elemNames = [numElemTypes]string{
	Invalid: "invalid", PRED: "pred", S8: "s8", S16: "s16", S32: "s32", S64: "s64",
	U8: "u8", U16: "u16", U32: "u32", U64: "u64", F16: "f16", BF16: "bf16", F32: "f32",
	F64: "f64", C64: "c64", Token: "token", TupleType: "tuple",
	F8E4M3FN: "f8e4m3fn", F8E5M2: "f8e5m2", F8E4M3B11FNUZ: "f8e4m3b11fnuz",
	F8E4M3FNUZ: "f8e4m3fnuz", F8E5M2FNUZ: "f8e5m2fnuz", F8E4M3: "f8e4m3", F8E3M4: "f8e3m4",
	F4E2M1FN: "f4e2m1fn", F8E8M0FNU: "f8e8m0fnu", S4: "s4", U4: "u4", S2: "s2", U2: "u2",
	S1: "s1", U1: "u1", C128: "c128", Opaque: "opaque",
}

// elemBits is the storage width of one element; sub-byte types are packed.
var elemBits = [numElemTypes]int{
	PRED: 8, S8: 8, S16: 16, S32: 32, S64: 64, U8: 8, U16: 16, U32: 32, U64: 64,
	F16: 16, BF16: 16, F32: 32, F64: 64, C64: 64,
	F8E4M3FN: 8, F8E5M2: 8, F8E4M3B11FNUZ: 8, F8E4M3FNUZ: 8, F8E5M2FNUZ: 8, F8E4M3: 8,
	F8E3M4: 8, F4E2M1FN: 4, F8E8M0FNU: 8, S4: 4, U4: 4, S2: 2, U2: 2, S1: 1, U1: 1, C128: 128,
}

// UnboundedDim is the size of an unbounded dynamic dimension ("f32[?]"). Such a shape
// can be imported and printed but has no size: CheckBounded rejects it before anything
// is compiled or simulated.
const UnboundedDim = -1

// MaxArrayBytes is the largest array this package accepts: 2^40 bytes (1 TiB), far above
// any accelerator's memory and far below the int64 range, so that element counts, byte
// sizes and the sums and products cost analysis forms from them cannot overflow.
const MaxArrayBytes = int64(1) << 40

// String returns the HLO spelling of t ("f32", "bf16", ...).
func (t ElemType) String() string {
	if int(t) < len(elemNames) {
		return elemNames[t]
	}
	return fmt.Sprintf("elem(%d)", int(t))
}

// Bits is the storage width of one element in bits (0 for token, opaque and tuple).
// Sub-byte types (s4, u4, s2, u2, s1, u1, f4e2m1fn) are packed in arrays.
func (t ElemType) Bits() int {
	if int(t) < len(elemBits) {
		return elemBits[t]
	}
	return 0
}

// Bytes is the storage size of one element in bytes rounded up (1 for sub-byte types,
// 0 for token, opaque and tuple). Array sizes use Shape.Bytes, which packs sub-byte types.
func (t ElemType) Bytes() int { return (t.Bits() + 7) / 8 }

// IsFloat reports whether t is a real floating-point type (8-bit and 4-bit floats
// included).
func (t ElemType) IsFloat() bool {
	switch t {
	case F16, BF16, F32, F64, F8E4M3FN, F8E5M2, F8E4M3B11FNUZ, F8E4M3FNUZ, F8E5M2FNUZ,
		F8E4M3, F8E3M4, F4E2M1FN, F8E8M0FNU:
		return true
	}
	return false
}

// floatRange is a float type's (overflow exponent, significand width), the order in which
// XLA's primitive_util::HigherPrecisionType prefers one float type over another: range
// first, then precision.
var floatRange = map[ElemType][2]int{
	F64: {1024, 53}, F32: {128, 24}, BF16: {128, 8}, F8E8M0FNU: {128, 1}, F16: {16, 11},
	F8E5M2: {16, 3}, F8E5M2FNUZ: {16, 3}, F8E4M3FN: {9, 4}, F8E4M3: {8, 4}, F8E4M3FNUZ: {8, 4},
	F8E4M3B11FNUZ: {5, 4}, F8E3M4: {4, 5}, F4E2M1FN: {3, 2},
}

// HigherPrecision is the element type XLA gives the result of a mixed-precision
// elementwise op, select or concatenate of float types a and b (f32 for bf16 and f32,
// bf16 for bf16 and f16); a for any other pair.
func HigherPrecision(a, b ElemType) ElemType {
	ra, oka := floatRange[a]
	rb, okb := floatRange[b]
	if !oka || !okb {
		return a
	}
	if rb[0] > ra[0] || (rb[0] == ra[0] && rb[1] > ra[1]) {
		return b
	}
	return a
}

// IsComplex reports whether t is a complex type (c64, c128).
func (t ElemType) IsComplex() bool { return t == C64 || t == C128 }

// ComplexComponent is the type of the real and imaginary parts of a complex type (f32 for
// c64, f64 for c128) and t itself for every other type, as XLA's
// primitive_util::ComplexComponentType.
func (t ElemType) ComplexComponent() ElemType {
	switch t {
	case C64:
		return F32
	case C128:
		return F64
	}
	return t
}

// ParseElemType maps an HLO spelling to its ElemType.
func ParseElemType(s string) (ElemType, bool) {
	for i, n := range elemNames[:] {
		if n == s && ElemType(i) != Invalid && ElemType(i) != TupleType {
			return ElemType(i), true
		}
	}
	return Invalid, false
}

// Layout is a physical layout: the minor-to-major order of an array's dimensions and
// optional tiling, as in XLA's "{1,0:T(8,128)(2,1)}", with XLA's element size ("E(4)":
// packed sub-byte elements) and memory space ("S(1)") when the text gives them. Those two
// are kept for round trips; the cost model does not read them (every array is in HBM
// until staging decides otherwise, and its bytes come from the element type).
type Layout struct {
	MinorToMajor    []int
	Tiles           [][]int // each tile is the tile's dimension sizes; kept for round trips
	ElementSizeBits int     // XLA's "E(n)"; 0 when not given
	MemorySpace     int     // XLA's "S(n)"; 0 (the default memory) when not given
}

// Clone returns a deep copy of l (nil stays nil).
func (l *Layout) Clone() *Layout {
	if l == nil {
		return nil
	}
	c := &Layout{MinorToMajor: append([]int(nil), l.MinorToMajor...), ElementSizeBits: l.ElementSizeBits, MemorySpace: l.MemorySpace}
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
	if !intsEqual(l.MinorToMajor, o.MinorToMajor) || len(l.Tiles) != len(o.Tiles) ||
		l.ElementSizeBits != o.ElementSizeBits || l.MemorySpace != o.MemorySpace {
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
	if len(l.Tiles) > 0 || l.ElementSizeBits != 0 || l.MemorySpace != 0 {
		b.WriteByte(':')
	}
	if len(l.Tiles) > 0 {
		b.WriteString("T")
		for _, t := range l.Tiles {
			b.WriteByte('(')
			writeInts(&b, t)
			b.WriteByte(')')
		}
	}
	if l.ElementSizeBits != 0 {
		fmt.Fprintf(&b, "E(%d)", l.ElementSizeBits)
	}
	if l.MemorySpace != 0 {
		fmt.Fprintf(&b, "S(%d)", l.MemorySpace)
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
//
// A dynamic dimension ("f32[<=N]") has Dynamic[i] set and Dims[i] = N, its bound: every
// size computation (and so the simulator) uses the bound.
type Shape struct {
	Elem    ElemType
	Dims    []int
	Dynamic []bool  // nil when every dimension is static; else one flag per dimension
	Layout  *Layout // nil: not assigned (the default row-major is implied)
	Tuple   []Shape // element shapes when Elem == TupleType
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
func (s Shape) IsArray() bool {
	return s.Elem != TupleType && s.Elem != Token && s.Elem != Opaque && s.Elem != Invalid
}

// IsDynamic reports whether dimension i is dynamic (bounded by Dims[i]).
func (s Shape) IsDynamic(i int) bool { return i < len(s.Dynamic) && s.Dynamic[i] }

// HasDynamic reports whether any dimension of s (or of a tuple element) is dynamic.
func (s Shape) HasDynamic() bool {
	for _, d := range s.Dynamic {
		if d {
			return true
		}
	}
	for _, e := range s.Tuple {
		if e.HasDynamic() {
			return true
		}
	}
	return false
}

// Rank is the number of dimensions of an array shape.
func (s Shape) Rank() int { return len(s.Dims) }

// Elements is the product of the dimensions (1 for a scalar, 0 for tuples). It saturates
// at math.MaxInt64 instead of overflowing; CheckSize rejects such shapes.
func (s Shape) Elements() int64 {
	if !s.IsArray() {
		return 0
	}
	n, ok := elements(s.Dims)
	if !ok {
		return math.MaxInt64
	}
	return int64(n)
}

// elements multiplies dims without overflow; ok is false when a dimension is negative
// or the product exceeds math.MaxInt64.
func elements(dims []int) (n uint64, ok bool) {
	n = 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// Bytes is the logical (unpadded) size in bytes, sub-byte types packed; tuples sum their
// elements. It saturates at math.MaxInt64; CheckSize rejects such shapes.
func (s Shape) Bytes() int64 {
	if s.IsTuple() {
		var n int64
		for _, e := range s.Tuple {
			b := e.Bytes()
			if n > math.MaxInt64-b {
				return math.MaxInt64
			}
			n += b
		}
		return n
	}
	b, ok := arrayBytes(s)
	if !ok {
		return math.MaxInt64
	}
	return b
}

// arrayBytes is the packed byte size of an array shape, without overflow.
func arrayBytes(s Shape) (int64, bool) {
	if !s.IsArray() {
		return 0, true
	}
	n, ok := elements(s.Dims)
	if !ok {
		return 0, false
	}
	hi, lo := bits.Mul64(n, uint64(s.Elem.Bits()))
	if hi != 0 || lo > math.MaxInt64-7 {
		return 0, false
	}
	return int64((lo + 7) / 8), true
}

// CheckSize reports an error when an array of s (or of any tuple element) has a negative
// dimension or is larger than MaxArrayBytes, the limit that keeps every size computation
// of this module overflow-free.
func (s Shape) CheckSize() error {
	if s.IsTuple() {
		for _, e := range s.Tuple {
			if err := e.CheckSize(); err != nil {
				return err
			}
		}
		return nil
	}
	bounded := s
	bounded.Dims = append([]int(nil), s.Dims...)
	for i, d := range s.Dims {
		if d == UnboundedDim {
			bounded.Dims[i] = 1 // no size yet: CheckBounded stops it before compilation
			continue
		}
		if d < 0 {
			return fmt.Errorf("%s: dimension %d is negative", s.StringNoLayout(), i)
		}
	}
	if b, ok := arrayBytes(bounded); !ok || b > MaxArrayBytes {
		return fmt.Errorf("%s is too large: an array may hold at most 2^40 bytes (1 TiB)", s.StringNoLayout())
	}
	return nil
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
	if s.Dynamic != nil {
		c.Dynamic = append([]bool(nil), s.Dynamic...)
	}
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

// Compatible reports whether two shapes have the same element type and dimensions (or
// bounds), ignoring layouts and which dimensions are dynamic.
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

// CompatibleMixedPrecision is Compatible, except that floating-point element types may
// differ: what XLA's verifier accepts with allow_mixed_precision, as TPU dumps need (a
// reshape from f32 to bf16, an add of f32 and bf16).
func (s Shape) CompatibleMixedPrecision(o Shape) bool {
	if s.IsTuple() || o.IsTuple() {
		if !s.IsTuple() || !o.IsTuple() || len(s.Tuple) != len(o.Tuple) {
			return false
		}
		for i := range s.Tuple {
			if !s.Tuple[i].CompatibleMixedPrecision(o.Tuple[i]) {
				return false
			}
		}
		return true
	}
	if s.Elem != o.Elem && !(s.Elem.IsFloat() && o.Elem.IsFloat()) {
		return false
	}
	return intsEqual(s.Dims, o.Dims)
}

// Equal reports whether two shapes are identical including layouts and dynamic
// dimensions.
func (s Shape) Equal(o Shape) bool {
	if !s.Compatible(o) {
		return false
	}
	for i := range s.Dims {
		if s.IsDynamic(i) != o.IsDynamic(i) {
			return false
		}
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
	if s.Elem == Token || s.Elem == Opaque {
		b.WriteString("[]")
		return
	}
	b.WriteByte('[')
	for i, d := range s.Dims {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case d == UnboundedDim:
			b.WriteByte('?')
			continue
		case s.IsDynamic(i):
			b.WriteString("<=")
		}
		b.WriteString(strconv.Itoa(d))
	}
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
