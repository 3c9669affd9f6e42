package opt

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// errUnknownLiteral marks a constant whose value the passes cannot know: an elided
// payload ("{...}", what the zoo builders and XLA's short dumps write), a tuple literal,
// or an element type the folder does not model (complex, token). Such a constant is never
// folded, never merged with another and never taken for a splat.
var errUnknownLiteral = errors.New("literal value unknown")

// maxExactInt is the largest magnitude up to which every integer is a float64.
const maxExactInt = 1 << 53

// numericType reports whether values of t are modelled by the passes (as float64s).
func numericType(t hlo.ElemType) bool {
	switch t {
	case hlo.PRED, hlo.S8, hlo.S16, hlo.S32, hlo.S64, hlo.U8, hlo.U16, hlo.U32, hlo.U64,
		hlo.F16, hlo.BF16, hlo.F32, hlo.F64:
		return true
	}
	return false
}

func isSigned(t hlo.ElemType) bool {
	return t == hlo.S8 || t == hlo.S16 || t == hlo.S32 || t == hlo.S64
}

func isUnsigned(t hlo.ElemType) bool {
	return t == hlo.U8 || t == hlo.U16 || t == hlo.U32 || t == hlo.U64
}

func isInt(t hlo.ElemType) bool { return isSigned(t) || isUnsigned(t) }

// parseLiteral returns the row-major values of constant in (shape's element count of
// them). It returns errUnknownLiteral for values it cannot know and another error for a
// literal that is malformed for the constant's shape.
func parseLiteral(in *hlo.Instruction) ([]float64, error) {
	s := in.Shape
	if !s.IsArray() || !numericType(s.Elem) {
		return nil, errUnknownLiteral
	}
	lit := in.Literal
	if strings.Contains(lit, "...") || strings.HasPrefix(strings.TrimSpace(lit), "(") {
		return nil, errUnknownLiteral
	}
	n := s.Elements()
	if n > 1<<24 {
		return nil, errUnknownLiteral // too large to model; never folded anyway
	}
	toks := hlo.LiteralValues(lit)
	if int64(len(toks)) != n {
		return nil, fmt.Errorf("constant %%%s: literal %q has %d values, shape %s needs %d",
			in.Name, abbrev(lit), len(toks), s.StringNoLayout(), n)
	}
	vals := make([]float64, n)
	for i, t := range toks {
		v, err := parseScalar(t, s.Elem)
		if err != nil {
			return nil, fmt.Errorf("constant %%%s: value %d: %w", in.Name, i, err)
		}
		vals[i] = v
	}
	return vals, nil
}

func abbrev(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// parseScalar parses one literal element of type t and rounds it to t.
func parseScalar(tok string, t hlo.ElemType) (float64, error) {
	switch t {
	case hlo.PRED:
		switch tok {
		case "true", "1":
			return 1, nil
		case "false", "0":
			return 0, nil
		}
		return 0, fmt.Errorf("%q is not a pred value", tok)
	}
	low := strings.ToLower(tok)
	var v float64
	switch {
	case strings.HasPrefix(low, "nan") || strings.HasPrefix(low, "-nan") || strings.HasPrefix(low, "+nan"):
		v = math.NaN()
	default:
		var err error
		v, err = strconv.ParseFloat(tok, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", tok)
		}
	}
	if isInt(t) {
		if v != math.Trunc(v) || math.Abs(v) > maxExactInt {
			return 0, errUnknownLiteral
		}
		if w := wrapInt(v, t); w != v {
			return 0, fmt.Errorf("%q is out of range for %s", tok, t)
		}
	}
	return roundTo(v, t), nil
}

// formatLiteral renders vals (row-major, of shape s) as an HLO constant payload in the
// parser's canonical form: a scalar as written, arrays as "{1, 2}", nested as
// "{ {1, 2}, {3, 4} }".
func formatLiteral(s hlo.Shape, vals []float64) string {
	if s.Rank() == 0 {
		return formatScalar(vals[0], s.Elem)
	}
	var b strings.Builder
	pos := 0
	var rec func(d int)
	rec = func(d int) {
		if d == s.Rank() {
			b.WriteString(formatScalar(vals[pos], s.Elem))
			pos++
			return
		}
		nested := d < s.Rank()-1 && s.Dims[d] > 0
		b.WriteByte('{')
		if nested {
			b.WriteByte(' ')
		}
		for i := 0; i < s.Dims[d]; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			rec(d + 1)
		}
		if nested {
			b.WriteByte(' ')
		}
		b.WriteByte('}')
	}
	rec(0)
	return b.String()
}

// formatScalar renders v of type t so that parseScalar reads back exactly v.
func formatScalar(v float64, t hlo.ElemType) string {
	switch {
	case t == hlo.PRED:
		if v != 0 {
			return "true"
		}
		return "false"
	case isInt(t):
		return strconv.FormatInt(int64(v), 10)
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case t == hlo.F64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default: // f32, bf16, f16: exact in float32
		return strconv.FormatFloat(v, 'g', -1, 32)
	}
}

// floatFormat describes a binary floating-point format: significand precision in bits
// (with the implicit one), minimum normal exponent, and largest finite value.
type floatFormat struct {
	prec, emin int
	max        float64
}

var (
	formatF16  = floatFormat{11, -14, 65504}
	formatBF16 = floatFormat{8, -126, 0x1.fep127}
	formatF32  = floatFormat{24, -126, math.MaxFloat32}
)

// round rounds v to the nearest value of format f, ties to even, with gradual underflow
// and overflow to infinity, in one rounding step (no double rounding through float32).
func (f floatFormat) round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	_, exp := math.Frexp(v) // v = frac · 2^exp, |frac| in [0.5, 1)
	e := max(exp-1, f.emin)
	q := math.Ldexp(1, e-(f.prec-1)) // the spacing of format values near v
	r := math.RoundToEven(v/q) * q
	if math.Abs(r) > f.max {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// roundTo converts v to the nearest value of element type t, with XLA's conversion
// semantics for the cases the passes fold: floats round to nearest even; integers are
// truncated toward zero and wrapped to the type's width; pred is v != 0. Callers that
// convert a float to an integer check the range first (out-of-range conversions are not
// folded).
func roundTo(v float64, t hlo.ElemType) float64 {
	switch t {
	case hlo.F64:
		return v
	case hlo.F32:
		return float64(float32(v))
	case hlo.BF16:
		return formatBF16.round(v)
	case hlo.F16:
		return formatF16.round(v)
	case hlo.PRED:
		if v != 0 {
			return 1
		}
		return 0
	}
	if isInt(t) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return v
		}
		return wrapInt(math.Trunc(v), t)
	}
	return v
}

// wrapInt wraps the integer v to the two's-complement range of t.
func wrapInt(v float64, t hlo.ElemType) float64 {
	bits := uint(t.Bytes() * 8)
	if bits >= 64 {
		return v // s64/u64 values are only modelled up to 2^53
	}
	m := math.Ldexp(1, int(bits))
	w := math.Mod(v, m)
	if w < 0 {
		w += m
	}
	if isSigned(t) && w >= m/2 {
		w -= m
	}
	return w
}

// intRange returns the smallest and largest values of integer type t (within ±2^53).
func intRange(t hlo.ElemType) (lo, hi float64) {
	bits := min(t.Bytes()*8, 54)
	if isSigned(t) {
		return -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1) - 1
	}
	return 0, math.Ldexp(1, bits) - 1
}

// exactlyRepresents reports whether every value of type a is also a value of type b, so
// that converting a → b → c equals converting a → c directly.
func exactlyRepresents(a, b hlo.ElemType) bool {
	if a == b {
		return true
	}
	if a == hlo.PRED {
		return numericType(b) // 0 and 1
	}
	// significand bits of each float type, value bits of each integer type
	floatBits := map[hlo.ElemType]int{hlo.F16: 11, hlo.BF16: 8, hlo.F32: 24, hlo.F64: 53}
	switch {
	case a.IsFloat() && b.IsFloat():
		switch a {
		case hlo.F16:
			return b == hlo.F32 || b == hlo.F64
		case hlo.BF16:
			return b == hlo.F32 || b == hlo.F64
		case hlo.F32:
			return b == hlo.F64
		}
		return false
	case isInt(a) && isInt(b):
		ab, bb := a.Bytes()*8, b.Bytes()*8
		switch {
		case isSigned(a) && isSigned(b), isUnsigned(a) && isUnsigned(b):
			return ab <= bb
		case isUnsigned(a) && isSigned(b):
			return ab < bb
		}
		return false
	case isInt(a) && b.IsFloat():
		need := a.Bytes() * 8
		if isSigned(a) {
			need-- // magnitude bits
		}
		// every integer of magnitude < 2^need is exact in a float with ≥ need bits of
		// significand (and the float's range covers it for every pair here)
		return need <= floatBits[b]
	}
	return false
}
