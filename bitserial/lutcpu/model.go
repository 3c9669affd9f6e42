package lutcpu

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/tpucost/tpucost/bitserial"
)

// Work counts the LUT kernel's operations for config c on layer l: what the analytical
// model charges for. The pool-table order's counts differ from the others': it reads
// the LUT P·b times per input vector to build its vector table, then the vector table
// once per weight index, whatever b.
type Work struct {
	TableEntries float64 // P·2^z entries built, one addition each
	Patterns     float64 // bit-plane patterns made: H·W·Cin/z·b (z ops each unless z = 8)
	// Gathered: patterns copied into windows, OH·OW·K·K·Cin/z·b; for pool-table, window
	// offsets computed, OH·OW·K·K·Cin/z.
	Gathered float64
	// Lookups: table reads of the convolution, one addition each: OH·OW·Cout·K·K·Cin/z·b
	// (LUT reads); for pool-table OH·OW·Cout·K·K·Cin/z (vector-table reads, no b).
	Lookups float64
	// Shifts: per output and bit, the shift-add of a bit's sum, OH·OW·Cout·b (none for
	// pool-table, whose shifts are in the vector-table build).
	Shifts float64
	// VectorLookups: pool-table only, the LUT reads (each with a shift-add) that build the
	// vector table: H·W·Cin/z vectors × P pool vectors × b.
	VectorLookups float64
	// VectorEntries: pool-table only, the vector table's entries (int32 each):
	// (H·W·Cin/z + 1)·P, its footprint in cache.
	VectorEntries float64
}

// WorkOf is the operation count of c on l.
func WorkOf(l bitserial.Layer, c Config) Work {
	groups := float64(l.Cin / c.Z)
	b := float64(c.B)
	pos := float64(l.OH() * l.OW())
	kk := float64(l.K * l.K)
	w := Work{
		TableEntries: float64(c.P << c.Z),
		Patterns:     float64(l.H*l.W) * groups * b,
		Gathered:     pos * kk * groups * b,
		Lookups:      pos * float64(l.Cout) * kk * groups * b,
		Shifts:       pos * float64(l.Cout) * b,
	}
	if c.Order == OrderPoolTable {
		w.Gathered = pos * kk * groups
		w.Lookups = pos * float64(l.Cout) * kk * groups
		w.Shifts = 0
		w.VectorLookups = float64(l.H*l.W) * groups * float64(c.P) * b
		w.VectorEntries = (float64(l.H*l.W)*groups + 1) * float64(c.P)
	}
	return w
}

// Nominal costs of the analytical model, in ns per operation, for a ~3 GHz core: a table
// read is an L1 load plus its address arithmetic (~3 cycles), an addition one cycle, a
// bit-plane pattern one multiply-mask step per 8 channels (z = 8) or z shift-or steps,
// a gathered pattern one byte copy.
const (
	nsLookup  = 1.0
	nsAdd     = 0.33
	nsPattern = 0.5
	nsGather  = 0.33
)

// Analytical is the analytical model of the LUT kernel: table build + bit-planes +
// window gathers + lookups + additions (+ for the pool-table order, the vector-table
// build: a LUT read and a shift-add per entry and bit), at the nominal costs. It sees the
// loop order only through these counts: not the blocking, unrolling or the tables' cache
// footprint.
func Analytical(l bitserial.Layer, c Config) float64 {
	w := WorkOf(l, c)
	pat := nsPattern
	if c.Z != 8 {
		pat *= float64(c.Z)
	}
	return w.TableEntries*nsAdd + w.Patterns*pat + w.Gathered*nsGather + w.Lookups*(nsLookup+nsAdd) + w.Shifts*nsAdd +
		w.VectorLookups*(nsLookup+nsAdd)
}

// l1Bytes is a typical L1 data cache (32 KiB): tables beyond it miss more.
const l1Bytes = 32 << 10

// Features is the learned model's input for c on l: logs of the operation counts, the
// analytical estimate, the tables' footprints (the LUT's; the pool-table order's vector
// table's, 0 for the other orders), and the loop order (one-hot) crossed with everything,
// blocking and unrolling.
func Features(l bitserial.Layer, c Config) []float64 {
	w := WorkOf(l, c)
	tabBytes := 2 * w.TableEntries
	vtBytes := 4 * w.VectorEntries
	vtExcess := 0.0
	if vtBytes > l1Bytes {
		vtExcess = math.Log2(vtBytes / l1Bytes)
	}
	base := []float64{
		1,
		math.Log(w.Lookups),
		math.Log(w.TableEntries),
		math.Log(w.Patterns),
		math.Log(Analytical(l, c)),
		float64(c.B),
		float64(c.Z),
		math.Log2(float64(c.P)),
		math.Log2(float64(c.Block)),
		math.Log2(float64(c.Unroll)),
		math.Log2(float64(c.Block)) * math.Log2(float64(c.Unroll)),
		math.Log(tabBytes),
		math.Max(0, math.Log2(tabBytes/l1Bytes)),
		float64(c.B) * math.Log2(float64(c.Unroll)),
		float64(c.Z) * math.Log2(float64(c.Block)),
		math.Log1p(w.VectorLookups),
		math.Log1p(vtBytes),
		vtExcess,
		vtExcess * float64(c.B),
	}
	// shared: the blocking and unrolling effects, and the operation counts, also uncrossed,
	// so that what the orders have in common is learned from every sample.
	shared := []float64{base[1], base[4], base[8], base[9], base[10], base[13], base[14]}
	out := make([]float64, 0, len(base)*len(Orders())+len(shared))
	out = append(out, shared...)
	for _, o := range Orders() {
		on := 0.0
		if c.Order == o {
			on = 1
		}
		for _, v := range base {
			out = append(out, on*v)
		}
	}
	return out
}

// TargetLogRatio is the learned model's target: the log of the measured median time over
// the analytical estimate. The analytical model is the prior and the regression learns
// its correction, so that with few samples (the ridge penalty pulling the weights to 0)
// the model falls back on the analytical model's ranking rather than on a constant.
const TargetLogRatio = "log_time_over_analytical"

// Model is the learned model: ridge regression on Features of the log of the median time
// over the analytical estimate (TargetLogRatio).
type Model struct {
	Layer   bitserial.Layer `json:"-"`
	Shape   LayerShape      `json:"layer"`             // Layer, in the JSON
	Target  string          `json:"regression_target"` // TargetLogRatio
	Weights []float64       `json:"weights"`
	Mean    []float64       `json:"mean"` // feature means (standardization)
	Scale   []float64       `json:"scale"`
	Lambda  float64         `json:"lambda"`
	Trained int             `json:"trained"` // training samples
}

// DefaultLambda is the ridge penalty on standardized features.
const DefaultLambda = 1e-3

// Fit fits a Model to configs cs with measured median times ns (> 0) on layer l: ridge
// regression of log(ns / Analytical) on the standardized Features.
func Fit(l bitserial.Layer, cs []Config, ns []float64, lambda float64) (*Model, error) {
	if len(cs) != len(ns) {
		return nil, fmt.Errorf("%d configs and %d times", len(cs), len(ns))
	}
	if len(cs) < 2 {
		return nil, errors.New("fitting needs at least 2 measured configs")
	}
	x := make([][]float64, len(cs))
	for i, c := range cs {
		if !(ns[i] > 0) {
			return nil, fmt.Errorf("config %s has time %v ns: want a positive time", c, ns[i])
		}
		x[i] = Features(l, c)
	}
	d := len(x[0])
	m := &Model{Layer: l, Shape: ShapeOf(l), Target: TargetLogRatio, Mean: make([]float64, d), Scale: make([]float64, d), Lambda: lambda, Trained: len(cs)}
	for j := 0; j < d; j++ {
		var s, s2 float64
		for i := range x {
			s += x[i][j]
			s2 += x[i][j] * x[i][j]
		}
		mu := s / float64(len(x))
		m.Mean[j] = mu
		sd := math.Sqrt(math.Max(s2/float64(len(x))-mu*mu, 0))
		if sd < 1e-12 {
			sd = 0 // constant column: dropped
		}
		m.Scale[j] = sd
	}
	// Standardized design with an intercept column; ridge: (XᵀX + λnI)w = Xᵀy.
	X := mat.NewDense(len(x), d+1, nil)
	y := mat.NewVecDense(len(x), nil)
	for i := range x {
		X.Set(i, 0, 1)
		for j, v := range x[i] {
			X.Set(i, j+1, m.std(j, v))
		}
		y.SetVec(i, math.Log(ns[i]/Analytical(l, cs[i])))
	}
	var a mat.Dense
	a.Mul(X.T(), X)
	for j := 1; j <= d; j++ {
		a.Set(j, j, a.At(j, j)+lambda*float64(len(x)))
	}
	var rhs mat.VecDense
	rhs.MulVec(X.T(), y)
	var w mat.VecDense
	if err := w.SolveVec(&a, &rhs); err != nil {
		return nil, fmt.Errorf("fitting the learned model: %w", err)
	}
	m.Weights = make([]float64, d+1)
	for j := range m.Weights {
		m.Weights[j] = w.AtVec(j)
	}
	return m, nil
}

// LayerShape is a bitserial.Layer with snake_case JSON keys.
type LayerShape struct {
	H      int `json:"h"`
	W      int `json:"w"`
	Cin    int `json:"cin"`
	Cout   int `json:"cout"`
	K      int `json:"k"`
	Stride int `json:"stride"`
	Pad    int `json:"pad"`
}

// ShapeOf is l's shape.
func ShapeOf(l bitserial.Layer) LayerShape {
	return LayerShape{H: l.H, W: l.W, Cin: l.Cin, Cout: l.Cout, K: l.K, Stride: l.Stride, Pad: l.Pad}
}

// Layer is the shape as a bitserial.Layer.
func (s LayerShape) Layer() bitserial.Layer {
	return bitserial.Layer{H: s.H, W: s.W, Cin: s.Cin, Cout: s.Cout, K: s.K, Stride: s.Stride, Pad: s.Pad}
}

func (m *Model) std(j int, v float64) float64 {
	if m.Scale[j] == 0 {
		return 0
	}
	return (v - m.Mean[j]) / m.Scale[j]
}

// Predict is the model's estimate of c's time in ns: the analytical estimate times the
// learned correction.
func (m *Model) Predict(c Config) float64 {
	f := Features(m.Layer, c)
	s := m.Weights[0]
	for j, v := range f {
		s += m.Weights[j+1] * m.std(j, v)
	}
	return Analytical(m.Layer, c) * math.Exp(s)
}

// Check reports whether m is usable: its target is TargetLogRatio and its weights match
// the features' width.
// A model read from JSON gets its Layer from its shape.
func (m *Model) Check() error {
	m.Layer = m.Shape.Layer()
	if m.Layer.Cin < 1 || m.Layer.Cout < 1 || m.Layer.K < 1 || m.Layer.Stride < 1 {
		return fmt.Errorf("model layer %+v: want positive channels, kernel and stride", m.Shape)
	}
	if m.Target != TargetLogRatio {
		return fmt.Errorf("model target %q: want %q (a model of another version: train it again)", m.Target, TargetLogRatio)
	}
	d := len(Features(m.Layer, Config{P: 16, Z: 1, B: 1, Order: OrderBitGroup, Block: 1, Unroll: 1}))
	if len(m.Weights) != d+1 || len(m.Mean) != d || len(m.Scale) != d || slices.ContainsFunc(m.Weights, math.IsNaN) {
		return fmt.Errorf("model has %d weights, %d means, %d scales: want %d, %d, %d (features of another version?)", len(m.Weights), len(m.Mean), len(m.Scale), d+1, d, d)
	}
	return nil
}
