package bitserial

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomActs is a layer's input with every activation below 2^b.
func randomActs(l Layer, b int, seed uint64) []uint8 {
	r := rand.New(rand.NewPCG(seed, uint64(b)))
	a := make([]uint8, l.H*l.W*l.Cin)
	for i := range a {
		a[i] = uint8(r.IntN(1 << b))
	}
	return a
}

// poolNet is benchNet with vectors of z weights.
func poolNet(z int, seed uint64) *Net {
	n := benchNet(seed)
	if z == n.Z {
		return n
	}
	r := rand.New(rand.NewPCG(seed, 3))
	n.Z = z
	n.Pool = make([]int8, n.P*z)
	for i := range n.Pool {
		n.Pool[i] = int8(r.IntN(256) - 128) // -128 too: the table's extremes
	}
	for i := 1; i < len(n.Layers); i++ {
		l := n.Layers[i]
		idx := make([]uint8, l.Weights()/z)
		var w []int8
		for j := range idx {
			idx[j] = uint8(r.IntN(n.P))
			w = append(w, n.Pool[int(idx[j])*z:int(idx[j])*z+z]...)
		}
		n.Idx[i], n.W[i] = idx, w
	}
	return n
}

// TestLUTEqualsIntegerReference: for every b in 1..8 and vector length, every pooled
// layer's accumulators from the bit-serial LUT kernel equal, bit for bit, the 8-bit
// integer kernel's on the expanded pool weights and the 8-bit pool kernel's.
func TestLUTEqualsIntegerReference(t *testing.T) {
	for _, z := range []int{8, 4, 1} {
		n := poolNet(z, 7)
		var lut LUT
		BuildLUT(&lut, n.Pool, n.Z)
		for b := 1; b <= 8; b++ {
			for i := 1; i < len(n.Layers); i++ {
				l := n.Layers[i]
				in := randomActs(l, b, uint64(10*i+z))
				size := l.OH() * l.OW() * l.Cout
				ref, pool, got := make([]int32, size), make([]int32, size), make([]int32, size)
				scratch := make([]uint8, 8*l.K*l.K*l.Cin)
				planes := make([]uint8, 8*l.H*l.W*l.Cin)
				ConvInt8(l, in, n.W[i], ref, scratch)
				ConvPool8(l, in, n.Idx[i], n.Pool, n.Z, pool, scratch)
				BitPlanes(l, in, n.Z, b, planes)
				ConvLUT(l, planes, n.Idx[i], &lut, b, got, scratch)
				if !slices.Equal(ref, pool) {
					t.Fatalf("z=%d b=%d layer %d: pool kernel differs from the integer reference", z, b, i+1)
				}
				if j := firstDiff(ref, got); j >= 0 {
					t.Fatalf("z=%d b=%d layer %d: LUT accumulator %d is %d, integer reference %d", z, b, i+1, j, got[j], ref[j])
				}
			}
		}
	}
}

func firstDiff(a, b []int32) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestLUTKernelReadsTheTable: the LUT kernel's products come from the table, not from
// the weights. Changing one table entry (a pattern the layer's activations use) changes
// its accumulators, and the table has exactly P·2^z entries, each the dot product of a
// pool vector with a bit pattern.
func TestLUTKernelReadsTheTable(t *testing.T) {
	n := poolNet(8, 3)
	var lut LUT
	BuildLUT(&lut, n.Pool, n.Z)
	if len(lut.T) != n.P<<n.Z {
		t.Fatalf("table has %d entries, want P·2^z = %d", len(lut.T), n.P<<n.Z)
	}
	for _, e := range []struct{ p, pat int }{{0, 0}, {5, 0xff}, {63, 0x5a}, {17, 1}} {
		var want int16
		for j := 0; j < n.Z; j++ {
			if e.pat>>j&1 != 0 {
				want += int16(n.Pool[e.p*n.Z+j])
			}
		}
		if got := lut.T[e.p<<n.Z|e.pat]; got != want {
			t.Errorf("T[%d][%#x] = %d, want %d", e.p, e.pat, got, want)
		}
	}
	l := n.Layers[2]
	b := 3
	in := randomActs(l, b, 5)
	planes := make([]uint8, 8*l.H*l.W*l.Cin)
	scratch := make([]uint8, 8*l.K*l.K*l.Cin)
	BitPlanes(l, in, n.Z, b, planes)
	size := l.OH() * l.OW() * l.Cout
	before, after := make([]int32, size), make([]int32, size)
	ConvLUT(l, planes, n.Idx[2], &lut, b, before, scratch)
	p, pat := int(n.Idx[2][0]), int(planes[0])
	lut.T[p<<n.Z|pat] += 1000
	ConvLUT(l, planes, n.Idx[2], &lut, b, after, scratch)
	if slices.Equal(before, after) {
		t.Errorf("changing table entry [%d][%#x] left the LUT kernel's output unchanged: it does not read the table", p, pat)
	}
}

func TestPackIndicesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for bits := 1; bits <= 8; bits++ {
		idx := make([]uint8, 37)
		for i := range idx {
			idx[i] = uint8(r.IntN(1 << bits))
		}
		packed := PackIndices(idx, bits)
		if want := (37*bits + 7) / 8; len(packed) != want {
			t.Errorf("bits=%d: %d bytes, want %d", bits, len(packed), want)
		}
		if got := UnpackIndices(packed, bits, len(idx)); !slices.Equal(got, idx) {
			t.Errorf("bits=%d: round trip %v, want %v", bits, got, idx)
		}
	}
}

// TestBadInputRefused: b outside 1..8, P not a power of two in 16..256, z not dividing
// the channels (or above 8) are each refused in one line.
func TestBadInputRefused(t *testing.T) {
	for _, b := range []int{0, 9, -1} {
		if err := CheckBits(b); err == nil {
			t.Errorf("b=%d accepted", b)
		}
	}
	for _, c := range []struct{ p, z int }{{48, 8}, {8, 8}, {512, 8}, {64, 3}, {64, 16}, {64, 0}} {
		err := CheckPool(DefaultArch, c.p, c.z)
		if err == nil {
			t.Errorf("P=%d z=%d accepted", c.p, c.z)
			continue
		}
		t.Log(err)
	}
	if err := CheckPool(DefaultArch, 64, 8); err != nil {
		t.Errorf("P=64 z=8 refused: %v", err)
	}
}

func TestKMeansDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	x := make([]float64, 400*8)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	c1, a1 := KMeans(x, 8, 16, 20, 9)
	c2, a2 := KMeans(x, 8, 16, 20, 9)
	if !slices.Equal(c1, c2) || !slices.Equal(a1, a2) {
		t.Error("same seed, different pools")
	}
	_, a3 := KMeans(x, 8, 16, 20, 10)
	if slices.Equal(a1, a3) {
		t.Error("another seed gave the same assignment: is the seed used?")
	}
}
