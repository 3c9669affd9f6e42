package features

import (
	"errors"
	"fmt"
	"math"
)

// MinStd is the smallest standard deviation a column is scaled by: columns whose fitted
// standard deviation is below it (constant columns, or columns never seen) are only
// centred, never divided by a tiny number.
const MinStd = 1e-6

// ColumnStats are the per-column mean, (population) standard deviation and range of one
// kind of feature vector, and how many vectors they were fitted on.
type ColumnStats struct {
	Count int64     `json:"count"`
	Mean  []float64 `json:"mean"`
	Std   []float64 `json:"std"`
	// Min and Max are each column's smallest and largest value in the data the statistics
	// were fitted on. Apply clamps a value into them before standardizing, so a model never
	// reads a feature beyond the range it was trained on: without it, a kernel with 26
	// gathered inputs where training saw at most a few reached the network 240 standard
	// deviations out, and the ReLU network extrapolated linearly to a runtime 19,000×
	// too long. Statistics without them (saved before they existed) clamp nothing.
	Min []float64 `json:"min,omitempty"`
	Max []float64 `json:"max,omitempty"`
}

// Width is the number of columns.
func (c ColumnStats) Width() int { return len(c.Mean) }

// Apply normalizes the row-major matrix src (rows of c.Width() columns) into dst, which
// may be src itself: dst[i] = (clamp(src[i], min, max) - mean) / std, with std replaced by
// 1 where it is below MinStd (no clamp for statistics without a range). It panics if the
// lengths differ or are not a multiple of the width (a programming error, not a data
// error).
func (c ColumnStats) Apply(dst, src []float32) {
	w := len(c.Mean)
	if len(src) == 0 && len(dst) == 0 {
		return // nothing to normalize (a feature kind of width 0)
	}
	if len(dst) != len(src) || w == 0 || len(src)%w != 0 {
		panic(fmt.Sprintf("features: normalizing %d values into %d with %d columns", len(src), len(dst), w))
	}
	clamp := len(c.Min) == w && len(c.Max) == w
	for i, x := range src {
		j := i % w
		s := c.Std[j]
		if s < MinStd {
			s = 1
		}
		v := float64(x)
		if clamp {
			v = min(max(v, c.Min[j]), c.Max[j])
		}
		dst[i] = float32((v - c.Mean[j]) / s)
	}
}

func (c ColumnStats) validate(what string, width int) error {
	if len(c.Mean) != width || len(c.Std) != width {
		return fmt.Errorf("%s statistics have %d means and %d standard deviations, want %d", what, len(c.Mean), len(c.Std), width)
	}
	for j := range c.Mean {
		if math.IsNaN(c.Mean[j]) || math.IsInf(c.Mean[j], 0) || math.IsNaN(c.Std[j]) || math.IsInf(c.Std[j], 0) || c.Std[j] < 0 {
			return fmt.Errorf("%s statistics: column %d has mean %g and standard deviation %g", what, j, c.Mean[j], c.Std[j])
		}
	}
	if c.Min == nil && c.Max == nil {
		return nil // fitted before ranges were recorded: nothing is clamped
	}
	if len(c.Min) != width || len(c.Max) != width {
		return fmt.Errorf("%s statistics have %d minimums and %d maximums, want %d", what, len(c.Min), len(c.Max), width)
	}
	for j := range c.Min {
		if math.IsNaN(c.Min[j]) || math.IsInf(c.Min[j], 0) || math.IsNaN(c.Max[j]) || math.IsInf(c.Max[j], 0) || c.Min[j] > c.Max[j] {
			return fmt.Errorf("%s statistics: column %d has range [%g, %g]", what, j, c.Min[j], c.Max[j])
		}
	}
	return nil
}

// Stats are normalization statistics for the three kinds of feature vectors: node
// features (one vector per node of every kernel), kernel features (one per kernel) and
// config features (one per measured configuration). They are fitted on a training set
// (Fit, or a Fitter fed row by row), saved with a model as JSON, and applied to every
// input the model sees.
type Stats struct {
	SchemaVersion int         `json:"schema_version"`
	Node          ColumnStats `json:"node"`
	Kernel        ColumnStats `json:"kernel"`
	Config        ColumnStats `json:"config"`
}

// Widths are the widths of the three kinds of feature vectors of a feature schema. For
// data with per-node configurations, Config is the width per configurable node.
type Widths struct{ Node, Kernel, Config int }

// CurrentWidths are this package's widths (CurrentSchema).
func CurrentWidths() Widths { return Widths{Node: NodeWidth, Kernel: KernelWidth, Config: ConfigWidth} }

// Validate checks that s was fitted for this package's schema and is well-formed.
func (s Stats) Validate() error { return s.ValidateFor(SchemaVersion, CurrentWidths()) }

// ValidateFor checks that s was fitted for schema version version with widths w (another
// feature schema than this package's, e.g. an imported dataset's) and is well-formed.
func (s Stats) ValidateFor(version int, w Widths) error {
	if s.SchemaVersion != version {
		return fmt.Errorf("normalization statistics are for feature schema version %d, the model's schema is version %d", s.SchemaVersion, version)
	}
	return errors.Join(
		s.Node.validate("node", w.Node),
		s.Kernel.validate("kernel", w.Kernel),
		s.Config.validate("config", w.Config))
}

// ApplyGraph returns a copy of g with normalized node and kernel features (opcodes and
// edges are shared with g, not copied).
func (s Stats) ApplyGraph(g *Graph) Graph {
	out := *g
	out.NodeFeats = make([]float32, len(g.NodeFeats))
	out.KernelFeats = make([]float32, len(g.KernelFeats))
	if len(g.NodeFeats) > 0 {
		s.Node.Apply(out.NodeFeats, g.NodeFeats)
	}
	s.Kernel.Apply(out.KernelFeats, g.KernelFeats)
	return out
}

// ApplyConfig returns the normalized copy of one config feature vector.
func (s Stats) ApplyConfig(c []float32) []float32 {
	out := make([]float32, len(c))
	s.Config.Apply(out, c)
	return out
}

// welford accumulates per-column means and squared deviations (Welford's algorithm, in
// float64, stable for long streams), and each column's range.
type welford struct {
	n        int64
	mean     []float64
	m2       []float64
	min, max []float64
}

func newWelford(width int) welford {
	return welford{mean: make([]float64, width), m2: make([]float64, width), min: make([]float64, width), max: make([]float64, width)}
}

func (w *welford) add(row []float32) {
	w.n++
	inv := 1 / float64(w.n)
	for j, x := range row {
		v := float64(x)
		d := v - w.mean[j]
		w.mean[j] += d * inv
		w.m2[j] += d * (v - w.mean[j])
		if w.n == 1 || v < w.min[j] {
			w.min[j] = v
		}
		if w.n == 1 || v > w.max[j] {
			w.max[j] = v
		}
	}
}

// stats returns the statistics; a column set that saw no vector has no range (Apply
// clamps nothing there).
func (w *welford) stats() ColumnStats {
	c := ColumnStats{Count: w.n, Mean: append([]float64(nil), w.mean...), Std: make([]float64, len(w.m2))}
	if w.n > 0 {
		for j, m2 := range w.m2 {
			c.Std[j] = math.Sqrt(math.Max(m2, 0) / float64(w.n))
		}
		c.Min, c.Max = append([]float64(nil), w.min...), append([]float64(nil), w.max...)
	}
	return c
}

// Fitter accumulates normalization statistics from a stream of kernels and their
// configurations. The zero value is not ready: use NewFitter. A Fitter is not safe for
// concurrent use.
type Fitter struct {
	version              int
	w                    Widths
	node, kernel, config welford
	err                  error
}

// NewFitter returns an empty Fitter for this package's schema.
func NewFitter() *Fitter { return NewFitterFor(SchemaVersion, CurrentWidths()) }

// NewFitterFor returns an empty Fitter for feature vectors of widths w of schema version
// version (the statistics record it).
func NewFitterFor(version int, w Widths) *Fitter {
	return &Fitter{version: version, w: w, node: newWelford(w.Node), kernel: newWelford(w.Kernel), config: newWelford(w.Config)}
}

// AddGraph adds the node features of every node of g and its kernel features. A graph
// of the wrong widths is recorded as an error that Stats returns.
func (f *Fitter) AddGraph(g *Graph) {
	if err := g.ValidateWidths(f.w.Node, f.w.Kernel); err != nil {
		f.err = errors.Join(f.err, err)
		return
	}
	for i := 0; i < g.Nodes(); i++ {
		f.node.add(g.NodeFeats[i*f.w.Node : (i+1)*f.w.Node])
	}
	f.kernel.add(g.KernelFeats)
}

// AddConfig adds one config feature vector.
func (f *Fitter) AddConfig(c []float32) {
	if len(c) != f.w.Config {
		f.err = errors.Join(f.err, fmt.Errorf("config feature vector has %d values, want %d", len(c), f.w.Config))
		return
	}
	f.config.add(c)
}

// Stats returns the statistics of everything added so far, or the first malformed input's
// error.
func (f *Fitter) Stats() (Stats, error) {
	if f.err != nil {
		return Stats{}, fmt.Errorf("fitting normalization: %w", f.err)
	}
	return Stats{SchemaVersion: f.version, Node: f.node.stats(), Kernel: f.kernel.stats(), Config: f.config.stats()}, nil
}

// Fit fits statistics on a stream: stream calls add once per kernel with its graph and its
// config feature vectors (add does not keep them), and returns the stream's error, which
// Fit returns wrapped. A typical stream wraps a dataset reader:
//
//	features.Fit(func(add func(*features.Graph, [][]float32)) error {
//		return d.Rows(opts, func(r *dataset.Row) error { add(&r.Graph, r.ConfigFeats); return nil })
//	})
func Fit(stream func(add func(g *Graph, configs [][]float32)) error) (Stats, error) {
	f := NewFitter()
	err := stream(func(g *Graph, configs [][]float32) {
		f.AddGraph(g)
		for _, c := range configs {
			f.AddConfig(c)
		}
	})
	if err != nil {
		return Stats{}, fmt.Errorf("fitting normalization: %w", err)
	}
	return f.Stats()
}
