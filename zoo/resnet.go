package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// resnetConfig is a ResNet: v1 (post-activation, stride on the 3×3 convolution as in
// v1.5) or v2 (pre-activation), with basic or bottleneck blocks, for ImageNet (7×7 stem
// and max pool, widths 64..512) or CIFAR (3×3 stem, widths 16/32/64).
type resnetConfig struct {
	batch, res int
	blocks     []int // blocks per stage
	bottleneck bool
	cifar      bool
	preact     bool
	classes    int
}

func (c resnetConfig) graph(n *net) []*hlo.Instruction {
	x := n.b.Convert(n.input(hlo.F32, c.batch, c.res, c.res, 3), n.act)
	widths := []int{64, 128, 256, 512}
	if c.cifar {
		widths = []int{16, 32, 64}
		if c.preact {
			x = n.conv2d(x, 3, 16, 1, 1)
		} else {
			x = n.convBN(x, 3, 16, 1, 1, "relu")
		}
	} else {
		if c.preact {
			x = n.conv2d(x, 7, 64, 2, 1)
		} else {
			x = n.convBN(x, 7, 64, 2, 1, "relu")
		}
		x = n.maxPool(x, 3, 2)
	}
	for s, nb := range c.blocks {
		for i := 0; i < nb; i++ {
			stride := 1
			if i == 0 && s > 0 {
				stride = 2
			}
			x = c.block(n, x, widths[s], stride)
		}
	}
	if c.preact {
		x = n.relu(n.batchNorm(x))
	}
	logits := n.dense(n.globalAvgPool(x), c.classes, true)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.softmax(logits, 1)}
}

func (c resnetConfig) block(n *net, x *hlo.Instruction, width, stride int) *hlo.Instruction {
	out := width
	if c.bottleneck {
		out = 4 * width
	}
	project := stride != 1 || x.Shape.Dims[3] != out
	b := n.b
	if !c.preact {
		var y *hlo.Instruction
		if c.bottleneck {
			y = n.convBN(x, 1, width, 1, 1, "relu")
			y = n.convBN(y, 3, width, stride, 1, "relu")
			y = n.convBN(y, 1, out, 1, 1, "")
		} else {
			y = n.convBN(x, 3, width, stride, 1, "relu")
			y = n.convBN(y, 3, width, 1, 1, "")
		}
		sc := x
		if project {
			sc = n.convBN(x, 1, out, stride, 1, "")
		}
		return n.relu(b.AddOp(y, sc))
	}
	pre := n.relu(n.batchNorm(x))
	sc := x
	if project {
		sc = n.conv2d(pre, 1, out, stride, 1)
	}
	var y *hlo.Instruction
	if c.bottleneck {
		y = n.conv2d(pre, 1, width, 1, 1)
		y = n.conv2d(n.relu(n.batchNorm(y)), 3, width, stride, 1)
		y = n.conv2d(n.relu(n.batchNorm(y)), 1, out, 1, 1)
	} else {
		y = n.conv2d(pre, 3, width, stride, 1)
		y = n.conv2d(n.relu(n.batchNorm(y)), 3, width, 1, 1)
	}
	return b.AddOp(y, sc)
}

func resnetV1Variants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c resnetConfig) variant {
		return variant{name: name, family: "resnet_v1", act: act, train: train, opt: sgdMomentum, graph: c.graph}
	}
	r18 := []int{2, 2, 2, 2}
	r34 := []int{3, 4, 6, 3}
	r101 := []int{3, 4, 23, 3}
	return []variant{
		v("resnet18_b1", hlo.F32, false, resnetConfig{batch: 1, res: 224, blocks: r18, classes: 1000}),
		v("resnet18_b32", hlo.BF16, true, resnetConfig{batch: 32, res: 224, blocks: r18, classes: 1000}),
		v("resnet34_b8", hlo.BF16, false, resnetConfig{batch: 8, res: 224, blocks: r34, classes: 1000}),
		v("resnet50_b1", hlo.F32, false, resnetConfig{batch: 1, res: 224, blocks: r34, bottleneck: true, classes: 1000}),
		v("resnet50_b32", hlo.BF16, true, resnetConfig{batch: 32, res: 224, blocks: r34, bottleneck: true, classes: 1000}),
		v("resnet101_b8", hlo.BF16, false, resnetConfig{batch: 8, res: 224, blocks: r101, bottleneck: true, classes: 1000}),
		v("resnet20_cifar_b64", hlo.F32, true, resnetConfig{batch: 64, res: 32, blocks: []int{3, 3, 3}, cifar: true, classes: 10}),
	}
}

func resnetV2Variants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c resnetConfig) variant {
		c.preact = true
		return variant{name: name, family: "resnet_v2", act: act, train: train, opt: sgdMomentum, graph: c.graph}
	}
	return []variant{
		v("resnet18v2_b16", hlo.BF16, true, resnetConfig{batch: 16, res: 224, blocks: []int{2, 2, 2, 2}, classes: 1000}),
		v("resnet50v2_b8", hlo.BF16, true, resnetConfig{batch: 8, res: 224, blocks: []int{3, 4, 6, 3}, bottleneck: true, classes: 1000}),
		v("resnet101v2_b1", hlo.F32, false, resnetConfig{batch: 1, res: 224, blocks: []int{3, 4, 23, 3}, bottleneck: true, classes: 1000}),
		v("resnet152v2_b1", hlo.BF16, false, resnetConfig{batch: 1, res: 299, blocks: []int{3, 8, 36, 3}, bottleneck: true, classes: 1001}),
		v("resnet56v2_cifar_b32", hlo.F32, true, resnetConfig{batch: 32, res: 32, blocks: []int{9, 9, 9}, cifar: true, classes: 100}),
	}
}
