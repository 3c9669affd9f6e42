package opt

// A generator of small random HLO modules for the correctness tests. Besides random
// elementwise arithmetic, data movement, reductions, dots, calls and while loops, it
// plants the patterns the passes look for (identities, movable transposes, broadcasts
// of broadcasts, duplicate subexpressions, dead code, zero-sized arrays, tiling slices,
// counting loops with known trip counts, ...), so that every pass has work to do.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

type gval struct {
	name string
	t    hlo.ElemType
	dims []int
}

func (v gval) shape() string { return hlo.Array(v.t, v.dims...).StringNoLayout() }

func (v gval) elems() int {
	n := 1
	for _, d := range v.dims {
		n *= d
	}
	return n
}

// gcomp is a computation being generated.
type gcomp struct {
	name   string
	sub    bool // a callee: new leaves are constants, not parameters
	used   map[string]bool
	lines  []string
	pool   []gval
	params []gval
}

type rgen struct {
	r      *rand.Rand
	n      int
	comps  []string // finished non-entry computations, callees first
	redOK  map[string]bool
	depth  int
	shapes [][]int
}

func (g *rgen) name(base string) string {
	g.n++
	return fmt.Sprintf("%s.%d", base, g.n)
}

// emit adds "%name = shape op(args)attrs" and the value to c's pool.
func (g *rgen) emit(c *gcomp, base string, t hlo.ElemType, dims []int, op string, attrs string, args ...gval) gval {
	v := gval{name: g.name(base), t: t, dims: slices.Clone(dims)}
	var as []string
	if c.used == nil {
		c.used = map[string]bool{}
	}
	for _, a := range args {
		as = append(as, "%"+a.name)
		c.used[a.name] = true
	}
	c.lines = append(c.lines, fmt.Sprintf("  %%%s = %s %s(%s)%s", v.name, v.shape(), op, strings.Join(as, ", "), attrs))
	c.pool = append(c.pool, v)
	return v
}

func (g *rgen) param(c *gcomp, t hlo.ElemType, dims []int) gval {
	if c.sub && len(c.params) > 0 {
		vals := make([]float64, prod(dims))
		for i := range vals {
			vals[i] = float64(g.r.IntN(5) - 2)
		}
		return g.literal(c, t, dims, vals)
	}
	v := gval{name: g.name("p"), t: t, dims: slices.Clone(dims)}
	c.lines = append(c.lines, fmt.Sprintf("  %%%s = %s parameter(%d)", v.name, v.shape(), len(c.params)))
	c.params = append(c.params, v)
	c.pool = append(c.pool, v)
	return v
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return "{" + strings.Join(s, ",") + "}"
}

// literal emits a constant with the given values.
func (g *rgen) literal(c *gcomp, t hlo.ElemType, dims []int, vals []float64) gval {
	v := gval{name: g.name("c"), t: t, dims: slices.Clone(dims)}
	lit := formatLiteral(hlo.Array(t, dims...), vals)
	c.lines = append(c.lines, fmt.Sprintf("  %%%s = %s constant(%s)", v.name, v.shape(), lit))
	c.pool = append(c.pool, v)
	return v
}

func (g *rgen) splat(c *gcomp, t hlo.ElemType, dims []int, x float64) gval {
	s := g.literal(c, t, nil, []float64{roundTo(x, t)})
	if len(dims) == 0 {
		return s
	}
	return g.emit(c, "bc", t, dims, "broadcast", ", dimensions={}", s)
}

func (g *rgen) pick(c *gcomp, ok func(gval) bool) (gval, bool) {
	var cand []gval
	for _, v := range c.pool {
		if ok(v) {
			cand = append(cand, v)
		}
	}
	if len(cand) == 0 {
		return gval{}, false
	}
	// prefer recent values
	i := len(cand) - 1 - min(g.r.IntN(len(cand)), g.r.IntN(len(cand)))
	return cand[i], true
}

func isFloatVal(v gval) bool { return v.t.IsFloat() }

// floatOf returns a float value of the given dims (making one if needed).
func (g *rgen) floatOf(c *gcomp, t hlo.ElemType, dims []int) gval {
	if v, ok := g.pick(c, func(v gval) bool { return v.t == t && slices.Equal(v.dims, dims) }); ok && g.r.IntN(4) > 0 {
		return v
	}
	if g.r.IntN(2) == 0 {
		vals := make([]float64, prod(dims))
		for i := range vals {
			vals[i] = float64(g.r.IntN(7) - 3)
		}
		return g.literal(c, t, dims, vals)
	}
	return g.param(c, t, dims)
}

func prod(d []int) int {
	n := 1
	for _, x := range d {
		n *= x
	}
	return n
}

var elemBinary = []string{"add", "subtract", "multiply", "maximum", "minimum"}
var elemUnary = []string{"negate", "abs", "tanh", "logistic", "floor", "sine"}

// step adds one random instruction (or planted pattern) to c.
func (g *rgen) step(c *gcomp) {
	r := g.r
	fl := func() gval {
		v, ok := g.pick(c, isFloatVal)
		if !ok {
			return g.param(c, hlo.F32, g.shapes[r.IntN(len(g.shapes))])
		}
		return v
	}
	switch k := r.IntN(42); k {
	case 0, 1, 2: // binary arithmetic
		a := fl()
		b := g.floatOf(c, a.t, a.dims)
		g.emit(c, "e", a.t, a.dims, elemBinary[r.IntN(len(elemBinary))], "", a, b)
	case 3, 4: // unary
		a := fl()
		g.emit(c, "u", a.t, a.dims, elemUnary[r.IntN(len(elemUnary))], "", a)
	case 5: // identities: x*1, x+0, x-0, x/1, x/2
		a := fl()
		vals := []float64{1, 0, 0, 1, 2, 0.5}
		ops := []string{"multiply", "add", "subtract", "divide", "divide", "multiply"}
		i := r.IntN(len(ops))
		s := g.splat(c, a.t, a.dims, vals[i])
		if r.IntN(2) == 0 && ops[i] != "subtract" && ops[i] != "divide" {
			g.emit(c, "id", a.t, a.dims, ops[i], "", s, a)
		} else {
			g.emit(c, "id", a.t, a.dims, ops[i], "", a, s)
		}
	case 6: // double negation / negate-add
		a := fl()
		n := g.emit(c, "n", a.t, a.dims, "negate", "", a)
		if r.IntN(2) == 0 {
			g.emit(c, "n", a.t, a.dims, "negate", "", n)
		} else {
			b := g.floatOf(c, a.t, a.dims)
			g.emit(c, "an", a.t, a.dims, []string{"add", "subtract"}[r.IntN(2)], "", b, n)
		}
	case 7: // convert chains
		a := fl()
		ts := []hlo.ElemType{hlo.F32, hlo.F64, hlo.BF16, hlo.F16, hlo.S32}
		m := g.emit(c, "cv", ts[r.IntN(len(ts))], a.dims, "convert", "", a)
		g.emit(c, "cv", []hlo.ElemType{a.t, hlo.F32}[r.IntN(2)], a.dims, "convert", "", m)
	case 8, 9: // transpose (sometimes of a transpose, sometimes inverse)
		a := fl()
		p := r.Perm(len(a.dims))
		t1 := g.emit(c, "t", a.t, permute(a.dims, p), "transpose", ", dimensions="+ints(p), a)
		if r.IntN(2) == 0 {
			q := r.Perm(len(p))
			if r.IntN(2) == 0 {
				q = invert(p)
			}
			g.emit(c, "t", a.t, permute(t1.dims, q), "transpose", ", dimensions="+ints(q), t1)
		}
	case 10, 11: // reshape (sometimes twice)
		a := fl()
		d := g.refactor(a.dims)
		r1 := g.emit(c, "r", a.t, d, "reshape", "", a)
		if r.IntN(2) == 0 {
			g.emit(c, "r", a.t, g.refactor(d), "reshape", "", r1)
		}
	case 12, 13: // broadcast (sometimes of a broadcast)
		a := fl()
		if len(a.dims) >= 3 {
			return
		}
		b1 := g.broadcastOf(c, a)
		if r.IntN(2) == 0 && len(b1.dims) < 4 {
			g.broadcastOf(c, b1)
		}
	case 14, 15: // slice (of a slice, or full)
		a := fl()
		s1 := g.sliceOf(c, a, r.IntN(4) == 0)
		if r.IntN(2) == 0 {
			g.sliceOf(c, s1, false)
		}
	case 16: // concatenate (of one, of adjacent slices, of two)
		a := fl()
		if len(a.dims) == 0 {
			return
		}
		d := r.IntN(len(a.dims))
		switch r.IntN(3) {
		case 0:
			g.emit(c, "cc", a.t, a.dims, "concatenate", fmt.Sprintf(", dimensions={%d}", d), a)
		case 1:
			if a.dims[d] < 2 {
				return
			}
			cut := 1 + r.IntN(a.dims[d]-1)
			lo, hi := fullWindow(a.dims), fullWindow(a.dims)
			lo[d][1], hi[d][0] = cut, cut
			s1 := g.emitSlice(c, a, lo)
			s2 := g.emitSlice(c, a, hi)
			g.emit(c, "cc", a.t, a.dims, "concatenate", fmt.Sprintf(", dimensions={%d}", d), s1, s2)
		default:
			b := g.floatOf(c, a.t, a.dims)
			dd := slices.Clone(a.dims)
			dd[d] *= 2
			cc := g.emit(c, "cc", a.t, dd, "concatenate", fmt.Sprintf(", dimensions={%d}", d), a, b)
			if r.IntN(2) == 0 { // slice back one operand
				w := fullWindow(dd)
				w[d] = [3]int{a.dims[d], dd[d], 1}
				g.emitSlice(c, cc, w)
			}
		}
	case 17: // pad (zero padding sometimes), slice of pad
		a := fl()
		pv := g.splat(c, a.t, nil, float64(r.IntN(3)))
		var ps []string
		dims := slices.Clone(a.dims)
		zero := r.IntN(3) == 0
		for i := range dims {
			lo, hi, in := r.IntN(3), r.IntN(2), r.IntN(4)/3
			if zero {
				lo, hi, in = 0, 0, 0
			}
			ps = append(ps, fmt.Sprintf("%d_%d_%d", lo, hi, in))
			if dims[i] > 0 {
				dims[i] += (dims[i]-1)*in + lo + hi
			} else {
				dims[i] = lo + hi
			}
		}
		if len(dims) == 0 {
			return
		}
		p := g.emit(c, "pad", a.t, dims, "pad", ", padding="+strings.Join(ps, "x"), a, pv)
		switch r.IntN(3) {
		case 0:
			g.sliceOf(c, p, false)
		case 1: // a strided window inside the padded operand (no interior padding)
			if a.elems() == 0 || strings.Contains(strings.Join(ps, "x"), "_1x") || strings.HasSuffix(ps[len(ps)-1], "_1") {
				return
			}
			w := make([][3]int, len(dims))
			for i, n := range a.dims {
				var lo int
				fmt.Sscanf(ps[i], "%d_", &lo)
				st := 1 + r.IntN(2)
				first := lo + r.IntN(n)
				cnt := 1 + r.IntN((lo+n-1-first)/st+1)
				w[i] = [3]int{first, first + (cnt-1)*st + 1, st}
			}
			g.emitSlice(c, p, w)
		}
	case 18: // reverse (twice sometimes)
		a := fl()
		if len(a.dims) == 0 {
			return
		}
		ds := []int{r.IntN(len(a.dims))}
		v := g.emit(c, "rev", a.t, a.dims, "reverse", ", dimensions="+ints(ds), a)
		if r.IntN(2) == 0 {
			g.emit(c, "rev", a.t, a.dims, "reverse", ", dimensions="+ints(ds), v)
		}
	case 19, 20: // reduce (of a reduce, of a broadcast)
		a := fl()
		if len(a.dims) == 0 || a.t != hlo.F32 {
			return
		}
		if r.IntN(3) == 0 && len(a.dims) < 3 {
			a = g.broadcastOf(c, a)
		}
		v := g.reduceOf(c, a)
		if r.IntN(2) == 0 && len(v.dims) > 0 {
			g.reduceOf(c, v)
		}
	case 21, 22: // dot, maybe with transposed operands or a transposed result
		g.dot(c)
	case 23: // select and compare
		a := fl()
		b := g.floatOf(c, a.t, a.dims)
		var p gval
		if r.IntN(3) == 0 {
			p = g.splat(c, hlo.PRED, a.dims, float64(r.IntN(2)))
		} else {
			dirs := []string{"LT", "GT", "EQ", "NE", "GE"}
			p = g.emit(c, "cmp", hlo.PRED, a.dims, "compare", ", direction="+dirs[r.IntN(len(dirs))], a, b)
			if r.IntN(2) == 0 {
				p = g.emit(c, "not", hlo.PRED, a.dims, "not", "", p)
			}
		}
		if r.IntN(4) == 0 {
			b = a
		}
		g.emit(c, "sel", a.t, a.dims, "select", "", p, a, b)
	case 24: // duplicate of the last instruction (CSE)
		if len(c.lines) > 0 && !strings.Contains(c.lines[len(c.lines)-1], "parameter(") {
			last := c.lines[len(c.lines)-1]
			v := c.pool[len(c.pool)-1]
			nv := gval{name: g.name("dup"), t: v.t, dims: v.dims}
			c.lines = append(c.lines, strings.Replace(last, "%"+v.name+" =", "%"+nv.name+" =", 1))
			c.pool = append(c.pool, nv)
		}
	case 25, 26: // elementwise of two transposes with one permutation (reshape-mover)
		a := fl()
		b := g.floatOf(c, a.t, a.dims)
		p := r.Perm(len(a.dims))
		ta := g.emit(c, "t", a.t, permute(a.dims, p), "transpose", ", dimensions="+ints(p), a)
		tb := g.emit(c, "t", a.t, permute(a.dims, p), "transpose", ", dimensions="+ints(p), b)
		if r.IntN(2) == 0 {
			tb = g.splat(c, a.t, ta.dims, 2)
		}
		e := g.emit(c, "mv", a.t, ta.dims, elemBinary[r.IntN(len(elemBinary))], "", ta, tb)
		if r.IntN(2) == 0 {
			q := invert(p)
			g.emit(c, "t", a.t, permute(e.dims, q), "transpose", ", dimensions="+ints(q), e)
		}
	case 27, 28: // elementwise of broadcasts (broadcast-sinking)
		a := fl()
		if len(a.dims) >= 3 {
			return
		}
		b := g.floatOf(c, a.t, a.dims)
		if n := a.elems(); n > 0 && r.IntN(2) == 0 { // one shape broadcast along different dimensions
			if len(a.dims) != 1 {
				a = g.emit(c, "r", a.t, []int{n}, "reshape", "", a)
			}
			b := g.floatOf(c, a.t, a.dims)
			sq := []int{n, n}
			ba := g.emit(c, "b", a.t, sq, "broadcast", ", dimensions={0}", a)
			bb := g.emit(c, "bb", b.t, sq, "broadcast", ", dimensions={1}", b)
			g.emit(c, "bs", a.t, sq, elemBinary[r.IntN(len(elemBinary))], "", ba, bb)
			return
		}
		ba := g.broadcastOf(c, a)
		bd := ba.dims
		line := c.lines[len(c.lines)-1]
		attrs := line[strings.Index(line, "), dimensions=")+1:]
		bb := g.emit(c, "bb", b.t, bd, "broadcast", attrs, b)
		if r.IntN(3) == 0 {
			bb = g.splat(c, a.t, bd, float64(r.IntN(3)))
		}
		g.emit(c, "bs", a.t, bd, elemBinary[r.IntN(len(elemBinary))], "", ba, bb)
	case 29, 40: // slices tiling two arrays (slice-sinker)
		a := fl()
		if len(a.dims) == 0 || a.dims[0] < 2 {
			return
		}
		b := g.floatOf(c, a.t, a.dims)
		cut := 1 + r.IntN(a.dims[0]-1)
		op := elemBinary[r.IntN(len(elemBinary))]
		var parts []gval
		for _, w := range [][2]int{{0, cut}, {cut, a.dims[0]}} {
			win := fullWindow(a.dims)
			win[0] = [3]int{w[0], w[1], 1}
			sa := g.emitSlice(c, a, win)
			sb := g.emitSlice(c, b, win)
			parts = append(parts, g.emit(c, "ss", a.t, sa.dims, op, "", sa, sb))
		}
		if r.IntN(2) == 0 {
			g.emit(c, "sc", a.t, a.dims, "concatenate", ", dimensions={0}", parts...)
		} else {
			g.emit(c, "sn", a.t, parts[0].dims, "negate", "", parts[0])
		}
	case 30: // zero-sized arrays
		a := fl()
		if len(a.dims) == 0 {
			return
		}
		w := fullWindow(a.dims)
		d := r.IntN(len(a.dims))
		k := min(1, a.dims[d])
		w[d] = [3]int{k, k, 1}
		z := g.emitSlice(c, a, w)
		n := g.emit(c, "z", z.t, z.dims, "negate", "", z)
		g.emit(c, "zc", a.t, a.dims, "concatenate", fmt.Sprintf(", dimensions={%d}", d), n, a)
	case 31: // dynamic-slice at constant indices
		a := fl()
		if len(a.dims) == 0 {
			return
		}
		var idx []gval
		size := make([]int, len(a.dims))
		for i, d := range a.dims {
			size[i] = r.IntN(d + 1)
			idx = append(idx, g.literal(c, hlo.S32, nil, []float64{float64(r.IntN(d+2) - 1)}))
		}
		g.emit(c, "ds", a.t, size, "dynamic-slice", ", dynamic_slice_sizes="+ints(size), append([]gval{a}, idx...)...)
	case 32: // tuple and get-tuple-element
		a, b := fl(), fl()
		tv := gval{name: g.name("tup")}
		c.lines = append(c.lines, fmt.Sprintf("  %%%s = (%s, %s) tuple(%%%s, %%%s)", tv.name, a.shape(), b.shape(), a.name, b.name))
		i := r.IntN(2)
		src := []gval{a, b}[i]
		g.emit(c, "gte", src.t, src.dims, "get-tuple-element", fmt.Sprintf(", index=%d", i), tv)
	case 33, 34: // call
		if g.depth < 2 {
			g.call(c)
		}
	case 35, 36: // counting while loop
		if g.depth < 2 {
			g.while(c)
		}
	case 37: // constant arithmetic (constant folding, broadcast sinking)
		a := g.literal(c, hlo.F32, nil, []float64{float64(r.IntN(9)-4) * 0.75})
		b := g.literal(c, hlo.F32, nil, []float64{float64(1+r.IntN(3)) * []float64{1, -1}[r.IntN(2)]})
		ops := append([]string{"remainder", "divide", "power", "atan2"}, elemBinary...)
		v := g.emit(c, "k", hlo.F32, nil, ops[r.IntN(len(ops))], "", a, b)
		if r.IntN(2) == 0 {
			un := []string{"exponential", "log-plus-one", "sqrt", "cbrt", "round-nearest-afz", "round-nearest-even", "sign", "ceil", "cosine", "erf"}
			v = g.emit(c, "k", hlo.F32, nil, un[r.IntN(len(un))], "", v)
		}
		dims := g.shapes[r.IntN(len(g.shapes))]
		g.emit(c, "kb", hlo.F32, dims, "broadcast", ", dimensions={}", v)
	case 41: // the gradient of a split: zero pads of adjacent windows, summed
		a := fl()
		if len(a.dims) == 0 {
			return
		}
		d := r.IntN(len(a.dims))
		parts := 2 + r.IntN(3)
		total := a.dims[d] * parts
		z := g.splat(c, a.t, nil, 0)
		var sum gval
		for _, k := range r.Perm(parts) {
			v := a
			if k > 0 {
				v = g.floatOf(c, a.t, a.dims)
			}
			var ps []string
			dims := slices.Clone(a.dims)
			for i := range dims {
				if i == d {
					ps = append(ps, fmt.Sprintf("%d_%d", k*a.dims[d], total-(k+1)*a.dims[d]))
					dims[i] = total
				} else {
					ps = append(ps, "0_0")
				}
			}
			p := g.emit(c, "pg", a.t, dims, "pad", ", padding="+strings.Join(ps, "x"), v, z)
			if sum.name == "" {
				sum = p
			} else if r.IntN(2) == 0 {
				sum = g.emit(c, "ps", a.t, dims, "add", "", sum, p)
			} else {
				sum = g.emit(c, "ps", a.t, dims, "add", "", p, sum)
			}
		}
	case 38: // iota
		dims := g.shapes[r.IntN(len(g.shapes))]
		if len(dims) == 0 {
			return
		}
		g.emit(c, "iota", hlo.F32, dims, "iota", fmt.Sprintf(", iota_dimension=%d", r.IntN(len(dims))))
	case 39: // transpose that only moves unit dimensions
		a := fl()
		d := append([]int{1}, a.dims...)
		rs := g.emit(c, "r", a.t, d, "reshape", "", a)
		p := append(seqInts(1, len(d)), 0)
		g.emit(c, "t", a.t, permute(d, p), "transpose", ", dimensions="+ints(p), rs)
	}
}

func seqInts(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

func permute(dims, p []int) []int {
	out := make([]int, len(p))
	for i, d := range p {
		out[i] = dims[d]
	}
	return out
}

// refactor returns other dimensions with the same element count.
func (g *rgen) refactor(dims []int) []int {
	n := prod(dims)
	var fs []int
	for n > 1 {
		for f := 2; f <= n; f++ {
			if n%f == 0 {
				fs = append(fs, f)
				n /= f
				break
			}
		}
	}
	g.r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	var out []int
	for len(fs) > 0 {
		k := 1 + g.r.IntN(len(fs))
		out = append(out, prod(fs[:k]))
		fs = fs[k:]
	}
	if g.r.IntN(3) == 0 {
		out = append(out, 1)
	}
	if prod(dims) == 0 {
		return dims
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

func (g *rgen) broadcastOf(c *gcomp, a gval) gval {
	extra := 1 + g.r.IntN(2)
	rank := len(a.dims) + extra
	pos := g.r.Perm(rank)[:len(a.dims)]
	slices.Sort(pos)
	dims := make([]int, rank)
	for i := range dims {
		dims[i] = 1 + g.r.IntN(3)
	}
	for i, p := range pos {
		dims[p] = a.dims[i]
	}
	return g.emit(c, "b", a.t, dims, "broadcast", ", dimensions="+ints(pos), a)
}

func fullWindow(dims []int) [][3]int {
	w := make([][3]int, len(dims))
	for i, d := range dims {
		w[i] = [3]int{0, d, 1}
	}
	return w
}

func (g *rgen) emitSlice(c *gcomp, a gval, w [][3]int) gval {
	dims := make([]int, len(w))
	var parts []string
	for i, s := range w {
		dims[i] = (s[1] - s[0] + s[2] - 1) / s[2]
		if s[2] == 1 {
			parts = append(parts, fmt.Sprintf("[%d:%d]", s[0], s[1]))
		} else {
			parts = append(parts, fmt.Sprintf("[%d:%d:%d]", s[0], s[1], s[2]))
		}
	}
	return g.emit(c, "s", a.t, dims, "slice", ", slice={"+strings.Join(parts, ", ")+"}", a)
}

func (g *rgen) sliceOf(c *gcomp, a gval, full bool) gval {
	w := fullWindow(a.dims)
	if !full {
		for i, d := range a.dims {
			if d == 0 {
				continue
			}
			lo := g.r.IntN(d)
			hi := lo + 1 + g.r.IntN(d-lo)
			w[i] = [3]int{lo, hi, 1 + g.r.IntN(2)}
		}
	}
	return g.emitSlice(c, a, w)
}

func (g *rgen) reducer(op string, t hlo.ElemType) string {
	name := op + "_" + t.String()
	if !g.redOK[name] {
		g.redOK[name] = true
		s := t.String()
		g.comps = append(g.comps, fmt.Sprintf("%%%s (%s.a: %s[], %s.b: %s[]) -> %s[] {\n  %%%s.a = %s[] parameter(0)\n  %%%s.b = %s[] parameter(1)\n  ROOT %%%s.r = %s[] %s(%%%s.a, %%%s.b)\n}\n",
			name, name, s, name, s, s, name, s, name, s, name, s, op, name, name))
	}
	return name
}

func (g *rgen) reduceOf(c *gcomp, a gval) gval {
	ops := []string{"add", "maximum", "minimum", "multiply"}
	ids := []float64{0, -1e30, 1e30, 1}
	k := g.r.IntN(len(ops))
	init := ids[k]
	if k == 1 && g.r.IntN(2) == 0 {
		init = math.Inf(-1)
	}
	if g.r.IntN(4) == 0 {
		init = float64(g.r.IntN(3))
	}
	iv := g.literal(c, a.t, nil, []float64{init})
	var dims, kept []int
	for i, d := range a.dims {
		if g.r.IntN(2) == 0 || (i == len(a.dims)-1 && len(dims) == 0) {
			dims = append(dims, i)
		} else {
			kept = append(kept, d)
		}
	}
	return g.emit(c, "red", a.t, kept, "reduce", fmt.Sprintf(", dimensions=%s, to_apply=%%%s", ints(dims), g.reducer(ops[k], a.t)), a, iv)
}

func (g *rgen) dot(c *gcomp) {
	r := g.r
	if r.IntN(2) == 0 {
		g.dot3(c)
		return
	}
	m, k, n := 1+r.IntN(4), 1+r.IntN(4), 1+r.IntN(4)
	a := g.floatOf(c, hlo.F32, []int{m, k})
	b := g.floatOf(c, hlo.F32, []int{k, n})
	lc, rc := 1, 0
	if r.IntN(2) == 0 {
		a = g.emit(c, "t", a.t, []int{k, m}, "transpose", ", dimensions={1,0}", a)
		lc = 0
	}
	if r.IntN(2) == 0 {
		b = g.emit(c, "t", b.t, []int{n, k}, "transpose", ", dimensions={1,0}", b)
		rc = 1
	}
	d := g.emit(c, "dot", hlo.F32, []int{m, n}, "dot", fmt.Sprintf(", lhs_contracting_dims={%d}, rhs_contracting_dims={%d}", lc, rc), a, b)
	if r.IntN(2) == 0 {
		g.emit(c, "t", d.t, []int{n, m}, "transpose", ", dimensions={1,0}", d)
	}
}

// dot3 emits dots of transposed rank-3 arrays: a batch dot of [b, m, k] and [b, k, n],
// and a dot of [m1, m2, k] (two free dimensions, whose order a transpose may swap) with
// [k, n], each operand transposed by a random permutation, so that transpose-folding
// meets every permutation.
func (g *rgen) dot3(c *gcomp) {
	r := g.r
	b, m, k, n := 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(3), 1+r.IntN(3)
	if r.IntN(2) == 0 {
		x := g.floatOf(c, hlo.F32, []int{b, m, k})
		y := g.floatOf(c, hlo.F32, []int{b, k, n})
		px, py := r.Perm(3), r.Perm(3)
		tx := g.emit(c, "t", hlo.F32, permute(x.dims, px), "transpose", ", dimensions="+ints(px), x)
		ty := g.emit(c, "t", hlo.F32, permute(y.dims, py), "transpose", ", dimensions="+ints(py), y)
		ix, iy := invert(px), invert(py) // where each original dimension went
		g.emit(c, "dot", hlo.F32, []int{b, m, n}, "dot", fmt.Sprintf(", lhs_batch_dims={%d}, lhs_contracting_dims={%d}, rhs_batch_dims={%d}, rhs_contracting_dims={%d}",
			ix[0], ix[2], iy[0], iy[1]), tx, ty)
		return
	}
	m2 := 1 + r.IntN(3)
	x := g.floatOf(c, hlo.F32, []int{m, m2, k})
	y := g.floatOf(c, hlo.F32, []int{k, n})
	px := r.Perm(3)
	tx := g.emit(c, "t", hlo.F32, permute(x.dims, px), "transpose", ", dimensions="+ints(px), x)
	ix := invert(px)
	out := []int{m, m2, n}
	if ix[0] > ix[1] {
		out = []int{m2, m, n}
	}
	g.emit(c, "dot", hlo.F32, out, "dot", fmt.Sprintf(", lhs_contracting_dims={%d}, rhs_contracting_dims={0}", ix[2]), tx, y)
}

// call outlines a few random instructions into a computation and calls it.
func (g *rgen) call(c *gcomp) {
	a, ok := g.pick(c, isFloatVal)
	if !ok {
		return
	}
	sub := &gcomp{name: g.name("f"), sub: true}
	p := g.param(sub, a.t, a.dims)
	g.depth++
	for i := 0; i < 2+g.r.IntN(4); i++ {
		g.step(sub)
	}
	g.depth--
	root, _ := g.pick(sub, func(v gval) bool { return v.name != "" && v.t != hlo.PRED })
	if root.name == "" {
		root = p
	}
	g.comps = append(g.comps, g.finish(sub, root, nil))
	g.emit(c, "call", root.t, root.dims, "call", ", to_apply=%"+sub.name, a)
}

// while emits a counting loop over (i, x, acc, bound, y): i += 1 while i < bound (a
// constant in the condition or the loop-invariant element), y updated by itself, x by a
// random elementwise op (of y, sometimes: then y is live although nothing after the loop
// reads it), acc an accumulator no one reads.
func (g *rgen) while(c *gcomp) {
	x, ok := g.pick(c, func(v gval) bool { return v.t == hlo.F32 })
	if !ok {
		return
	}
	xs := x.shape()
	st := fmt.Sprintf("(s32[], %s, %s, s32[], %s)", xs, xs, xs)
	trips := g.r.IntN(4)
	start := g.r.IntN(3)
	inCond := g.r.IntN(2) == 0

	cp := g.name("cs")
	ci, cn, ck, lt := g.name("ci"), g.name("cn"), g.name("ck"), g.name("lt")
	bound := cn
	if inCond {
		bound = ck
	}
	cond := []string{
		fmt.Sprintf("  %%%s = %s parameter(0)", cp, st),
		fmt.Sprintf("  %%%s = s32[] get-tuple-element(%%%s), index=0", ci, cp),
		fmt.Sprintf("  %%%s = s32[] get-tuple-element(%%%s), index=3", cn, cp),
		fmt.Sprintf("  %%%s = s32[] constant(%d)", ck, start+trips),
		fmt.Sprintf("  ROOT %%%s = pred[] compare(%%%s, %%%s), direction=LT", lt, ci, bound),
	}
	condName := g.name("cond")
	g.comps = append(g.comps, fmt.Sprintf("%%%s (%s: %s) -> pred[] {\n%s\n}\n", condName, cp, st, strings.Join(cond, "\n")))

	body := &gcomp{name: g.name("body"), sub: true}
	bp := g.name("bs")
	bi, one, next, bx, acc, bn, by := g.name("bi"), g.name("one"), g.name("next"), g.name("bx"), g.name("acc"), g.name("bn"), g.name("by")
	body.lines = []string{
		fmt.Sprintf("  %%%s = %s parameter(0)", bp, st),
		fmt.Sprintf("  %%%s = s32[] get-tuple-element(%%%s), index=0", bi, bp),
		fmt.Sprintf("  %%%s = s32[] constant(1)", one),
		fmt.Sprintf("  %%%s = s32[] add(%%%s, %%%s)", next, bi, one),
		fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=1", bx, xs, bp),
		fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=2", acc, xs, bp),
		fmt.Sprintf("  %%%s = s32[] get-tuple-element(%%%s), index=3", bn, bp),
		fmt.Sprintf("  %%%s = %s get-tuple-element(%%%s), index=4", by, xs, bp),
	}
	bxv := gval{name: bx, t: hlo.F32, dims: x.dims}
	byv := gval{name: by, t: hlo.F32, dims: x.dims}
	body.pool = []gval{bxv}
	half := g.splat(body, hlo.F32, x.dims, 0.5)
	other := half
	if g.r.IntN(2) == 0 {
		other = byv
	}
	upd := g.emit(body, "upd", hlo.F32, x.dims, elemBinary[g.r.IntN(len(elemBinary))], "", bxv, other)
	if g.r.IntN(2) == 0 {
		upd = g.emit(body, "upd", hlo.F32, x.dims, "tanh", "", upd)
	}
	ny := g.emit(body, "ny", hlo.F32, x.dims, "multiply", "", byv, half)
	acc2 := g.emit(body, "acc", hlo.F32, x.dims, "add", "", gval{name: acc}, bxv)
	root := g.name("bt")
	body.lines = append(body.lines, fmt.Sprintf("  ROOT %%%s = %s tuple(%%%s, %%%s, %%%s, %%%s, %%%s)", root, st, next, upd.name, acc2.name, bn, ny.name))
	g.comps = append(g.comps, fmt.Sprintf("%%%s (%s: %s) -> %s {\n%s\n}\n", body.name, bp, st, st, strings.Join(body.lines, "\n")))

	i0 := g.literal(c, hlo.S32, nil, []float64{float64(start)})
	nb := g.literal(c, hlo.S32, nil, []float64{float64(start + trips)})
	y0 := g.floatOf(c, hlo.F32, x.dims)
	init := g.name("init")
	c.lines = append(c.lines, fmt.Sprintf("  %%%s = %s tuple(%%%s, %%%s, %%%s, %%%s, %%%s)", init, st, i0.name, x.name, x.name, nb.name, y0.name))
	w := g.name("while")
	c.lines = append(c.lines, fmt.Sprintf("  %%%s = %s while(%%%s), condition=%%%s, body=%%%s", w, st, init, condName, body.name))
	g.emit(c, "res", hlo.F32, x.dims, "get-tuple-element", ", index=1", gval{name: w})
}

// finish renders c with root (or a tuple of roots when several).
func (g *rgen) finish(c *gcomp, root gval, extra []gval) string {
	var b strings.Builder
	var sig []string
	for _, p := range c.params {
		sig = append(sig, p.name+": "+p.shape())
	}
	rs := root.shape()
	rootLine := ""
	if len(extra) > 0 {
		all := append([]gval{root}, extra...)
		var names, shapes []string
		for _, v := range all {
			names = append(names, "%"+v.name)
			shapes = append(shapes, v.shape())
		}
		rs = "(" + strings.Join(shapes, ", ") + ")"
		rootLine = fmt.Sprintf("  ROOT %%%s = %s tuple(%s)", g.name("out"), rs, strings.Join(names, ", "))
	}
	fmt.Fprintf(&b, "%%%s (%s) -> %s {\n", c.name, strings.Join(sig, ", "), rs)
	for _, l := range c.lines {
		if rootLine == "" && strings.HasPrefix(l, "  %"+root.name+" =") {
			l = "  ROOT " + l[2:]
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if rootLine != "" {
		b.WriteString(rootLine + "\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// randomModule generates a module of about n instructions from seed.
func randomModule(seed uint64, n int) string {
	g := &rgen{r: rand.New(rand.NewPCG(seed, 3)), redOK: map[string]bool{}}
	for i := 0; i < 3; i++ {
		rank := g.r.IntN(4)
		dims := make([]int, rank)
		for j := range dims {
			dims[j] = 1 + g.r.IntN(4)
		}
		g.shapes = append(g.shapes, dims)
	}
	entry := &gcomp{name: "main"}
	types := []hlo.ElemType{hlo.F32, hlo.F32, hlo.F32, hlo.F64, hlo.BF16}
	g.param(entry, types[g.r.IntN(len(types))], g.shapes[0])
	for len(entry.lines) < n {
		g.step(entry)
	}
	// the root: a tuple of most values nothing reads (the rest is dead code)
	var outs []gval
	for _, v := range entry.pool {
		if v.t != hlo.PRED && !entry.used[v.name] && g.r.IntN(5) > 0 {
			outs = append(outs, v)
		}
	}
	if len(outs) == 0 {
		outs = append(outs, entry.pool[len(entry.pool)-1])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "HloModule random_%d\n\n", seed)
	for _, c := range g.comps {
		b.WriteString(c)
		b.WriteByte('\n')
	}
	b.WriteString("ENTRY " + g.finish(entry, outs[0], outs[1:]))
	return b.String()
}

// randomModules is the number of generated modules TestRandomModules checks per size.
const randomModules = 150

func TestRandomModules(t *testing.T) {
	passes := append(All(), Default())
	hits := map[string]int{}
	count := uint64(randomModules)
	if raceEnabled {
		count /= 5
	}
	for _, size := range []int{12, 40} {
		for seed := uint64(1); seed <= count; seed++ {
			src := randomModule(seed*100+uint64(size), size)
			m, err := hlo.Parse("random.hlo", []byte(src))
			if err != nil {
				t.Fatalf("seed %d: the generator wrote an invalid module: %v\n%s", seed, err, src)
			}
			if err := hlo.Verify(m); err != nil {
				t.Fatalf("seed %d: the generator wrote a module that does not verify: %v\n%s", seed, err, src)
			}
			for _, p := range passes {
				out, changed := runChecked(t, p, m)
				if changed {
					hits[p.Name]++
				}
				if p.Name == "simplify" {
					if again, err := p.Run(out); err != nil || again {
						t.Fatalf("seed %d: simplify did not reach a fixed point (changed=%v, err=%v)", seed, again, err)
					}
				}
			}
		}
	}
	// the default group and each of the 14 simplifiers (LegacyPasses; the default group's
	// passes but sort- and conditional-simplifier) must have found work in at least 10% of
	// the modules, or the test proves little about it; the passes after XLA's expanders and
	// mergers (xla.go) rewrite ops the generator rarely writes (batch norm, map,
	// collectives), and TestXLAPassCases covers them with XLA's cases
	inDefault := map[string]bool{"simplify": true}
	for _, p := range LegacyPasses() {
		inDefault[p.Name] = true
	}
	for _, p := range passes {
		t.Logf("%-28s changed %3d of %d modules", p.Name, hits[p.Name], 2*count)
		if want := int(2 * count / 10); hits[p.Name] < want && inDefault[p.Name] {
			t.Errorf("%s changed only %d of the %d random modules (want ≥ %d)", p.Name, hits[p.Name], 2*count, want)
		}
	}
}
