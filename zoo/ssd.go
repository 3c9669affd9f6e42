package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// ssdConfig is an SSD-style single-shot detector: a convolutional backbone, extra layers
// that halve the resolution, and at each feature map a box head (anchors·4) and a class
// head (anchors·classes) whose outputs are reshaped to [batch, boxes, ·] and
// concatenated across scales. lite uses depthwise-separable convolutions (SSDLite).
type ssdConfig struct {
	batch, res int
	classes    int
	lite       bool
}

func (c ssdConfig) graph(n *net) []*hlo.Instruction {
	x := n.b.Convert(n.input(hlo.F32, c.batch, c.res, c.res, 3), n.act)
	sepConv := func(x *hlo.Instruction, cout, stride int) *hlo.Instruction {
		cin := x.Shape.Dims[3]
		x = n.convBN(x, 3, cin, stride, cin, "relu6")
		return n.convBN(x, 1, cout, 1, 1, "relu6")
	}
	var feats []*hlo.Instruction
	var anchors []int
	if c.lite {
		x = n.convBN(x, 3, 32, 2, 1, "relu6")
		x = sepConv(x, 64, 2)
		x = sepConv(x, 96, 2)
		x = sepConv(x, 128, 1)
		x = sepConv(x, 160, 2)
		feats = append(feats, x)
		x = sepConv(x, 320, 1)
		x = sepConv(x, 480, 2)
		feats = append(feats, x)
		for _, ch := range []int{256, 256, 128, 128} {
			x = n.convBN(x, 1, ch/2, 1, 1, "relu6")
			x = sepConv(x, ch, 2)
			feats = append(feats, x)
		}
		anchors = []int{6, 6, 6, 6, 6, 6}
	} else {
		type layer struct{ c, s int }
		for i, l := range []layer{{32, 2}, {64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2}, {512, 1}} {
			x = n.convBN(x, 3, l.c, l.s, 1, "relu")
			if i == 5 || i == 7 {
				feats = append(feats, x)
			}
		}
		extras := []int{512, 256, 256, 256}
		if c.res >= 512 {
			extras = []int{512, 256, 256, 256, 256}
		}
		for i, ch := range extras {
			x = n.convBN(x, 1, ch/2, 1, 1, "relu")
			if i == len(extras)-1 && x.Shape.Dims[1] == 3 {
				x = n.activation(n.batchNorm(n.convValid(x, 3, ch, 1)), "relu")
			} else {
				x = n.convBN(x, 3, ch, 2, 1, "relu")
			}
			feats = append(feats, x)
		}
		anchors = make([]int, len(feats))
		for i := range anchors {
			anchors[i] = 6
		}
		anchors[0], anchors[len(anchors)-1], anchors[len(anchors)-2] = 4, 4, 4
	}
	var boxes, scores []*hlo.Instruction
	for i, f := range feats {
		a := anchors[i]
		head := func(out int) *hlo.Instruction {
			if c.lite {
				cin := f.Shape.Dims[3]
				y := n.convBN(f, 3, cin, 1, cin, "relu6")
				return n.addBias(n.conv2d(y, 1, out, 1, 1))
			}
			return n.addBias(n.conv2d(f, 3, out, 1, 1))
		}
		cells := f.Shape.Dims[1] * f.Shape.Dims[2] * a
		boxes = append(boxes, n.b.Reshape(head(a*4), c.batch, cells, 4))
		scores = append(scores, n.b.Reshape(head(a*c.classes), c.batch, cells, c.classes))
	}
	box := n.b.Concat(1, boxes...)
	cls := n.b.Concat(1, scores...)
	if n.train {
		total := cls.Shape.Dims[1]
		ce := n.classify(n.b.Reshape(cls, c.batch*total, c.classes))
		return []*hlo.Instruction{n.b.AddOp(ce, n.meanSquared(box))}
	}
	return []*hlo.Instruction{box, n.softmax(cls, 2)}
}

func ssdVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c ssdConfig) variant {
		return variant{name: name, family: "ssd", act: act, train: train, opt: sgdMomentum, graph: c.graph}
	}
	return []variant{
		v("ssd300_voc_b8", hlo.BF16, true, ssdConfig{batch: 8, res: 300, classes: 21}),
		v("ssd300_voc_b32", hlo.BF16, false, ssdConfig{batch: 32, res: 300, classes: 21}),
		v("ssd300_coco_b1", hlo.F32, false, ssdConfig{batch: 1, res: 300, classes: 91}),
		v("ssd512_coco_b1", hlo.F32, false, ssdConfig{batch: 1, res: 512, classes: 91}),
		v("ssdlite320_coco_b16", hlo.BF16, true, ssdConfig{batch: 16, res: 320, classes: 91, lite: true}),
	}
}
