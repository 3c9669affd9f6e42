package zoo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// MaxDimValue bounds every --shapes value: far above any sequence length of the zoo, and
// small enough that no size computation overflows. A model's own bound (Dim.Max) may be
// lower.
const MaxDimValue = 1 << 16

// Dim is a dynamic dimension a zoo model declares: its name ("seq", the sequence length),
// the size the model's name carries (Default) and the largest size its builder accepts
// (Max; e.g. BERT's 512 learned positions).
type Dim struct {
	Name    string `json:"name"`
	Default int    `json:"default"`
	Max     int    `json:"max"`
}

// DimValue sizes one named dynamic dimension.
type DimValue struct {
	Name  string
	Value int
}

// Shapes are the sizes --shapes gives, in the order given, one per dimension name.
type Shapes []DimValue

// String is the suffix a sized program's name carries: "seq=64", "d0=3,d1=7".
func (s Shapes) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprintf("%s=%d", d.Name, d.Value)
	}
	return strings.Join(parts, ",")
}

// ParseShapes parses a --shapes value: NAME=V pairs separated by commas, each V a positive
// integer at most MaxDimValue, each name once. A value list for one name ("seq=64,128")
// is refused: a program is built at one shape. Errors do not name the flag; callers do.
func ParseShapes(s string) (Shapes, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty; want NAME=V (e.g. seq=64)")
	}
	var out Shapes
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, val, ok := strings.Cut(item, "=")
		name = strings.TrimSpace(name)
		switch {
		case item == "":
			return nil, fmt.Errorf("%q: an empty item (a stray comma)", s)
		case !ok && len(out) > 0:
			return nil, fmt.Errorf("%q: one value per dimension, got a list for %s (a list of values is for tune: a shape-generic run)", s, out[len(out)-1].Name)
		case !ok || name == "":
			return nil, fmt.Errorf("%q: want NAME=V (e.g. seq=64)", item)
		}
		v, err := strconv.Atoi(strings.TrimSpace(val))
		if err != nil || v < 1 || v > MaxDimValue {
			return nil, fmt.Errorf("%s: %q is not an integer in [1, %d]", name, val, MaxDimValue)
		}
		if slices.ContainsFunc(out, func(d DimValue) bool { return d.Name == name }) {
			return nil, fmt.Errorf("%s given twice", name)
		}
		out = append(out, DimValue{name, v})
	}
	return out, nil
}

// ShapeList is a --shapes value listing several sizes of one dynamic dimension: the input
// of a shape-generic tuning run (tune.RunShapes).
type ShapeList struct {
	Name   string
	Values []int // ascending, distinct
	// Range is the value as given in a range form (LO..HI or uniform:LO-HI:N:SEED;
	// parseShapeRange), "" for a list; Lo and Hi are the range's bounds (zero for a list).
	Range  string
	Lo, Hi int
}

// String renders the list as --shapes takes it: "seq=64,128,256".
func (l ShapeList) String() string {
	if l.Range != "" {
		return l.Name + "=" + l.Range
	}
	vs := make([]string, len(l.Values))
	for i, v := range l.Values {
		vs[i] = strconv.Itoa(v)
	}
	return l.Name + "=" + strings.Join(vs, ",")
}

// At is the --shapes value of one size of the list: "seq=64".
func (l ShapeList) At(v int) string { return fmt.Sprintf("%s=%d", l.Name, v) }

// ParseShapeList parses a --shapes value that lists sizes of one dimension, NAME=V[,V...]:
// each V a positive integer at most MaxDimValue, none repeated; the values are returned in
// ascending order. The range forms NAME=LO..HI (every value) and
// NAME=uniform:LO-HI:N:SEED (a seeded sample) are parseShapeRange's. One value is a list of one. Several dimensions ("seq=64,d0=3") are
// refused: a shape-generic run varies one dimension. Errors do not name the flag.
func ParseShapeList(s string) (ShapeList, error) {
	if strings.TrimSpace(s) == "" {
		return ShapeList{}, fmt.Errorf("empty; want NAME=V[,V...] (e.g. seq=64,128,256)")
	}
	items := strings.Split(s, ",")
	name, first, ok := strings.Cut(strings.TrimSpace(items[0]), "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return ShapeList{}, fmt.Errorf("%q: want NAME=V[,V...] (e.g. seq=64,128,256)", strings.TrimSpace(items[0]))
	}
	if len(items) == 1 && isShapeRange(first) {
		return parseShapeRange(name, strings.TrimSpace(first))
	}
	l := ShapeList{Name: name}
	for i, item := range items {
		item = strings.TrimSpace(item)
		if i == 0 {
			item = first
		} else if strings.Contains(item, "=") {
			return ShapeList{}, fmt.Errorf("%q: a list varies one dimension, got a second (%s)", s, item)
		}
		item = strings.TrimSpace(item)
		if item == "" {
			return ShapeList{}, fmt.Errorf("%q: an empty item (a stray comma)", s)
		}
		v, err := strconv.Atoi(item)
		if err != nil || v < 1 || v > MaxDimValue {
			return ShapeList{}, fmt.Errorf("%s: %q is not an integer in [1, %d]", name, item, MaxDimValue)
		}
		if slices.Contains(l.Values, v) {
			return ShapeList{}, fmt.Errorf("%s=%d given twice", name, v)
		}
		l.Values = append(l.Values, v)
	}
	slices.Sort(l.Values)
	return l, nil
}

// WithShapes returns the model built at the given sizes of its dynamic dimensions, named
// after the model and the sizes ("bert_tiny_s128_b32@seq=64"), so that datasets and
// reports never confuse two shapes of one model. Every name must be one the model
// declares (Dynamic) and every value at most the dimension's Max. No shapes: m itself.
func (m Model) WithShapes(s Shapes) (Model, error) {
	if len(s) == 0 {
		return m, nil
	}
	seq := 0
	for _, d := range s {
		i := slices.IndexFunc(m.Dynamic, func(x Dim) bool { return x.Name == d.Name })
		if i < 0 {
			return Model{}, fmt.Errorf("%s has no dynamic dimension %q (%s)", m.Name, d.Name, m.dynamicNames())
		}
		if max := m.Dynamic[i].Max; d.Value > max {
			return Model{}, fmt.Errorf("%s=%d: %s takes %s up to %d", d.Name, d.Value, m.Name, d.Name, max)
		}
		seq = d.Value // "seq" is the only dimension a zoo model declares
	}
	name := m.Name + "@" + s.String()
	sized := m
	sized.Name = name
	sized.build = func() (*hlo.Module, error) {
		mod, err := m.buildSeq(m.Name, seq)
		if err != nil {
			return nil, err
		}
		mod.Name = name // the entry computation keeps the model's name: HLO text names carry no '@'
		return mod, nil
	}
	sized.buildSeq = nil
	sized.buildBatchSeq = nil
	sized.Dynamic = nil
	return sized, nil
}

func (m Model) dynamicNames() string {
	if len(m.Dynamic) == 0 {
		return "it declares none"
	}
	var ns []string
	for _, d := range m.Dynamic {
		ns = append(ns, d.Name)
	}
	return "it declares " + strings.Join(ns, ", ")
}

// ResolveShapes is Resolve at the sizes of a --shapes value (shapes; empty: Resolve). A
// zoo model is built at them (Model.WithShapes); an HLO file's bounded dimensions are
// sized at them (SizeBounded). Errors name the flag. A file is read under
// context.Background() (ResolveShapesContext).
func ResolveShapes(src, shapes string) (*hlo.Module, error) {
	return ResolveShapesContext(context.Background(), src, shapes)
}

// ResolveShapesContext is ResolveShapes reading a file under ctx (ResolveContext).
func ResolveShapesContext(ctx context.Context, src, shapes string) (*hlo.Module, error) {
	if shapes == "" {
		return ResolveContext(ctx, src)
	}
	s, err := ParseShapes(shapes)
	if err != nil {
		return nil, fmt.Errorf("--shapes: %w", err)
	}
	if m, isFile, err := resolveFile(ctx, src); isFile {
		if err != nil {
			return nil, err
		}
		if err := SizeBounded(m, s); err != nil {
			return nil, fmt.Errorf("--shapes: %s: %w", src, err)
		}
		return m, nil
	}
	mod, err := Lookup(src)
	if err != nil {
		return nil, err
	}
	sized, err := mod.WithShapes(s)
	if err != nil {
		return nil, fmt.Errorf("--shapes: %w", err)
	}
	return sized.Build()
}

// BoundedDim is a bounded dynamic dimension of an HLO module's entry parameters. They
// are named d0, d1, ... in the order they appear: by parameter number, then by dimension
// index within the parameter.
type BoundedDim struct {
	Name      string `json:"name"`
	Parameter string `json:"parameter"` // the parameter instruction's name
	Index     int    `json:"index"`     // the dimension's index in the parameter's shape
	Bound     int    `json:"bound"`
}

// BoundedDims lists the bounded dynamic dimensions of m's entry parameters (tuple
// parameters are not searched), named d0, d1, ...
func BoundedDims(m *hlo.Module) []BoundedDim {
	var out []BoundedDim
	for _, p := range m.Entry.Parameters() {
		for i, d := range p.Shape.Dims {
			if p.Shape.IsDynamic(i) {
				out = append(out, BoundedDim{Name: fmt.Sprintf("d%d", len(out)), Parameter: p.Name, Index: i, Bound: d})
			}
		}
	}
	return out
}

// SizeBounded sizes bounded dynamic dimensions of m at the given values and renames m
// after them ("name@d0=64"). Dimensions are named as BoundedDims names them; a value
// must be at most the dimension's bound. Every dynamic dimension of the module (any
// instruction, any computation) whose bound is a sized dimension's bound becomes static
// at its value: dimensions that share a bound are sized together (they cannot be told
// apart), and giving two of them different values is refused. The module is verified afterwards: a program whose shapes do
// not follow from the sized dimensions alone (a reshape that merges a dynamic dimension
// into another, a constant over it) is refused naming the instruction.
func SizeBounded(m *hlo.Module, s Shapes) error {
	dims := BoundedDims(m)
	byBound := map[int]int{}
	byBoundName := map[int]string{}
	for _, d := range s {
		i := slices.IndexFunc(dims, func(x BoundedDim) bool { return x.Name == d.Name })
		if i < 0 {
			if len(dims) == 0 {
				return fmt.Errorf("no dimension %q: the module has no bounded dynamic dimension (f32[<=N]) in its parameters", d.Name)
			}
			var ns []string
			for _, bd := range dims {
				ns = append(ns, fmt.Sprintf("%s (%%%s dimension %d, <=%d)", bd.Name, bd.Parameter, bd.Index, bd.Bound))
			}
			return fmt.Errorf("no dimension %q: the module's bounded dimensions are %s", d.Name, strings.Join(ns, ", "))
		}
		bd := dims[i]
		if d.Value > bd.Bound {
			return fmt.Errorf("%s=%d is above its bound %d (%%%s dimension %d)", d.Name, d.Value, bd.Bound, bd.Parameter, bd.Index)
		}
		if v, ok := byBound[bd.Bound]; ok && v != d.Value {
			return fmt.Errorf("%s and %s share the bound %d and cannot be told apart: give them the same value", byBoundName[bd.Bound], d.Name, bd.Bound)
		}
		byBound[bd.Bound], byBoundName[bd.Bound] = d.Value, d.Name
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			sizeShape(&in.Shape, byBound)
		}
	}
	if err := hlo.Verify(m); err != nil {
		return fmt.Errorf("the sized module is inconsistent (its shapes do not follow from the sized dimensions alone): %s", strings.SplitN(err.Error(), "\n", 2)[0])
	}
	m.Name += "@" + s.String()
	return nil
}

func sizeShape(s *hlo.Shape, byBound map[int]int) {
	for i := range s.Tuple {
		sizeShape(&s.Tuple[i], byBound)
	}
	if s.Dynamic == nil {
		return
	}
	dyn := append([]bool(nil), s.Dynamic...)
	dims := append([]int(nil), s.Dims...)
	any := false
	for i := range dims {
		if !dyn[i] {
			continue
		}
		if v, ok := byBound[dims[i]]; ok {
			dims[i], dyn[i] = v, false
		}
		any = any || dyn[i]
	}
	s.Dims = dims
	s.Dynamic = dyn
	if !any {
		s.Dynamic = nil
	}
}
