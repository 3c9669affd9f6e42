package bitserial

import (
	"slices"
	"strings"
	"testing"
)

// TestEveryLUTVariantEqualsIntegerReference: every loop order (pool-table included) ×
// block × unroll of the LUT
// kernel, on every pooled layer of the network (the dense one included: K = 7, no
// padding, 10 outputs), for every b in 1..8 and z in {1, 4, 8}, gives accumulators equal
// bit for bit to ConvInt8 on the expanded pool weights.
func TestEveryLUTVariantEqualsIntegerReference(t *testing.T) {
	for _, z := range []int{8, 4, 1} {
		n := poolNet(z, 5)
		var lut LUT
		BuildLUT(&lut, n.Pool, n.Z)
		for b := 1; b <= 8; b++ {
			for i := 1; i < len(n.Layers); i++ {
				l := n.Layers[i]
				in := randomActs(l, b, uint64(100*i+10*z+b))
				size := l.OH() * l.OW() * l.Cout
				ref := make([]int32, size)
				scratch := make([]uint8, 8*l.K*l.K*l.Cin)
				planes := make([]uint8, 8*l.H*l.W*l.Cin+8)
				ConvInt8(l, in, n.W[i], ref, scratch)
				BitPlanes(l, in, z, b, planes)
				idxT := GroupMajor(l, n.Idx[i], z)
				var mem LUTScratch
				for _, v := range LUTVariants() {
					if v.Check(l) != nil {
						continue
					}
					got := make([]int32, size)
					ConvLUTVariant(l, planes, n.Idx[i], idxT, &lut, b, v, got, &mem)
					if !slices.Equal(got, ref) {
						t.Fatalf("z=%d b=%d layer %d %s: accumulators differ from the integer reference", z, b, i+1, v)
					}
				}
			}
		}
	}
}

// TestEveryInt8VariantEqualsConvInt8: every blocking × unrolling of the 8-bit integer
// kernel gives ConvInt8's accumulators on every layer (window lengths 9, 144, 288, 1568:
// the unrolled loops' remainders included).
func TestEveryInt8VariantEqualsConvInt8(t *testing.T) {
	n := benchNet(3)
	for i, l := range n.Layers {
		in := randomActs(l, 8, uint64(i))
		size := l.OH() * l.OW() * l.Cout
		ref := make([]int32, size)
		scratch := make([]uint8, l.K*l.K*l.Cin)
		ConvInt8(l, in, n.W[i], ref, scratch)
		checked := 0
		for _, v := range Int8Variants() {
			if v.Check(l) != nil {
				continue
			}
			got := make([]int32, size)
			ConvInt8Variant(l, in, n.W[i], got, scratch, v)
			if !slices.Equal(got, ref) {
				t.Fatalf("layer %d %s: accumulators differ from ConvInt8", i+1, v)
			}
			checked++
		}
		if checked < 6 {
			t.Errorf("layer %d: %d int8 variants fit, want at least 6 (blocks 1 and 2)", i+1, checked)
		}
	}
}

// TestEveryPool8VariantEqualsConvPool8: every blocking × unrolling of the 8-bit
// weight-pool kernel gives ConvPool8's accumulators on every pooled layer, for z in
// {8, 4, 1} (the unrolled loops' remainders included: 18, 36 and 196 vectors at z = 8).
func TestEveryPool8VariantEqualsConvPool8(t *testing.T) {
	for _, z := range []int{8, 4, 1} {
		n := poolNet(z, 4)
		for i := 1; i < len(n.Layers); i++ {
			l := n.Layers[i]
			in := randomActs(l, 8, uint64(i+z))
			size := l.OH() * l.OW() * l.Cout
			ref := make([]int32, size)
			scratch := make([]uint8, l.K*l.K*l.Cin)
			ConvPool8(l, in, n.Idx[i], n.Pool, z, ref, scratch)
			checked := 0
			for _, v := range Pool8Variants() {
				if v.Check(l) != nil {
					continue
				}
				got := make([]int32, size)
				ConvPool8Variant(l, in, n.Idx[i], n.Pool, z, got, scratch, v)
				if !slices.Equal(got, ref) {
					t.Fatalf("z=%d layer %d %s: accumulators differ from ConvPool8", z, i+1, v)
				}
				checked++
			}
			if checked < 6 {
				t.Errorf("layer %d: %d pool8 variants fit, want at least 6 (blocks 1 and 2)", i+1, checked)
			}
		}
	}
}

// TestPlannedRunnerClassifiesAsPlain: a Runner on non-plain variants (a different one per
// layer and b, pool-table on the third layer) gives the plain Runner's logits exactly,
// for the int8 network, the pool8 kernel and the LUT kernel at every b.
func TestPlannedRunnerClassifiesAsPlain(t *testing.T) {
	n := benchNet(9)
	lv, iv := LUTVariants(), Int8Variants()
	pv := Pool8Variants()
	plan := &Plan{Int8: []Int8Variant{iv[8], iv[5], iv[7], iv[4]}, Pool8: []Pool8Variant{{}, pv[8], pv[4], pv[5]}}
	for b := 1; b <= 8; b++ {
		plan.LUT[b] = []LUTVariant{{}, lv[(3*b)%len(lv)], lv[(5*b+1)%len(lv)], lv[(7*b+2)%len(lv)]}
		plan.LUT[b][2] = LUTVariant{Order: OrderPoolTable, Block: 1 << (b % 3), Unroll: 1 << (b / 3 % 3)}
		if plan.LUT[b][3].Block == 4 { // the dense layer has 10 outputs
			plan.LUT[b][3].Block = 2
		}
	}
	plain := NewRunner(n)
	planned, err := NewPlannedRunner(n, plan)
	if err != nil {
		t.Fatal(err)
	}
	img := randomActs(Layer{H: Side, W: Side, Cin: 1}, 8, 1)
	for _, k := range []Kernel{KernelInt8, KernelPool8, KernelLUT} {
		for b := 1; b <= 8; b++ {
			plain.Predict(img, k, b)
			want := slices.Clone(plain.logits)
			planned.Predict(img, k, b)
			if !slices.Equal(planned.logits, want) {
				t.Fatalf("%s b=%d: planned logits %v, plain %v", k, b, planned.logits, want)
			}
		}
	}
}

// TestPlanRefusesMisfits: a variant whose block does not divide its layer's outputs, or an
// unknown order, is refused in one line naming the layer.
func TestPlanRefusesMisfits(t *testing.T) {
	n := benchNet(1)
	bad := &Plan{}
	bad.LUT[4] = []LUTVariant{{}, {}, {}, {Order: OrderBitGroup, Block: 4, Unroll: 1}}
	if _, err := NewPlannedRunner(n, bad); err == nil || !strings.Contains(err.Error(), "layer 4's LUT variant at b=4: block 4") {
		t.Errorf("block 4 on the 10-output dense layer: %v", err)
	}
	bad = &Plan{Int8: []Int8Variant{{Block: 1, Unroll: 3}}}
	if _, err := NewPlannedRunner(n, bad); err == nil || !strings.Contains(err.Error(), "unroll 3") {
		t.Errorf("unroll 3: %v", err)
	}
	bad = &Plan{}
	bad.LUT[2] = []LUTVariant{{}, {Order: "diagonal", Block: 1, Unroll: 1}}
	if _, err := NewPlannedRunner(n, bad); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown order: %v", err)
	}
}
