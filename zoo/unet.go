package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// unetConfig is a UNet segmenter: depth levels of two 3×3 convolutions with channels
// doubling from base, 2×2 max-pool down-sampling, up-sampling by a 2×2 stride-2
// transposed convolution (a convolution with lhs dilation 2) or by nearest-neighbour
// repetition (broadcast + reshape) followed by a convolution, skip connections by channel
// concatenation, and a 1×1 classifier per pixel.
type unetConfig struct {
	batch, res int
	depth      int
	base       int
	classes    int
	nearest    bool
}

func (c unetConfig) graph(n *net) []*hlo.Instruction {
	b := n.b
	double := func(x *hlo.Instruction, ch int) *hlo.Instruction {
		x = n.relu(n.addBias(n.conv2d(x, 3, ch, 1, 1)))
		return n.relu(n.addBias(n.conv2d(x, 3, ch, 1, 1)))
	}
	x := b.Convert(n.input(hlo.F32, c.batch, c.res, c.res, 3), n.act)
	var skips []*hlo.Instruction
	ch := c.base
	for l := 0; l < c.depth; l++ {
		x = double(x, ch)
		skips = append(skips, x)
		x = n.maxPool(x, 2, 2)
		ch *= 2
	}
	x = double(x, ch)
	for l := c.depth - 1; l >= 0; l-- {
		ch /= 2
		d := x.Shape.Dims
		if c.nearest {
			up := b.Broadcast(x, []int{0, 1, 3, 5}, d[0], d[1], 2, d[2], 2, d[3])
			x = b.Reshape(up, d[0], 2*d[1], 2*d[2], d[3])
			x = n.relu(n.addBias(n.conv2d(x, 3, ch, 1, 1)))
		} else {
			// conv2d_transpose(kernel 2, stride 2) = convolution over the input dilated
			// by 2, padded by 1 on each side.
			wd := hlo.WindowDim{Size: 2, Stride: 1, PadLo: 1, PadHi: 1, LhsDilate: 2, RhsDilate: 1}
			k := n.weight(2, 2, d[3], ch)
			x = n.relu(n.addBias(b.Conv(x, k, hlo.NHWC(), hlo.Window{Dims: []hlo.WindowDim{wd, wd}}, 1)))
		}
		x = double(b.Concat(3, skips[l], x), ch)
	}
	logits := n.addBias(n.conv2d(x, 1, c.classes, 1, 1))
	flat := b.Reshape(logits, c.batch*c.res*c.res, c.classes)
	if n.train {
		return []*hlo.Instruction{n.classify(flat)}
	}
	return []*hlo.Instruction{b.Reshape(n.softmax(flat, 1), c.batch, c.res, c.res, c.classes)}
}

func unetVariants() []variant {
	v := func(name string, act hlo.ElemType, train bool, c unetConfig) variant {
		return variant{name: name, family: "unet", act: act, train: train, opt: adam, graph: c.graph}
	}
	return []variant{
		v("unet_d3_c32_r128_b8", hlo.BF16, true, unetConfig{batch: 8, res: 128, depth: 3, base: 32, classes: 3}),
		v("unet_d4_c64_r256_b1", hlo.F32, false, unetConfig{batch: 1, res: 256, depth: 4, base: 64, classes: 2}),
		v("unet_d4_c16_r96_b16", hlo.F32, true, unetConfig{batch: 16, res: 96, depth: 4, base: 16, classes: 5, nearest: true}),
		v("unet_d5_c32_r192_b4", hlo.BF16, false, unetConfig{batch: 4, res: 192, depth: 5, base: 32, classes: 21, nearest: true}),
		v("unet_d3_c48_r160_b32", hlo.BF16, false, unetConfig{batch: 32, res: 160, depth: 3, base: 48, classes: 4}),
	}
}
