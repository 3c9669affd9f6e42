package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// dlrmConfig is a DLRM-style recommender: a bottom MLP over dense features, one
// embedding lookup (gather) per sparse feature, summed over a bag of ids when bag > 1,
// pairwise dot-product interaction of all feature vectors (a batched dot), its strict
// lower triangle picked by a gather with constant indices, and a top MLP ending in a
// sigmoid click probability (binary cross-entropy in training).
type dlrmConfig struct {
	batch, dense int
	tables       []int // rows per embedding table
	dim, bag     int
	bottom, top  []int // layer widths; bottom ends in dim, top ends in 1
}

func (c dlrmConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	B, D := c.batch, c.dim
	x := b.Convert(n.input(hlo.F32, B, c.dense), n.act)
	for _, w := range c.bottom {
		x = n.relu(n.dense(x, w, true))
	}
	feats := []*hlo.Instruction{b.Reshape(x, B, 1, D)}
	for _, rows := range c.tables {
		ids := n.input(hlo.S32, B*c.bag)
		e := b.Gather(n.weight(rows, D), ids)
		if c.bag > 1 {
			e = b.ReduceSum(b.Reshape(e, B, c.bag, D), 1)
		}
		feats = append(feats, b.Reshape(e, B, 1, D))
	}
	F := len(feats)
	t := b.Concat(1, feats...)
	z := b.Dot(t, t, hlo.DotDims{LhsBatch: []int{0}, RhsBatch: []int{0}, LhsContracting: []int{2}, RhsContracting: []int{2}})
	pairs := F * (F - 1) / 2
	flat := b.Transpose(b.Reshape(z, B, F*F), 1, 0)
	tri := b.Transpose(b.Gather(flat, b.Constant(hlo.S32, pairs)), 1, 0)
	y := b.Concat(1, x, tri)
	for i, w := range c.top {
		y = n.dense(y, w, true)
		if i < len(c.top)-1 {
			y = n.relu(y)
		}
	}
	p := b.Sigmoid(b.Convert(y, hlo.F32))
	if !n.train {
		return []*hlo.Instruction{p}
	}
	label := n.input(hlo.F32, B, 1)
	one := n.full(p, 1)
	ll := b.AddOp(b.Mul(label, b.Log(p)), b.Mul(b.Sub(one, label), b.Log(b.Sub(one, p))))
	return []*hlo.Instruction{n.scale(b.ReduceSum(ll, 0, 1), -1/float64(B))}
}

// criteoTables are the Criteo Kaggle categorical cardinalities, capped at 200k rows as
// with the hashing trick.
func criteoTables() []int {
	rows := []int{1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
		27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572}
	for i, r := range rows {
		rows[i] = min(r, 200000)
	}
	return rows
}

func dlrmVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c dlrmConfig) variant {
		return variant{name: name, family: "dlrm", act: act, train: train, opt: sgdMomentum, graph: c.graph}
	}
	return []variant{
		v("dlrm_small_b32", hlo.F32, true, dlrmConfig{batch: 32, dense: 13, dim: 16, bag: 1,
			tables: []int{1000, 5000, 20000, 300, 64, 10000, 128, 2500}, bottom: []int{64, 16}, top: []int{128, 64, 1}}),
		v("dlrm_criteo_b64", hlo.F32, true, dlrmConfig{batch: 64, dense: 13, dim: 64, bag: 1,
			tables: criteoTables(), bottom: []int{512, 256, 64}, top: []int{512, 256, 1}}),
		v("dlrm_mlperf_b16", hlo.BF16, false, dlrmConfig{batch: 16, dense: 13, dim: 128, bag: 1,
			tables: criteoTables(), bottom: []int{512, 256, 128}, top: []int{1024, 1024, 512, 256, 1}}),
		v("dlrm_bag4_d32_b8", hlo.F32, false, dlrmConfig{batch: 8, dense: 13, dim: 32, bag: 4,
			tables: criteoTables()[:12], bottom: []int{128, 32}, top: []int{256, 1}}),
	}
}
