package tpugraphs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// Widths of the TpuGraphs feature set (dataset.FeatureSetTpuGraphs), from the dataset's
// README: 140 node features, 24 tile config features, 18 layout config features per
// configurable node (6 dims × 3 tensors of minor-to-major order, −1 padded).
const (
	NodeFeatWidth        = 140
	TileConfigWidth      = 24
	LayoutConfigWidth    = 18
	featureSchemaVersion = 1
)

// Collections of the TpuGraphs dataset.
const (
	CollectionTile   = "tile"
	CollectionLayout = "layout"
)

// FeatureSchema returns the names and widths of the TpuGraphs feature set for a
// collection ("tile" or "layout"): node features "node_feat_0".."node_feat_139", no
// kernel features, config features "config_feat_0".."config_feat_23" (tile) or
// "node_config_feat_0".."node_config_feat_17" per configurable node (layout). Their
// opcode ids are TpuGraphs' own (XLA's HloOpcode numbering of the release), so Vocab is
// empty.
func FeatureSchema(collection string) features.Schema {
	names := func(prefix string, n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = prefix + strconv.Itoa(i)
		}
		return s
	}
	s := features.Schema{Version: featureSchemaVersion, Node: names("node_feat_", NodeFeatWidth), Kernel: []string{}}
	if collection == CollectionLayout {
		s.Config = names("node_config_feat_", LayoutConfigWidth)
	} else {
		s.Config = names("config_feat_", TileConfigWidth)
	}
	return s
}

// maxExactInt is the largest integer a float64 holds exactly; runtimes beyond it are
// refused rather than rounded.
const maxExactInt = 1 << 53

// allZero reports whether every runtime is 0 (true for none).
func allZero(runtimes []float64) bool {
	return !slices.ContainsFunc(runtimes, func(v float64) bool { return v != 0 })
}

// RowFromNPZ converts the arrays of one TpuGraphs npz file of a collection to a dataset
// row in the TpuGraphs feature set. Edges become operand → user (their edge_index row
// [u, v] says that u consumes v). Tile configs are named "config=I;normalizer=N" (N from
// config_runtime_normalizers; "config=I" and no normalizers in an unlabelled file, every
// runtime and normalizer 0), layout configs "config=I"; a layout row's Kind holds
// "node_splits=a,b,..." (the flattened node_splits, empty if the file has none). Analytical
// estimates are NaN: there are none for real measurements. Errors say which array is
// wrong and what was expected.
//
// schema gives the feature widths (FeatureSchema(collection) for the release's files; a
// tpucost export's sidecar names its own). A file written by Export may also hold
// kernel_feat (k,) for a schema with kernel features, config_runtime_ns (c,) float64
// (the exact runtimes; config_runtime holds them rounded) and config_analytical_ns (c,).
func RowFromNPZ(z NPZ, collection string, schema features.Schema) (dataset.Row, error) {
	var r dataset.Row
	nodeW, kernelW, configW := len(schema.Node), len(schema.Kernel), len(schema.Config)
	get := func(key string, rank int) (*Array, error) {
		a, ok := z[key]
		if !ok {
			return nil, fmt.Errorf("no array %s (a %s-collection file has %s)", key, collection, strings.Join(requiredKeys(collection), ", "))
		}
		if len(a.Shape) != rank {
			return nil, fmt.Errorf("%s has shape %v, want rank %d", key, a.Shape, rank)
		}
		return a, nil
	}
	nf, err := get("node_feat", 2)
	if err != nil {
		return r, err
	}
	n := nf.Shape[0]
	if nf.Shape[1] != nodeW {
		return r, fmt.Errorf("node_feat has shape %v, want (n, %d)", nf.Shape, nodeW)
	}
	if n > math.MaxInt32 {
		return r, fmt.Errorf("node_feat has %d nodes, more than int32 indices hold", n)
	}
	op, err := get("node_opcode", 1)
	if err != nil {
		return r, err
	}
	if op.Shape[0] != n {
		return r, fmt.Errorf("node_opcode has %d entries for %d nodes", op.Shape[0], n)
	}
	ops, err := op.Int64s()
	if err != nil {
		return r, fmt.Errorf("node_opcode: %w", err)
	}
	ei, err := get("edge_index", 2)
	if err != nil {
		return r, err
	}
	if ei.Shape[1] != 2 {
		return r, fmt.Errorf("edge_index has shape %v, want (m, 2)", ei.Shape)
	}
	edges, err := ei.Int64s()
	if err != nil {
		return r, fmt.Errorf("edge_index: %w", err)
	}
	g := &r.Graph
	g.Opcodes = make([]int32, n)
	for i, v := range ops {
		if v < 0 || v > math.MaxInt32 {
			return r, fmt.Errorf("node_opcode[%d] is %d, want an opcode id in [0, 2^31)", i, v)
		}
		g.Opcodes[i] = int32(v)
	}
	g.NodeFeats = nf.Float32s()
	g.KernelFeats = []float32{}
	if kernelW > 0 {
		kf, err := get("kernel_feat", 1)
		if err != nil {
			return r, err
		}
		if kf.Shape[0] != kernelW {
			return r, fmt.Errorf("kernel_feat has %d values, want %d", kf.Shape[0], kernelW)
		}
		g.KernelFeats = kf.Float32s()
	}
	m := ei.Shape[0]
	g.EdgeSrc, g.EdgeDst = make([]int32, m), make([]int32, m)
	for j := 0; j < m; j++ {
		u, v := edges[2*j], edges[2*j+1]
		if u < 0 || u >= int64(n) || v < 0 || v >= int64(n) {
			return r, fmt.Errorf("edge_index[%d] is [%d, %d], out of range for %d nodes", j, u, v, n)
		}
		g.EdgeSrc[j], g.EdgeDst[j] = int32(v), int32(u) // v is the operand, u its user
	}
	rt, err := get("config_runtime", 1)
	if err != nil {
		return r, err
	}
	c := rt.Shape[0]
	runtimes := rt.Float64s()
	for i, v := range runtimes {
		if !(v >= 0) || v > maxExactInt || math.IsInf(v, 0) {
			return r, fmt.Errorf("config_runtime[%d] is %v, want a runtime in [0, 2^53]", i, v)
		}
	}
	if ex, ok := z["config_runtime_ns"]; ok {
		if len(ex.Shape) != 1 || ex.Shape[0] != c {
			return r, fmt.Errorf("config_runtime_ns has shape %v, want (%d,)", ex.Shape, c)
		}
		exact := ex.Float64s()
		for i, v := range exact {
			if math.Abs(math.Round(v)-runtimes[i]) > 0 {
				return r, fmt.Errorf("config_runtime_ns[%d] is %v, config_runtime[%d] is %v: they disagree", i, v, i, runtimes[i])
			}
		}
		runtimes = exact
	}
	r.RuntimesNs = runtimes
	r.AnalyticalNs = make([]float64, c)
	for i := range r.AnalyticalNs {
		r.AnalyticalNs[i] = math.NaN()
	}
	if an, ok := z["config_analytical_ns"]; ok {
		if len(an.Shape) != 1 || an.Shape[0] != c {
			return r, fmt.Errorf("config_analytical_ns has shape %v, want (%d,)", an.Shape, c)
		}
		r.AnalyticalNs = an.Float64s()
	}
	r.Configs = make([]string, c)
	r.ConfigFeats = make([][]float32, c)
	switch collection {
	case CollectionTile:
		r.Task = dataset.TaskTile
		cf, err := get("config_feat", 2)
		if err != nil {
			return r, err
		}
		if cf.Shape[0] != c || cf.Shape[1] != configW {
			return r, fmt.Errorf("config_feat has shape %v, want (%d, %d) for %d runtimes", cf.Shape, c, configW, c)
		}
		nz, err := get("config_runtime_normalizers", 1)
		if err != nil {
			return r, err
		}
		if nz.Shape[0] != c {
			return r, fmt.Errorf("config_runtime_normalizers has %d entries for %d runtimes", nz.Shape[0], c)
		}
		norms, err := nz.Int64s()
		if err != nil {
			return r, fmt.Errorf("config_runtime_normalizers: %w", err)
		}
		feats := cf.Float32s()
		if c > 0 && allZero(runtimes) && !slices.ContainsFunc(norms, func(v int64) bool { return v != 0 }) {
			// An unlabelled file (every runtime 0) may withhold its normalizers too:
			// configs "config=I", no normalizers.
			for i := 0; i < c; i++ {
				r.Configs[i] = fmt.Sprintf("config=%d", i)
				r.ConfigFeats[i] = feats[i*configW : (i+1)*configW : (i+1)*configW]
			}
			break
		}
		r.Normalizers = make([]float64, c)
		for i := 0; i < c; i++ {
			if norms[i] <= 0 || norms[i] > maxExactInt {
				return r, fmt.Errorf("config_runtime_normalizers[%d] is %d, want a runtime in [1, 2^53]", i, norms[i])
			}
			r.Configs[i] = fmt.Sprintf("config=%d;normalizer=%d", i, norms[i])
			r.ConfigFeats[i] = feats[i*configW : (i+1)*configW : (i+1)*configW]
			r.Normalizers[i] = float64(norms[i])
		}
	case CollectionLayout:
		r.Task = dataset.TaskLayout
		ids, err := get("node_config_ids", 1)
		if err != nil {
			return r, err
		}
		nc := ids.Shape[0]
		idv, err := ids.Int64s()
		if err != nil {
			return r, fmt.Errorf("node_config_ids: %w", err)
		}
		r.ConfigNodes = make([]int32, nc)
		for i, v := range idv {
			if v < 0 || v >= int64(n) {
				return r, fmt.Errorf("node_config_ids[%d] is %d, out of range for %d nodes", i, v, n)
			}
			r.ConfigNodes[i] = int32(v)
		}
		cf, err := get("node_config_feat", 3)
		if err != nil {
			return r, err
		}
		if cf.Shape[0] != c || cf.Shape[1] != nc || cf.Shape[2] != configW {
			return r, fmt.Errorf("node_config_feat has shape %v, want (%d, %d, %d) for %d runtimes and %d configurable nodes", cf.Shape, c, nc, configW, c, nc)
		}
		feats := cf.Float32s()
		w := nc * configW
		for i := 0; i < c; i++ {
			r.Configs[i] = fmt.Sprintf("config=%d", i)
			r.ConfigFeats[i] = feats[i*w : (i+1)*w : (i+1)*w]
		}
		r.Kind = "node_splits="
		if sp, ok := z["node_splits"]; ok {
			v, err := sp.Int64s()
			if err != nil {
				return r, fmt.Errorf("node_splits: %w", err)
			}
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = strconv.FormatInt(x, 10)
			}
			r.Kind += strings.Join(parts, ",")
		}
	default:
		return r, fmt.Errorf("unknown collection %q (want tile or layout)", collection)
	}
	return r, nil
}

// requiredKeys lists the arrays a file of a collection must hold.
func requiredKeys(collection string) []string {
	if collection == CollectionLayout {
		return []string{"node_feat", "node_opcode", "edge_index", "node_config_ids", "node_config_feat", "config_runtime"}
	}
	return []string{"node_feat", "node_opcode", "edge_index", "config_feat", "config_runtime", "config_runtime_normalizers"}
}

// NPZFromRow is the inverse of RowFromNPZ: the arrays of a TpuGraphs npz file holding
// row r, whose features follow schema (dtypes as in the released files: float32
// features, uint8 opcodes when they fit, int64 indices and runtimes). config_runtime
// holds the runtimes rounded to whole ns; when one is fractional, config_runtime_ns holds
// them exactly. kernel_feat is written for a schema with kernel features and
// config_analytical_ns when an estimate is not NaN. A tile row's normalizers are its
// Normalizers when it has them, else from its config strings ("normalizer=N"), else the
// first config's rounded runtime (tpucost puts the compiler's default config first).
func NPZFromRow(r *dataset.Row, collection string, schema features.Schema) (NPZ, error) {
	nodeW, kernelW, configW := len(schema.Node), len(schema.Kernel), len(schema.Config)
	g := &r.Graph
	n, c := len(g.Opcodes), len(r.Configs)
	if len(g.NodeFeats) != n*nodeW {
		return nil, fmt.Errorf("%d node features for %d nodes, want %d each", len(g.NodeFeats), n, nodeW)
	}
	ops := make([]int64, n)
	opDescr := "|u1"
	for i, v := range g.Opcodes {
		ops[i] = int64(v)
		if v < 0 || v > 255 {
			opDescr = "<i8"
		}
	}
	edges := make([]int64, 2*len(g.EdgeSrc))
	for j := range g.EdgeSrc {
		edges[2*j], edges[2*j+1] = int64(g.EdgeDst[j]), int64(g.EdgeSrc[j]) // [user, operand]
	}
	rt := make([]int64, c)
	fractional := false
	for i, v := range r.RuntimesNs {
		if !(v >= 0) || v > maxExactInt {
			return nil, fmt.Errorf("runtime %d is %v ns, want one in [0, 2^53]", i, v)
		}
		rt[i] = int64(math.Round(v))
		fractional = fractional || v != math.Round(v)
	}
	z := NPZ{
		"node_feat":      {Shape: []int{n, nodeW}, Descr: "<f4", F32: orEmpty(g.NodeFeats)},
		"node_opcode":    {Shape: []int{n}, Descr: opDescr, Ints: ops},
		"edge_index":     {Shape: []int{len(g.EdgeSrc), 2}, Descr: "<i8", Ints: edges},
		"config_runtime": {Shape: []int{c}, Descr: "<i8", Ints: rt},
	}
	if fractional {
		z["config_runtime_ns"] = &Array{Shape: []int{c}, Descr: "<f8", F64: slices.Clone(r.RuntimesNs)}
	}
	if kernelW > 0 {
		if len(g.KernelFeats) != kernelW {
			return nil, fmt.Errorf("%d kernel features, want %d", len(g.KernelFeats), kernelW)
		}
		z["kernel_feat"] = &Array{Shape: []int{kernelW}, Descr: "<f4", F32: g.KernelFeats}
	}
	if slices.ContainsFunc(r.AnalyticalNs, func(v float64) bool { return !math.IsNaN(v) }) {
		z["config_analytical_ns"] = &Array{Shape: []int{c}, Descr: "<f8", F64: slices.Clone(r.AnalyticalNs)}
	}
	switch collection {
	case CollectionTile:
		feats := make([]float32, 0, c*configW)
		norms := make([]int64, c)
		for i, f := range r.ConfigFeats {
			if len(f) != configW {
				return nil, fmt.Errorf("config %d has %d features, want %d", i, len(f), configW)
			}
			feats = append(feats, f...)
			if len(r.Normalizers) == c {
				norms[i] = int64(math.Round(r.Normalizers[i]))
				continue
			}
			v, err := configField(r.Configs[i], "normalizer")
			if errors.Is(err, errNoField) {
				v, err = max(rt[0], 1), nil
			}
			if err != nil {
				return nil, err
			}
			norms[i] = v
		}
		z["config_feat"] = &Array{Shape: []int{c, configW}, Descr: "<f4", F32: feats}
		z["config_runtime_normalizers"] = &Array{Shape: []int{c}, Descr: "<i8", Ints: norms}
	case CollectionLayout:
		nc := len(r.ConfigNodes)
		ids := make([]int64, nc)
		for i, v := range r.ConfigNodes {
			ids[i] = int64(v)
		}
		feats := make([]float32, 0, c*nc*configW)
		for i, f := range r.ConfigFeats {
			if len(f) != nc*configW {
				return nil, fmt.Errorf("config %d has %d features, want %d × %d", i, len(f), nc, configW)
			}
			feats = append(feats, f...)
		}
		z["node_config_ids"] = &Array{Shape: []int{nc}, Descr: "<i8", Ints: ids}
		z["node_config_feat"] = &Array{Shape: []int{c, nc, configW}, Descr: "<f4", F32: feats}
		if s, ok := strings.CutPrefix(r.Kind, "node_splits="); ok && s != "" {
			var sp []int64
			for _, p := range strings.Split(s, ",") {
				v, err := strconv.ParseInt(p, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("kind %q: bad node_splits", r.Kind)
				}
				sp = append(sp, v)
			}
			z["node_splits"] = &Array{Shape: []int{1, len(sp)}, Descr: "<i8", Ints: sp}
		}
	default:
		return nil, fmt.Errorf("unknown collection %q (want tile or layout)", collection)
	}
	return z, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

var errNoField = errors.New("no field")

// configField returns the integer value of key in a config string "a=1;b=2".
func configField(cfg, key string) (int64, error) {
	for _, kv := range strings.Split(cfg, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("config %q: bad %s", cfg, key)
			}
			return x, nil
		}
	}
	return 0, fmt.Errorf("config %q: %w %s", cfg, errNoField, key)
}
