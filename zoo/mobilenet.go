package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// mobilenetConfig is MobileNet v1 (depthwise-separable convolutions) or v2 (inverted
// residuals with linear bottlenecks) with width multiplier alpha. Depthwise convolutions
// have feature_group_count equal to their channels.
type mobilenetConfig struct {
	version    int
	batch, res int
	alpha      float64
	classes    int
}

// makeDivisible rounds v to a multiple of 8 without going below 90% of v, as the
// reference implementations do.
func makeDivisible(v float64) int {
	d := max(8, int(v+4)/8*8)
	if float64(d) < 0.9*v {
		d += 8
	}
	return d
}

func (c mobilenetConfig) graph(n *net) []*hlo.Instruction {
	x := n.b.Convert(n.input(hlo.F32, c.batch, c.res, c.res, 3), n.act)
	ch := func(v int) int { return makeDivisible(float64(v) * c.alpha) }
	x = n.convBN(x, 3, ch(32), 2, 1, "relu6")
	if c.version == 1 {
		type blk struct{ c, s int }
		for _, bl := range []blk{{64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2},
			{512, 1}, {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}} {
			cin := x.Shape.Dims[3]
			x = n.convBN(x, 3, cin, bl.s, cin, "relu6")
			x = n.convBN(x, 1, ch(bl.c), 1, 1, "relu6")
		}
	} else {
		type stage struct{ t, c, n, s int }
		for _, st := range []stage{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
			{6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}} {
			for i := 0; i < st.n; i++ {
				stride := st.s
				if i > 0 {
					stride = 1
				}
				cin := x.Shape.Dims[3]
				y := x
				if st.t != 1 {
					y = n.convBN(y, 1, cin*st.t, 1, 1, "relu6")
				}
				e := y.Shape.Dims[3]
				y = n.convBN(y, 3, e, stride, e, "relu6")
				y = n.convBN(y, 1, ch(st.c), 1, 1, "")
				if stride == 1 && cin == y.Shape.Dims[3] {
					y = n.b.AddOp(y, x)
				}
				x = y
			}
		}
		x = n.convBN(x, 1, max(1280, ch(1280)), 1, 1, "relu6")
	}
	logits := n.dense(n.globalAvgPool(x), c.classes, true)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.softmax(logits, 1)}
}

func mobilenetVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c mobilenetConfig) variant {
		return variant{name: name, family: "mobilenet", act: act, train: train, opt: sgdMomentum, graph: c.graph}
	}
	return []variant{
		v("mobilenet_v1_100_224_b1", hlo.F32, false, mobilenetConfig{version: 1, batch: 1, res: 224, alpha: 1, classes: 1000}),
		v("mobilenet_v1_075_192_b8", hlo.BF16, false, mobilenetConfig{version: 1, batch: 8, res: 192, alpha: 0.75, classes: 1000}),
		v("mobilenet_v1_050_160_b16", hlo.F32, true, mobilenetConfig{version: 1, batch: 16, res: 160, alpha: 0.5, classes: 1000}),
		v("mobilenet_v2_100_224_b32", hlo.BF16, true, mobilenetConfig{version: 2, batch: 32, res: 224, alpha: 1, classes: 1000}),
		v("mobilenet_v2_140_224_b1", hlo.F32, false, mobilenetConfig{version: 2, batch: 1, res: 224, alpha: 1.4, classes: 1000}),
		v("mobilenet_v2_035_96_b64", hlo.BF16, false, mobilenetConfig{version: 2, batch: 64, res: 96, alpha: 0.35, classes: 1000}),
	}
}
