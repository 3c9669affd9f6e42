package lutcpu

import (
	"slices"
	"testing"

	"github.com/tpucost/tpucost/bitserial"
)

// TestEveryVariantEqualsIntegerReference: every loop order (pool-table included) × block ×
// unroll, for every b
// in 1..8 and z in {1, 2, 4, 8}, on a padded stride-1 layer and a stride-2 one, gives
// accumulators equal bit for bit to the 8-bit integer kernel on the expanded pool weights.
func TestEveryVariantEqualsIntegerReference(t *testing.T) {
	layers := []bitserial.Layer{DefaultLayer(), bitserial.DefaultArch.Layers()[1]}
	for li, l := range layers {
		for _, z := range []int{1, 2, 4, 8} {
			for b := 1; b <= 8; b++ {
				p := []int{16, 256, 64, 32}[(b+z)%4]
				var ref []int32
				for _, o := range Orders() {
					for _, bl := range Blocks() {
						for _, u := range Unrolls() {
							c := Config{P: p, Z: z, B: b, Order: o, Block: bl, Unroll: u}
							k, err := NewKernel(l, c, 11)
							if err != nil {
								t.Fatal(err)
							}
							if ref == nil {
								ref = k.Reference()
							}
							got := k.Run()
							if !slices.Equal(got, ref) {
								t.Fatalf("layer %d %s: accumulators differ from the integer reference", li, c)
							}
							// A second run (table and planes rebuilt in place) is the same.
							if !slices.Equal(k.Run(), ref) {
								t.Fatalf("layer %d %s: second run differs", li, c)
							}
						}
					}
				}
			}
		}
	}
}

// TestVariantsReadTheTable: every variant's products come from the table: a kernel whose
// table entries are all shifted gives other accumulators (so none multiplies weights).
func TestVariantsReadTheTable(t *testing.T) {
	l := DefaultLayer()
	for _, o := range Orders() {
		c := Config{P: 64, Z: 8, B: 3, Order: o, Block: 2, Unroll: 4}
		k, err := NewKernel(l, c, 5)
		if err != nil {
			t.Fatal(err)
		}
		ref := slices.Clone(k.Run())
		bitserial.BuildLUT(&k.lut, k.pool, c.Z)
		for i := range k.lut.T {
			k.lut.T[i]++
		}
		bitserial.ConvLUTVariant(k.l, k.plane, k.idx, k.idxT, &k.lut, c.B, c.Variant(), k.acc, &k.mem)
		if slices.Equal(k.acc, ref) {
			t.Errorf("%s: changing the table left the output unchanged", c)
		}
	}
}

// TestSpaceAndBadConfigs: the default space has 4,320 configs, each round-tripping its
// string; bad values are refused in one line.
func TestSpaceAndBadConfigs(t *testing.T) {
	cs, err := DefaultSpace().Configs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4320 {
		t.Fatalf("%d configs, want 5·3·8·36 = 4320", len(cs))
	}
	for _, c := range cs[:50] {
		back, err := ParseConfig(c.String(), DefaultLayer())
		if err != nil || back != c {
			t.Fatalf("%s: parsed back %v, %v", c, back, err)
		}
	}
	good := Config{P: 64, Z: 8, B: 4, Order: OrderBitGroup, Block: 1, Unroll: 1}
	for _, bad := range []Config{
		{P: 64, Z: 8, B: 0, Order: OrderBitGroup, Block: 1, Unroll: 1},
		{P: 64, Z: 8, B: 9, Order: OrderBitGroup, Block: 1, Unroll: 1},
		{P: 48, Z: 8, B: 4, Order: OrderBitGroup, Block: 1, Unroll: 1},
		{P: 64, Z: 3, B: 4, Order: OrderBitGroup, Block: 1, Unroll: 1},
		{P: 64, Z: 8, B: 4, Order: "diagonal", Block: 1, Unroll: 1},
		{P: 64, Z: 8, B: 4, Order: OrderBitGroup, Block: 3, Unroll: 1},
		{P: 64, Z: 8, B: 4, Order: OrderBitGroup, Block: 1, Unroll: 8},
	} {
		if err := bad.Check(DefaultLayer()); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := good.Check(DefaultLayer()); err != nil {
		t.Errorf("%s refused: %v", good, err)
	}
	if _, err := ParseConfig("P=64;z=8", DefaultLayer()); err == nil {
		t.Error("a partial config parsed")
	}
}
