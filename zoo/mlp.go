package zoo

import "github.com/tpucost/tpucost/compiler/hlo"

// mlpConfig is a multi-layer perceptron classifier.
type mlpConfig struct {
	batch, in int
	hidden    []int
	classes   int
	act       string
}

func (c mlpConfig) graph(n *net) []*hlo.Instruction {
	x := n.b.Convert(n.input(hlo.F32, c.batch, c.in), n.act)
	for _, h := range c.hidden {
		x = n.activation(n.dense(x, h, true), c.act)
	}
	logits := n.dense(x, c.classes, true)
	if n.train {
		return []*hlo.Instruction{n.classify(logits)}
	}
	return []*hlo.Instruction{n.softmax(logits, 1)}
}

func mlpVariants() []variant {
	v := func(name string, act hlo.ElemType, c mlpConfig) variant {
		return variant{name: name, family: "mlp", act: act, train: true, opt: sgdMomentum, graph: c.graph}
	}
	return []variant{
		v("mlp_96x2_b1", hlo.F32, mlpConfig{batch: 1, in: 64, hidden: []int{96, 96}, classes: 10, act: "relu"}),
		v("mlp_lenet300_b32", hlo.F32, mlpConfig{batch: 32, in: 784, hidden: []int{300, 100}, classes: 10, act: "relu"}),
		v("mlp_1000x4_b64", hlo.F32, mlpConfig{batch: 64, in: 784, hidden: []int{1000, 1000, 1000, 1000}, classes: 10, act: "tanh"}),
		v("mlp_1024x6_b16", hlo.BF16, mlpConfig{batch: 16, in: 1024, hidden: []int{1024, 1024, 1024, 1024, 1024, 1024}, classes: 1000, act: "relu"}),
		v("mlp_768x3_b8", hlo.BF16, mlpConfig{batch: 8, in: 768, hidden: []int{3072, 768, 384}, classes: 2, act: "gelu"}),
	}
}
