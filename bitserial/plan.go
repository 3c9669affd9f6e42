package bitserial

import (
	"context"
	"fmt"
)

// Plan is the kernel variants a network runs with: Int8[i] for layer i wherever the 8-bit
// integer kernel runs it (every layer of the 8-bit network, and the unpooled first layer
// of the pool network under every kernel), Pool8[i] for pooled layer i under the 8-bit
// weight-pool kernel, LUT[b][i] for pooled layer i at b-bit activations. A missing entry
// is the plain variant (PlainInt8, PlainPool8, PlainLUT); the zero Plan runs the plain
// kernels everywhere. Choices records how each entry was picked.
type Plan struct {
	Int8    []Int8Variant
	Pool8   []Pool8Variant
	LUT     [9][]LUTVariant
	Choices []VariantChoice
}

// VariantChoice is one pick of a Plan: the kernel ("int8", "pool8" or "lut"), the layer (1
// is the first), the activation bits (8 for int8 and pool8), the variant picked, its measured median time per
// layer call and the plain variant's, and how many variants were measured.
type VariantChoice struct {
	Kernel     string  `json:"kernel"`
	Layer      int     `json:"layer_number"`
	B          int     `json:"b"`
	Variant    string  `json:"pick"`
	MedianNs   float64 `json:"median_ns"`
	PlainNs    float64 `json:"plain_ns"`
	Candidates int     `json:"candidates"`
}

// Planner picks a pool network's Plan for the activation precisions bits (package
// lutcpu's measures every variant on this CPU).
type Planner interface {
	Plan(ctx context.Context, n *Net, bits []int) (*Plan, error)
}

// int8At is layer i's int8 variant.
func (p *Plan) int8At(i int) Int8Variant {
	if p != nil && i < len(p.Int8) && p.Int8[i] != (Int8Variant{}) {
		return p.Int8[i]
	}
	return PlainInt8()
}

// pool8At is pooled layer i's pool8 variant.
func (p *Plan) pool8At(i int) Pool8Variant {
	if p != nil && i < len(p.Pool8) && p.Pool8[i] != (Pool8Variant{}) {
		return p.Pool8[i]
	}
	return PlainPool8()
}

// lutAt is pooled layer i's LUT variant at b bits.
func (p *Plan) lutAt(b, i int) LUTVariant {
	if p != nil && b >= 0 && b < len(p.LUT) && i < len(p.LUT[b]) && p.LUT[b][i] != (LUTVariant{}) {
		return p.LUT[b][i]
	}
	return PlainLUT()
}

// Check reports, in one line, a variant of p that does not fit its layer of ls.
func (p *Plan) Check(ls []Layer) error {
	if p == nil {
		return nil
	}
	if len(p.Int8) > len(ls) {
		return fmt.Errorf("bitserial: plan has int8 variants for %d layers, the network %d", len(p.Int8), len(ls))
	}
	for i := range p.Int8 {
		if err := p.int8At(i).Check(ls[i]); err != nil {
			return fmt.Errorf("bitserial: layer %d's int8 variant: %w", i+1, err)
		}
	}
	if len(p.Pool8) > len(ls) {
		return fmt.Errorf("bitserial: plan has pool8 variants for %d layers, the network %d", len(p.Pool8), len(ls))
	}
	for i := range p.Pool8 {
		if err := p.pool8At(i).Check(ls[i]); err != nil {
			return fmt.Errorf("bitserial: layer %d's pool8 variant: %w", i+1, err)
		}
	}
	for b, vs := range p.LUT {
		if len(vs) > len(ls) {
			return fmt.Errorf("bitserial: plan has b=%d LUT variants for %d layers, the network %d", b, len(vs), len(ls))
		}
		for i := range vs {
			if err := p.lutAt(b, i).Check(ls[i]); err != nil {
				return fmt.Errorf("bitserial: layer %d's LUT variant at b=%d: %w", i+1, b, err)
			}
		}
	}
	return nil
}
