package lutcpu

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/tpucost/tpucost/bitserial"
)

// Planner picks a pool network's kernel variants on this CPU (bitserial.Planner): for
// every pooled layer and activation precision b, every LUT variant of the problem (P, z,
// b) is measured on that layer (CPU.Measure: table build, bit-planes and convolution, by
// Method) and the fastest median kept; for every layer, every 8-bit integer variant
// (bitserial.Int8Variants) is measured the same way on the layer with random int8 weights
// and activations, and for every pooled layer every 8-bit weight-pool variant
// (bitserial.Pool8Variants) with a random pool and indices, so that both baselines run at
// their best too. The space per problem is small (36 LUT variants, 9 int8 and 9 pool8
// ones), so the search is exhaustive: this is the space's
// best for each layer's problem, which model-guided Tune approaches with fewer
// measurements. Variants whose block does not divide a layer's output channels are
// skipped.
type Planner struct {
	Method Method
	Seed   uint64
	Timer  Timer // WallTimer when nil
}

// Plan measures and picks n's variants for bits (each 1..8).
func (p Planner) Plan(ctx context.Context, n *bitserial.Net, bits []int) (*bitserial.Plan, error) {
	if err := p.Method.Check(); err != nil {
		return nil, err
	}
	timer := p.Timer
	if timer == nil {
		timer = WallTimer{}
	}
	plan := &bitserial.Plan{Int8: make([]bitserial.Int8Variant, len(n.Layers))}
	for i, l := range n.Layers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		best, ch, err := p.fastestInt8(l, timer)
		if err != nil {
			return nil, err
		}
		ch.Layer = i + 1
		plan.Int8[i] = best
		plan.Choices = append(plan.Choices, ch)
	}
	plan.Pool8 = make([]bitserial.Pool8Variant, len(n.Layers))
	for i, l := range n.Layers {
		if i >= len(n.Idx) || n.Idx[i] == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		best, ch, err := p.fastestPool8(l, n.P, n.Z, timer)
		if err != nil {
			return nil, err
		}
		ch.Layer = i + 1
		plan.Pool8[i] = best
		plan.Choices = append(plan.Choices, ch)
	}
	for _, b := range bits {
		if err := bitserial.CheckBits(b); err != nil {
			return nil, err
		}
		plan.LUT[b] = make([]bitserial.LUTVariant, len(n.Layers))
		for i, l := range n.Layers {
			if i >= len(n.Idx) || n.Idx[i] == nil {
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			be := &CPU{Layer: l, Seed: p.Seed, Method: p.Method, Timer: timer}
			best, ch, err := fastestLUT(be, Problem{P: n.P, Z: n.Z, B: b})
			if err != nil {
				return nil, fmt.Errorf("layer %d: %w", i+1, err)
			}
			ch.Layer = i + 1
			plan.LUT[b][i] = best
			plan.Choices = append(plan.Choices, ch)
		}
	}
	return plan, nil
}

// fastestLUT measures every variant of problem pr that fits be's layer and returns the
// one with the least median.
func fastestLUT(be *CPU, pr Problem) (bitserial.LUTVariant, bitserial.VariantChoice, error) {
	ch := bitserial.VariantChoice{Kernel: "lut", B: pr.B}
	var best bitserial.LUTVariant
	for _, c := range pr.Variants() {
		if c.Variant().Check(be.Layer) != nil {
			continue // a block not dividing the layer's output channels
		}
		s, err := be.Measure(c)
		if err != nil {
			return best, ch, err
		}
		ch.Candidates++
		if c.Variant() == bitserial.PlainLUT() {
			ch.PlainNs = s.MedianNs
		}
		if ch.Candidates == 1 || s.MedianNs < ch.MedianNs {
			best, ch.MedianNs = c.Variant(), s.MedianNs
		}
	}
	if ch.Candidates == 0 {
		return best, ch, fmt.Errorf("layer of %d output channels: no LUT variant fits", be.Layer.Cout)
	}
	ch.Variant = best.String()
	return best, ch, nil
}

// fastestInt8 measures every int8 variant that fits l (random weights and activations
// drawn from p.Seed) and returns the one with the least median.
func (p Planner) fastestInt8(l bitserial.Layer, timer Timer) (bitserial.Int8Variant, bitserial.VariantChoice, error) {
	r := rand.New(rand.NewPCG(p.Seed, uint64(l.Cin)<<16|uint64(l.Cout)))
	w := make([]int8, l.Weights())
	for i := range w {
		w[i] = int8(r.IntN(255) - 127)
	}
	in := make([]uint8, l.H*l.W*l.Cin)
	for i := range in {
		in[i] = uint8(r.IntN(256))
	}
	acc := make([]int32, l.OH()*l.OW()*l.Cout)
	scratch := make([]uint8, l.K*l.K*l.Cin)
	return p.fastestBlockUnroll(l, "int8", timer, func(v bitserial.BlockUnroll) { bitserial.ConvInt8Variant(l, in, w, acc, scratch, v) })
}

// fastestBlockUnroll measures run in every blocking × unrolling variant that fits l (the
// int8 and pool8 kernels' variants, bitserial.BlockUnrolls) and returns the one with the
// least median, with the kernel's choice record (kernel named kernel, its plain variant's
// time).
func (p Planner) fastestBlockUnroll(l bitserial.Layer, kernel string, timer Timer, run func(bitserial.BlockUnroll)) (bitserial.BlockUnroll, bitserial.VariantChoice, error) {
	ch := bitserial.VariantChoice{Kernel: kernel, B: 8}
	var best bitserial.BlockUnroll
	for _, v := range bitserial.BlockUnrolls() {
		if v.Check(l) != nil {
			continue
		}
		s := p.Method.Measure(timer, func() { run(v) })
		ch.Candidates++
		if v == (bitserial.BlockUnroll{Block: 1, Unroll: 1}) {
			ch.PlainNs = s.MedianNs
		}
		if ch.Candidates == 1 || s.MedianNs < ch.MedianNs {
			best, ch.MedianNs = v, s.MedianNs
		}
	}
	if ch.Candidates == 0 {
		return best, ch, fmt.Errorf("layer of %d output channels: no %s variant fits", l.Cout, kernel)
	}
	ch.Variant = best.String()
	return best, ch, nil
}

// fastestPool8 measures every 8-bit weight-pool variant that fits l (a random pool of np
// vectors of z int8 weights, random indices and activations drawn from p.Seed) and
// returns the one with the least median.
func (p Planner) fastestPool8(l bitserial.Layer, np, z int, timer Timer) (bitserial.Pool8Variant, bitserial.VariantChoice, error) {
	r := rand.New(rand.NewPCG(p.Seed, uint64(l.Cin)<<16|uint64(l.Cout)<<8|uint64(z)))
	pool := make([]int8, np*z)
	for i := range pool {
		pool[i] = int8(r.IntN(255) - 127)
	}
	idx := make([]uint8, l.Weights()/z)
	for i := range idx {
		idx[i] = uint8(r.IntN(np))
	}
	in := make([]uint8, l.H*l.W*l.Cin)
	for i := range in {
		in[i] = uint8(r.IntN(256))
	}
	acc := make([]int32, l.OH()*l.OW()*l.Cout)
	scratch := make([]uint8, l.K*l.K*l.Cin)
	return p.fastestBlockUnroll(l, "pool8", timer, func(v bitserial.BlockUnroll) { bitserial.ConvPool8Variant(l, in, idx, pool, z, acc, scratch, v) })
}
