package spmd

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// spec is how a value is split over the devices, reduced to what the cost of the
// per-device program depends on: the number of tiles along each dimension of an array
// (nil tiles: replicated), manual (already per-device), or one spec per tuple element.
// A nil *spec is a value propagation has not reached yet.
type spec struct {
	tiles  []int
	manual bool
	elems  []*spec
}

func replicated() *spec { return &spec{} }

// tile is the tile count along dimension d (1 when not tiled).
func (s *spec) tile(d int) int {
	if s == nil || d >= len(s.tiles) || d < 0 {
		return 1
	}
	return s.tiles[d]
}

// weight is how specific s is: the number of tiles (summed over tuple elements); 0 for
// an unassigned value. Propagation only ever replaces a spec by a heavier one.
func (s *spec) weight() int {
	if s == nil {
		return 0
	}
	if s.elems != nil {
		w := 0
		for _, e := range s.elems {
			w += e.weight()
		}
		return w
	}
	if s.manual {
		return 1 << 30
	}
	w := 1
	for _, t := range s.tiles {
		w *= t
	}
	return w
}

// numTiles is the product of an array spec's tile counts.
func (s *spec) numTiles() int {
	if s == nil || s.manual || s.elems != nil {
		return 1
	}
	return s.weight()
}

func (s *spec) equal(o *spec) bool {
	if s == nil || o == nil {
		return s == o || s.isReplicated() && o.isReplicated()
	}
	if s.manual || o.manual {
		return s.manual == o.manual
	}
	if s.elems != nil || o.elems != nil {
		if len(s.elems) != len(o.elems) {
			return false
		}
		for i := range s.elems {
			if !s.elems[i].equal(o.elems[i]) {
				return false
			}
		}
		return true
	}
	n := max(len(s.tiles), len(o.tiles))
	for d := range n {
		if s.tile(d) != o.tile(d) {
			return false
		}
	}
	return true
}

func (s *spec) isReplicated() bool {
	if s == nil {
		return true
	}
	if s.manual || s.elems != nil {
		return false
	}
	return s.numTiles() == 1
}

// arr builds an array spec from tile counts (replicated when all are 1).
func arr(tiles []int) *spec {
	for _, t := range tiles {
		if t > 1 {
			return &spec{tiles: tiles}
		}
	}
	return replicated()
}

// ones returns n tile counts of 1.
func ones(n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = 1
	}
	return t
}

// tilesOf returns s's tile counts for an array of rank r (a fresh slice).
func (s *spec) tilesOf(r int) []int {
	t := ones(r)
	for d := range t {
		t[d] = s.tile(d)
	}
	return t
}

func (s *spec) String() string {
	switch {
	case s == nil:
		return "?"
	case s.manual:
		return "manual"
	case s.elems != nil:
		parts := make([]string, len(s.elems))
		for i, e := range s.elems {
			parts[i] = e.String()
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case s.isReplicated():
		return "replicated"
	}
	parts := make([]string, len(s.tiles))
	for i, t := range s.tiles {
		parts[i] = strconv.Itoa(t)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// localShape is the per-device shape of a value of global shape g under s: each
// dimension ceil-divided by its tile count (HloSharding::TileShape). Manual values are
// already per-device.
func localShape(g hlo.Shape, s *spec) hlo.Shape {
	out := g.Clone()
	if s == nil || s.manual {
		return out
	}
	if g.IsTuple() {
		for i := range out.Tuple {
			var e *spec
			if i < len(s.elems) {
				e = s.elems[i]
			}
			out.Tuple[i] = localShape(g.Tuple[i], e)
		}
		return out
	}
	for d := range out.Dims {
		if t := s.tile(d); t > 1 {
			out.Dims[d] = (out.Dims[d] + t - 1) / t
		}
	}
	return out
}

// fromSharding turns an annotation on a value of shape g into a spec, re-tiled from the
// module's p devices to n (see retile). pos names the annotation in errors.
func fromSharding(sh *hlo.Sharding, g hlo.Shape, p, n int, pos string) (*spec, error) {
	switch sh.Kind {
	case hlo.ShardReplicated, hlo.ShardMaximal:
		return replicated(), nil
	case hlo.ShardUnknown:
		return nil, nil
	case hlo.ShardManual:
		return &spec{manual: true}, nil
	case hlo.ShardNamed:
		return nil, fmt.Errorf("%s: named sharding {%s}: not supported (JAX writes devices=[...] in HLO dumps)", pos, sh.Raw)
	case hlo.ShardTuple:
		leaves := sh.Tuple
		k := 0
		var build func(g hlo.Shape) (*spec, error)
		build = func(g hlo.Shape) (*spec, error) {
			if g.IsTuple() {
				s := &spec{elems: make([]*spec, len(g.Tuple))}
				for i, e := range g.Tuple {
					var err error
					if s.elems[i], err = build(e); err != nil {
						return nil, err
					}
				}
				return s, nil
			}
			if k >= len(leaves) {
				return nil, fmt.Errorf("%s: tuple sharding has %d elements, the shape %s more leaves", pos, len(leaves), g)
			}
			l := leaves[k]
			k++
			return fromSharding(l, g, p, n, pos)
		}
		if !g.IsTuple() {
			return replicated(), nil // an outfeed's operand sharding: nothing to split here
		}
		return build(g)
	}
	// Tiled.
	if nd := sh.NumDevices(); nd != p {
		return nil, fmt.Errorf("%s: sharding %s names %d devices, but the module has num_partitions=%d", pos, sh, nd, p)
	}
	if sh.IsManualSubgroup() {
		return &spec{manual: true}, nil
	}
	if g.IsTuple() {
		return nil, fmt.Errorf("%s: tiled sharding %s on the tuple %s", pos, sh, g)
	}
	tiles, err := retile(sh.TileDims, p, n)
	if err != nil {
		return nil, fmt.Errorf("%s: sharding %s: %w", pos, sh, err)
	}
	r := sh.DataRank()
	if r != g.Rank() {
		return nil, fmt.Errorf("%s: sharding %s tiles %d dimensions of the rank-%d %s", pos, sh, r, g.Rank(), g)
	}
	return arr(tiles[:r]), nil
}

// retile maps a tile assignment over p devices onto n devices (n divides p): the factor
// p/n is divided out of the tile dimensions from the last (the subgroup, then the minor
// mesh axes) to the first, as a mesh loses its minor axis first when fewer devices run
// the program. A factor that cannot be divided out is an error.
func retile(dims []int, p, n int) ([]int, error) {
	out := slices.Clone(dims)
	if n == p {
		return out, nil
	}
	f := p / n
	for i := len(out) - 1; i >= 0 && f > 1; i-- {
		g := gcd(out[i], f)
		out[i] /= g
		f /= g
	}
	if f != 1 {
		return nil, fmt.Errorf("tile assignment %v cannot be spread over %d devices", dims, n)
	}
	return out, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// reshapeTiles maps tile counts ft of an array of dims from onto a reshape to dims to:
// a tiled dimension keeps its tiles when it is the major non-trivial dimension of its
// group of merged or split dimensions and the target's major dimension is divisible by
// them (hlo_sharding_util's ReshapeSharding, restricted to one tiled dimension per
// group). ok is false when the tiling does not carry over.
func reshapeTiles(from, to []int, ft []int) (tt []int, ok bool) {
	tt = ones(len(to))
	i, j := 0, 0
	for {
		for i < len(from) && from[i] == 1 {
			if ft[i] > 1 {
				return nil, false
			}
			i++
		}
		for j < len(to) && to[j] == 1 {
			j++
		}
		if i >= len(from) || j >= len(to) {
			return tt, i >= len(from) && j >= len(to)
		}
		gi, gj := i, j
		pf, pt := from[i], to[j]
		i++
		j++
		for pf != pt {
			if pf < pt {
				if i >= len(from) {
					return nil, false
				}
				pf *= from[i]
				i++
			} else {
				if j >= len(to) {
					return nil, false
				}
				pt *= to[j]
				j++
			}
		}
		tiled := -1
		for k := gi; k < i; k++ {
			if ft[k] > 1 {
				if tiled >= 0 {
					return nil, false
				}
				tiled = k
			}
		}
		if tiled < 0 {
			continue
		}
		for k := gi; k < tiled; k++ {
			if from[k] != 1 {
				return nil, false
			}
		}
		b := gj
		for b < j && to[b] == 1 {
			b++
		}
		t := ft[tiled]
		if to[b]%t != 0 || from[tiled]%t != 0 {
			return nil, false
		}
		tt[b] = t
	}
}

// intSetAttr parses an attribute "{1,2}" kept in Extra (nil when absent).
func intSetAttr(in *hlo.Instruction, key string) []int {
	xs, _ := in.IntSetAttr(key)
	return xs
}

func setIntSetAttr(in *hlo.Instruction, key string, xs []int) {
	v := hlo.IntSet(xs)
	for i, a := range in.Extra {
		if a.Key == key {
			in.Extra[i].Value = v
			return
		}
	}
	in.Extra = append(in.Extra, hlo.Attr{Key: key, Value: v})
}
