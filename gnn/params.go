package gnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpucost/tpucost/nn"
)

// paramSpec describes one parameter: its shape, and the fan-in and fan-out used to
// initialize it (0 fan-in: zeros; embed: the embedding init).
type paramSpec struct {
	name          string
	shape         []int
	fanIn, fanOut int
	kind          initKind
}

type initKind int

const (
	initZero   initKind = iota
	initHe              // uniform ±√(6/fanIn): ReLU layers
	initXavier          // uniform ±√(6/(fanIn+fanOut)): the linear output layer
	initEmbed           // uniform ±√(3/width): unit-variance-ish embedding rows
)

// headInput is the width of the head's input: R reductions of the node embedding and the
// kernel features (the per-kernel part), and the config features.
func (c Config) headInput() (perKernel, perConfig int) {
	return len(c.Reduce)*c.Hidden + c.KernelWidth, c.ConfigWidth
}

// paramSpecs lists the parameters of an architecture, in their fixed order. Layers that
// read a concatenation ([emb, x], [h, mean_in, mean_out], [reductions…, kernel, config])
// hold one weight block per part: x·W = Σ_parts part·W_part needs no concatenation.
func (c Config) paramSpecs() []paramSpec {
	H := c.Hidden
	in := c.EmbedDim + c.NodeWidth + c.NodeConfigWidth
	specs := []paramSpec{
		{name: "embed", shape: []int{c.Vocab, c.EmbedDim}, kind: initEmbed},
		{name: "input.w_op", shape: []int{c.EmbedDim, H}, fanIn: in, fanOut: H, kind: initHe},
		{name: "input.w_x", shape: []int{c.NodeWidth, H}, fanIn: in, fanOut: H, kind: initHe},
	}
	if c.PerNode() {
		specs = append(specs, paramSpec{name: "input.w_nc", shape: []int{c.NodeConfigWidth, H}, fanIn: in, fanOut: H, kind: initHe})
	}
	specs = append(specs, paramSpec{name: "input.b", shape: []int{H}})
	for l := 1; l <= c.Layers; l++ {
		for _, part := range []string{"self", "in", "out"} {
			specs = append(specs, paramSpec{name: fmt.Sprintf("sage%d.w_%s", l, part), shape: []int{H, H}, fanIn: 3 * H, fanOut: H, kind: initHe})
		}
		specs = append(specs, paramSpec{name: fmt.Sprintf("sage%d.b", l), shape: []int{H}})
	}
	if !c.MultiTask() {
		return append(specs, c.headSpecs("")...)
	}
	for _, t := range c.Tasks {
		specs = append(specs, c.headSpecs(c.headPrefix(string(t)))...)
	}
	return specs
}

// headSpecs lists the parameters of one head, their names prefixed with prefix.
func (c Config) headSpecs(prefix string) []paramSpec {
	H := c.Hidden
	var specs []paramSpec
	gk, gc := c.headInput()
	h0 := c.Head[0]
	for _, r := range c.Reduce {
		specs = append(specs, paramSpec{name: "head0.w_" + string(r), shape: []int{H, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	// Inputs of width 0 (a feature set without kernel features, or a per-node model
	// without global config features) have no weight block.
	if c.KernelWidth > 0 {
		specs = append(specs, paramSpec{name: "head0.w_kernel", shape: []int{c.KernelWidth, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	if gc > 0 {
		specs = append(specs, paramSpec{name: "head0.w_config", shape: []int{gc, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	specs = append(specs, paramSpec{name: "head0.b", shape: []int{h0}})
	for i := 1; i < len(c.Head); i++ {
		specs = append(specs,
			paramSpec{name: fmt.Sprintf("head%d.w", i), shape: []int{c.Head[i-1], c.Head[i]}, fanIn: c.Head[i-1], fanOut: c.Head[i], kind: initHe},
			paramSpec{name: fmt.Sprintf("head%d.b", i), shape: []int{c.Head[i]}})
	}
	last := c.Head[len(c.Head)-1]
	specs = append(specs,
		paramSpec{name: "out.w", shape: []int{last, 1}, fanIn: last, fanOut: 1, kind: initXavier},
		paramSpec{name: "out.b", shape: []int{1}})
	for i := range specs {
		specs[i].name = prefix + specs[i].name
	}
	return specs
}

// initParams draws the initial parameters of c from a PCG generator seeded with seed.
func initParams(c Config, seed int64) nn.Params {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7470_7563_6f73_7431)) // "tpucost1"
	var ps nn.Params
	for _, s := range c.paramSpecs() {
		p := nn.NewParam(s.name, s.shape...)
		var limit float64
		switch s.kind {
		case initHe:
			limit = math.Sqrt(6 / float64(s.fanIn))
		case initXavier:
			limit = math.Sqrt(6 / float64(s.fanIn+s.fanOut))
		case initEmbed:
			limit = math.Sqrt(3 / float64(s.shape[1]))
		}
		if limit > 0 {
			nn.Uniform(p.Data, limit, rng)
		}
		ps = append(ps, p)
	}
	return ps
}
