package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/zoo"
)

// DispatchKind marks a dispatch table file (DispatchTable.Kind), so that `sim --config`
// tells it from a config.
const DispatchKind = "micro-kernel-dispatch"

// DispatchTable is the dispatcher of a micro-kernel run (RunMicro): per kernel family, the
// values of the range [Lo, Hi] split into intervals, each with the micro-kernel its values
// run (or the default compile's tile and flags). It is a decision tree over the dynamic
// value, flattened: `tune --micro-kernels --out FILE` writes it and `tpucost sim SRC
// --shapes NAME=V --config FILE` applies it at any V of the range (Config).
type DispatchTable struct {
	Kind    string `json:"kind"` // DispatchKind
	Program string `json:"program"`
	Dim     string `json:"dim"`
	Chip    string `json:"chip"`
	Lo      int    `json:"lo"`
	Hi      int    `json:"hi"`
	// Families maps a kernel family (the kernel's name) to its intervals, ascending and
	// disjoint; a value no interval holds runs the default.
	Families map[string][]DispatchRule `json:"families"`
}

// DispatchRule is one interval of a family's dispatch: values Lo..Hi run Tile and Flags, or
// the default compile's choice when Default.
type DispatchRule struct {
	Lo      int        `json:"lo"`
	Hi      int        `json:"hi"`
	Default bool       `json:"use_default"`
	Tile    cost.Tile  `json:"tile,omitempty"`
	Flags   cost.Flags `json:"tile_flags"`
}

// add extends family fam's last interval with value v when it runs the same choice, else
// opens a new one; values come ascending.
func (t *DispatchTable) add(fam string, v int, o microOpt, isDefault bool) {
	if t.Families == nil {
		t.Families = map[string][]DispatchRule{}
	}
	r := DispatchRule{Lo: v, Hi: v, Default: isDefault}
	if !isDefault {
		r.Tile, r.Flags = o.mk.Tile, o.mk.Flags
	}
	rs := t.Families[fam]
	if n := len(rs); n > 0 {
		last := &rs[n-1]
		if last.Hi == v-1 && last.Default == r.Default && last.Tile.Equal(r.Tile) && last.Flags == r.Flags {
			last.Hi = v
			return
		}
	}
	t.Families[fam] = append(rs, r)
}

// finish drops families that run the default everywhere (the table holds the decisions).
func (t *DispatchTable) finish() {
	t.Kind = DispatchKind
	for f, rs := range t.Families {
		if !slices.ContainsFunc(rs, func(r DispatchRule) bool { return !r.Default }) {
			delete(t.Families, f)
		}
	}
}

// Rule returns family fam's rule at value v, and whether there is one.
func (t *DispatchTable) Rule(fam string, v int) (DispatchRule, bool) {
	for _, r := range t.Families[fam] {
		if r.Lo <= v && v <= r.Hi {
			return r, true
		}
	}
	return DispatchRule{}, false
}

// Config is the config that dispatches p, the default compile of the program at value v:
// each tile decision (by its first kernel's name, the family) takes the rule's tile and
// flags when the tile is among its options at v; a family without a rule, a default rule
// or a tile not valid at v keeps the default. A v outside [Lo, Hi] is an error.
func (t *DispatchTable) Config(p *compiler.Program, v int) (*compiler.Config, error) {
	if v < t.Lo || v > t.Hi {
		return nil, fmt.Errorf("%s=%d is outside the dispatch table's range %d..%d", t.Dim, v, t.Lo, t.Hi)
	}
	cfg := compiler.NewConfig()
	for _, tc := range p.Space.Tile {
		r, ok := t.Rule(tc.Kernels[0], v)
		if !ok || r.Default || !slices.ContainsFunc(tc.Options, func(x cost.Tile) bool { return x.Equal(r.Tile) }) {
			continue
		}
		cfg.Set(compiler.KindTile, tc.Key, compiler.Entry{Tile: r.Tile})
		cfg.Set(compiler.KindFlags, tc.Key, compiler.Entry{Flags: r.Flags})
	}
	return cfg, nil
}

// ParseDispatchTable reads a dispatch table file's bytes; ok is false (with no error) when
// data is JSON of another kind (a config).
func ParseDispatchTable(data []byte) (t *DispatchTable, ok bool, err error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.Kind != DispatchKind {
		return nil, false, nil
	}
	t = &DispatchTable{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, true, fmt.Errorf("dispatch table: %w", err)
	}
	if t.Lo < 1 || t.Hi < t.Lo || t.Dim == "" {
		return nil, true, fmt.Errorf("dispatch table: want a dim and a range lo..hi with 1 <= lo <= hi, got %q %d..%d", t.Dim, t.Lo, t.Hi)
	}
	return t, true, nil
}

// DispatchSource wraps compile (the CLI's source compiler) so that a config path naming a
// dispatch table file (`tune --micro-kernels --out FILE`) applies the table: src is built
// at shapes (which must size the table's dimension, NAME=V with V in its range), compiled
// with the defaults, then compiled again with the table's config at V (DispatchTable.Config).
// Any other config file is compiled as compile would (the file is read once); an empty
// path, or one that cannot be read, goes to compile as it is.
func DispatchSource(ctx context.Context, compile compiler.CompileSource) compiler.CompileSource {
	return func(src, shapes, cfgPath string, opts compiler.Options) (*compiler.Program, error) {
		if cfgPath == "" {
			return compile(src, shapes, cfgPath, opts)
		}
		data, err := inputfile.ReadFile(ctx, cfgPath, inputfile.ConfigJSON)
		if err != nil {
			return compile(src, shapes, cfgPath, opts) // its own error names the file
		}
		t, ok, err := ParseDispatchTable(data)
		if !ok {
			// A compiler config: compile with what was read (a second read would find a
			// FIFO empty), as compiler.CompileFileContext does with a path.
			m, err := zoo.ResolveShapesContext(ctx, src, shapes)
			if err != nil {
				return nil, err
			}
			cfg, err := compiler.ParseConfig(cfgPath, data)
			if err != nil {
				return nil, err
			}
			opts.Strict = true
			return compiler.Compile(m, cfg, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", cfgPath, err)
		}
		if t.Program != src {
			return nil, fmt.Errorf("--config %s: the dispatch table is for %s, not %s", cfgPath, t.Program, src)
		}
		v := 0
		if ss, err := zoo.ParseShapes(shapes); err == nil {
			for _, d := range ss {
				if d.Name == t.Dim {
					v = d.Value
				}
			}
		}
		if v == 0 {
			return nil, fmt.Errorf("--config %s is a dispatch table over %s=%d..%d: give --shapes %s=V", cfgPath, t.Dim, t.Lo, t.Hi, t.Dim)
		}
		m, err := zoo.ResolveShapesContext(ctx, src, shapes)
		if err != nil {
			return nil, err
		}
		def, err := compiler.Compile(m, nil, opts)
		if err != nil {
			return nil, err
		}
		cfg, err := t.Config(def, v)
		if err != nil {
			return nil, fmt.Errorf("--config %s: %w", cfgPath, err)
		}
		return compiler.Compile(m, cfg, opts)
	}
}

// famShape is a family's structure at one shape, what tells two kernels of one computation
// apart from two kernels that only share a name: the name without its instance number, the
// kernel's kind, hero op and fused op count, and its tiled dimensions' names and sizes.
type famShape struct {
	stem  string
	kind  string
	names []string
	sizes []int
}

// shapeOf is f's structure (from its default option's plan); ok is false without one.
func shapeOf(f *microFam) (famShape, bool) {
	p := f.opts[f.def].p
	if p.Info == nil {
		return famShape{}, false
	}
	stem := f.name
	if i := strings.LastIndexByte(stem, '.'); i > 0 {
		if _, err := strconv.Atoi(stem[i+1:]); err == nil {
			stem = stem[:i]
		}
	}
	s := famShape{stem: stem, kind: fmt.Sprintf("%v|%v|%d", p.Info.Kind, p.Info.Hero, p.Info.NumOps)}
	for _, d := range p.Info.Dims {
		s.names = append(s.names, d.Name)
		s.sizes = append(s.sizes, d.Size)
	}
	return s, true
}

// sameComputation reports whether a and b are one computation at two values of the
// dynamic dimension: the same stem, kind and dimensions, their sizes equal but along at
// most one dimension (the dynamic one); dist is the log ratio of that dimension's sizes.
func sameComputation(a, b famShape) (dist float64, ok bool) {
	if a.stem != b.stem || a.kind != b.kind || !slices.Equal(a.names, b.names) {
		return 0, false
	}
	differ := 0
	for i := range a.sizes {
		if a.sizes[i] != b.sizes[i] {
			differ++
			dist = math.Abs(math.Log(float64(a.sizes[i]) / float64(b.sizes[i])))
		}
	}
	return dist, differ <= 1
}

// familyAliases maps, per family of the tuned shapes, the names it runs under to its
// structure at each: the index a held-out value's family is matched against (aliasFam).
type familyAliases struct {
	names  []string
	shapes []famShape
}

// newFamilyAliases indexes the families of the tuned shapes.
func newFamilyAliases(shapes []*microShape) *familyAliases {
	a := &familyAliases{}
	for _, sh := range shapes {
		for _, f := range sh.fams {
			if s, ok := shapeOf(f); ok {
				a.names = append(a.names, f.name)
				a.shapes = append(a.shapes, s)
			}
		}
	}
	return a
}

// aliasFam is the family f dispatches under model m. A family is its kernel's name, but a
// compiler numbers its fusions in order, so where the program's length follows the
// dynamic value (an unrolled recurrence) one name is a different computation at
// different values (the LSTM's output projection is fusion.add.2T+1 at seq=T, a recurrent
// step at every larger T), and a value never tuned may hold a name whose measurements are
// of another computation. When f's default micro-kernel was not measured near f's charge
// under its own name, f is re-keyed under the name of the tuned family of the same
// computation (sameComputation; the nearest in the dynamic dimension's size, then the
// first name) under which it was: its options are the same micro-kernels (boxes and flags)
// at f's own charge, so the model's observations of that family carry to it as they carry
// between tuned values. f is returned as it is when it was measured under its own name or
// no tuned family of its computation was measured near.
func (a *familyAliases) aliasFam(m *MicroCostModel, f *microFam) *microFam {
	if d := &f.opts[f.def]; m.MeasuredNear(d.mk, d.work, nearRatio) {
		return f
	}
	s, ok := shapeOf(f)
	if !ok {
		return f
	}
	best, bestD := "", math.Inf(1)
	for i, n := range a.names {
		if n == f.name {
			continue
		}
		dist, ok := sameComputation(s, a.shapes[i])
		if !ok || dist > bestD || (dist == bestD && n >= best) {
			continue
		}
		d := f.opts[f.def].mk
		d.Family = n
		if !m.MeasuredNear(d, f.opts[f.def].work, nearRatio) {
			continue
		}
		best, bestD = n, dist
	}
	if best == "" {
		return f
	}
	g := *f
	g.name = best
	g.opts = slices.Clone(f.opts)
	for i := range g.opts {
		g.opts[i].mk.Family = best
	}
	return &g
}
