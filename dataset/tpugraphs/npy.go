// Package tpugraphs bridges the TpuGraphs dataset (Phothilimthana et al., "TpuGraphs: A
// Performance Prediction Dataset on Large Tensor Computational Graphs", 2023) and tpucost:
// it reads and writes the released npz files (zip archives of NumPy .npy arrays), decodes
// the raw tpu_graphs.ModuleTuningData protocol buffers they were made from, and converts
// both to and from tpucost datasets.
//
// The npz reader is written here over archive/zip rather than taken from sbinet's npyio:
// npyio (codeberg.org/sbinet/npyio v0.14.0) reads a Fortran-order array into a Go slice
// in storage order without transposing it, converts no integer width into another (a
// u8 array does not read into []int64), and multiplies shape dimensions without an
// overflow check, so a crafted header makes it allocate without bound.
package tpugraphs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxArrayBytes is the largest array (element count × item size) the reader accepts: the
// project-wide limit of 2^40 bytes per array.
const MaxArrayBytes = 1 << 40

// Array is one n-dimensional array of an npz file, its values in C (row-major) order
// whatever the order in the file. Exactly one of Ints, F32 and F64 holds the values:
// Ints for the integer and boolean dtypes (widened to int64), F32 for float32, F64 for
// float64.
type Array struct {
	Shape []int
	// Descr is the NumPy dtype string as the file gave it ("<f4", "|u1", ">i8", ...);
	// the writer uses its kind and width (the byte order it writes is always little
	// endian).
	Descr string
	Ints  []int64
	F32   []float32
	F64   []float64
}

// Len is the number of elements (the product of the shape).
func (a *Array) Len() int {
	switch {
	case a.Ints != nil:
		return len(a.Ints)
	case a.F32 != nil:
		return len(a.F32)
	default:
		return len(a.F64)
	}
}

// IsFloat reports whether the array holds floating-point values.
func (a *Array) IsFloat() bool {
	return a.Ints == nil && (a.F32 != nil || a.F64 != nil || isFloatDescr(a.Descr))
}

// Float32s returns the values as float32 (integers and float64 converted).
func (a *Array) Float32s() []float32 {
	if a.F32 != nil {
		return a.F32
	}
	out := make([]float32, a.Len())
	for i := range out {
		if a.Ints != nil {
			out[i] = float32(a.Ints[i])
		} else {
			out[i] = float32(a.F64[i])
		}
	}
	return out
}

// Float64s returns the values as float64.
func (a *Array) Float64s() []float64 {
	if a.F64 != nil {
		return a.F64
	}
	out := make([]float64, a.Len())
	for i := range out {
		if a.Ints != nil {
			out[i] = float64(a.Ints[i])
		} else {
			out[i] = float64(a.F32[i])
		}
	}
	return out
}

// Int64s returns the values as int64. Floating-point values must be integral and within
// int64's range; the error says which element is not.
func (a *Array) Int64s() ([]int64, error) {
	if a.Ints != nil {
		return a.Ints, nil
	}
	out := make([]int64, a.Len())
	for i := range out {
		var v float64
		if a.F32 != nil {
			v = float64(a.F32[i])
		} else {
			v = a.F64[i]
		}
		if v != math.Trunc(v) || v < -(1<<63) || v >= 1<<63 {
			return nil, fmt.Errorf("element %d is %v, want an integer", i, v)
		}
		out[i] = int64(v)
	}
	return out, nil
}

func isFloatDescr(d string) bool { return len(d) == 3 && d[1] == 'f' }

// dtype is a parsed descr.
type dtype struct {
	order binary.ByteOrder
	kind  byte // 'b', 'i', 'u', 'f'
	size  int
}

// parseDescr accepts the dtypes the TpuGraphs files use: bool, signed and unsigned
// integers of 1, 2, 4 and 8 bytes, float32 and float64, in either byte order.
func parseDescr(d string) (dtype, error) {
	bad := fmt.Errorf("dtype %q is not supported: want bool, int8..int64, uint8..uint64, float32 or float64 ('|b1', '<i8', '>f4', ...)", d)
	if len(d) != 3 {
		return dtype{}, bad
	}
	t := dtype{kind: d[1]}
	switch d[0] {
	case '<', '|', '=': // '=' is native; numpy writes '<' on every little-endian machine
		t.order = binary.LittleEndian
	case '>':
		t.order = binary.BigEndian
	default:
		return dtype{}, bad
	}
	n, err := strconv.Atoi(d[2:])
	if err != nil {
		return dtype{}, bad
	}
	t.size = n
	switch {
	case t.kind == 'b' && n == 1:
	case (t.kind == 'i' || t.kind == 'u') && (n == 1 || n == 2 || n == 4 || n == 8):
	case t.kind == 'f' && (n == 4 || n == 8):
	default:
		return dtype{}, bad
	}
	if n > 1 && d[0] == '|' {
		return dtype{}, bad
	}
	return t, nil
}

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// header is a parsed .npy header.
type header struct {
	descr   string
	fortran bool
	shape   []int
}

// decodeNpy decodes one .npy file held in data.
func decodeNpy(data []byte) (*Array, error) {
	if len(data) < 10 || string(data[:6]) != npyMagic {
		return nil, errors.New("not a .npy array: want the magic \\x93NUMPY")
	}
	major := data[6]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(data[8:10])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, errors.New("truncated .npy header")
		}
		h := binary.LittleEndian.Uint32(data[8:12])
		if uint64(h) > uint64(len(data)) {
			return nil, fmt.Errorf(".npy header length %d exceeds the member's %d bytes", h, len(data))
		}
		hlen, off = int(h), 12
	default:
		return nil, fmt.Errorf(".npy format version %d.%d is not supported: want 1.x, 2.x or 3.x", major, data[7])
	}
	if off+hlen > len(data) {
		return nil, fmt.Errorf(".npy header length %d exceeds the member's %d bytes", hlen, len(data))
	}
	h, err := parseHeader(string(data[off : off+hlen]))
	if err != nil {
		return nil, err
	}
	t, err := parseDescr(h.descr)
	if err != nil {
		return nil, err
	}
	n, err := elements(h.shape, t.size)
	if err != nil {
		return nil, err
	}
	body := data[off+hlen:]
	if want := n * t.size; len(body) != want {
		return nil, fmt.Errorf("shape %v of %s holds %d bytes, the member has %d after its header", h.shape, h.descr, want, len(body))
	}
	a := &Array{Shape: h.shape, Descr: h.descr}
	if err := a.fill(body, t, n); err != nil {
		return nil, err
	}
	if h.fortran && len(h.shape) > 1 {
		a.toC()
	}
	return a, nil
}

// elements returns the product of shape, checking that it times size stays within
// MaxArrayBytes.
func elements(shape []int, size int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && n > MaxArrayBytes/size/d {
			return 0, fmt.Errorf("shape %v exceeds %d bytes (the limit per array)", shape, int64(MaxArrayBytes))
		}
		n *= d
	}
	return n, nil
}

func (a *Array) fill(body []byte, t dtype, n int) error {
	switch t.kind {
	case 'f':
		if t.size == 4 {
			a.F32 = make([]float32, n)
			for i := range a.F32 {
				a.F32[i] = math.Float32frombits(t.order.Uint32(body[4*i:]))
			}
		} else {
			a.F64 = make([]float64, n)
			for i := range a.F64 {
				a.F64[i] = math.Float64frombits(t.order.Uint64(body[8*i:]))
			}
		}
		return nil
	}
	a.Ints = make([]int64, n)
	for i := range a.Ints {
		b := body[i*t.size:]
		var u uint64
		switch t.size {
		case 1:
			u = uint64(b[0])
		case 2:
			u = uint64(t.order.Uint16(b))
		case 4:
			u = uint64(t.order.Uint32(b))
		default:
			u = t.order.Uint64(b)
		}
		var v int64
		switch t.kind {
		case 'b':
			if u > 1 {
				return fmt.Errorf("element %d of a bool array is %d, want 0 or 1", i, u)
			}
			v = int64(u)
		case 'u':
			if u > math.MaxInt64 {
				return fmt.Errorf("element %d is %d, beyond int64", i, u)
			}
			v = int64(u)
		default: // sign-extend
			shift := 64 - 8*uint(t.size)
			v = int64(u<<shift) >> shift
		}
		a.Ints[i] = v
	}
	return nil
}

// toC reorders a Fortran-order (column-major) array's values into C order.
func (a *Array) toC() {
	n := a.Len()
	// strides of the Fortran layout, in elements
	fs := make([]int, len(a.Shape))
	s := 1
	for i, d := range a.Shape {
		fs[i] = s
		s *= d
	}
	perm := make([]int, n) // perm[c] = Fortran index of C index c
	idx := make([]int, len(a.Shape))
	for c := 0; c < n; c++ {
		f := 0
		for i, v := range idx {
			f += v * fs[i]
		}
		perm[c] = f
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < a.Shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	switch {
	case a.Ints != nil:
		a.Ints = permute(a.Ints, perm)
	case a.F32 != nil:
		a.F32 = permute(a.F32, perm)
	default:
		a.F64 = permute(a.F64, perm)
	}
}

func permute[T any](v []T, perm []int) []T {
	out := make([]T, len(v))
	for c, f := range perm {
		out[c] = v[f]
	}
	return out
}

// parseHeader parses the Python dict literal of a .npy header:
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 140), }
func parseHeader(s string) (header, error) {
	var h header
	p := &lit{s: strings.TrimRight(s, " \n\x00")}
	bad := func(what string) (header, error) {
		return header{}, fmt.Errorf(".npy header %q: %s", abbreviate(s), what)
	}
	if !p.eat('{') {
		return bad("want a dict '{...}'")
	}
	seen := map[string]bool{}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, ok := p.str()
		if !ok {
			return bad("want a quoted key")
		}
		p.space()
		if !p.eat(':') {
			return bad("want ':' after key " + key)
		}
		p.space()
		switch key {
		case "descr":
			v, ok := p.str()
			if !ok {
				return bad("descr must be a string (structured dtypes are not supported)")
			}
			h.descr = v
		case "fortran_order":
			switch {
			case p.word("True"):
				h.fortran = true
			case p.word("False"):
			default:
				return bad("fortran_order must be True or False")
			}
		case "shape":
			sh, ok := p.tuple()
			if !ok {
				return bad("shape must be a tuple of non-negative integers")
			}
			h.shape = sh
		default:
			return bad("unknown key " + key)
		}
		seen[key] = true
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat('}') {
				return bad("want ',' or '}'")
			}
			break
		}
	}
	p.space()
	if p.i != len(p.s) {
		return bad("trailing characters after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return bad("no " + k)
		}
	}
	return h, nil
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// lit is a cursor over a Python literal.
type lit struct {
	s string
	i int
}

func (p *lit) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *lit) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *lit) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *lit) str() (string, bool) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", false
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+j]
	p.i += j + 2
	return v, true
}

func (p *lit) tuple() ([]int, bool) {
	if !p.eat('(') {
		return nil, false
	}
	shape := []int{}
	for {
		p.space()
		if p.eat(')') {
			return shape, true
		}
		j := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 longs
			p.i++
		}
		v, err := strconv.Atoi(strings.TrimSuffix(p.s[j:p.i], "L"))
		if err != nil || v < 0 || len(shape) >= 32 {
			return nil, false
		}
		shape = append(shape, v)
		p.space()
		if !p.eat(',') {
			p.space()
			if !p.eat(')') {
				return nil, false
			}
			return shape, true
		}
	}
}
