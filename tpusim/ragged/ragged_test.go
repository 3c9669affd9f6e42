package ragged

import (
	"math"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
)

// exact bounds float round-off in sums of a few products: the quantities compared are
// the same arithmetic done in another order.
const exact = 1e-12

func testChip(t *testing.T) tpusim.Chip {
	t.Helper()
	c, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// perToken is a program whose work is linear in the length: a batch of batch sequences
// of l tokens, each token a 128-wide f32 row multiplied by a 128x128 weight.
func perToken(batch int) Builder {
	return func(l int) (*hlo.Module, error) {
		b := hlo.NewBuilder("per_token")
		x := b.Param(hlo.F32, batch*l, 128)
		w := b.Param(hlo.F32, 128, 128)
		return b.Build(b.MatMul(x, w))
	}
}

func simNs(t *testing.T, build Builder, l int, c tpusim.Chip) float64 {
	t.Helper()
	m, err := build(l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tpusim.Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	return r.TotalNs
}

// TestPerTokenByHand: on a program linear in the length, the padding waste is the share
// of padded token slots, 1 − (32+64+128)/(3·128) = 5/12; the padded time is 3 sequences
// of a batch-2 program at 128; the ideal time is each sequence's share at its length
// plus the packing gather of the 128 f32 (512 bytes) per token the input grows by.
func TestPerTokenByHand(t *testing.T) {
	c := testChip(t)
	build := perToken(2)
	r, err := Time("per_token", build, 2, []int{32, 64, 128}, c)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.PaddingWaste-5.0/12) > exact || math.Abs(r.PaddingShare-5.0/12) > exact {
		t.Errorf("waste %.15f, share %.15f, want 5/12", r.PaddingWaste, r.PaddingShare)
	}
	if r.PackBytesPerToken != 512 {
		t.Errorf("pack bytes per token %g, want 512", r.PackBytesPerToken)
	}
	pack, err := PackNs(3*128, 32+64+128, 512, c)
	if err != nil {
		t.Fatal(err)
	}
	wantPadded := 3 * simNs(t, build, 128, c) / 2
	wantRagged := (simNs(t, build, 32, c)+simNs(t, build, 64, c)+simNs(t, build, 128, c))/2 + pack
	if math.Abs(r.PaddedNs-wantPadded) > exact*wantPadded || math.Abs(r.IdealNs-wantRagged) > exact*wantRagged || r.PackNs != pack {
		t.Errorf("padded %.1f ideal %.1f pack %.1f, want %.1f %.1f %.1f", r.PaddedNs, r.IdealNs, r.PackNs, wantPadded, wantRagged, pack)
	}
	// Packing is not free: on this one-matmul program the gather of every token's 512-byte
	// input row costs about as much as the work the padding wasted, so only its presence
	// is checked, not that ragged wins.
	if !(pack > 0) {
		t.Errorf("pack %.1f ns", pack)
	}
}

// TestEqualLengths: a batch of equal lengths is dense: the ideal time is the padded time,
// no packing, no padding; Time compiles no ragged program (RaggedNs 0).
func TestEqualLengths(t *testing.T) {
	c := testChip(t)
	for _, lengths := range [][]int{{64}, {128, 128, 128}} {
		r, err := Time("per_token", perToken(4), 4, lengths, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.IdealNs != r.PaddedNs || r.PackNs != 0 || r.PaddingWaste != 0 || r.PaddingShare != 0 || r.IdealSpeedup != 1 || r.RaggedNs != 0 || r.Speedup != 0 {
			t.Errorf("%v: %+v", lengths, r)
		}
	}
}

// TestCalibration: on a transformer, the ideal and the compiled ragged times drop as the
// batch's padding grows (the longest length fixed), and the padding waste grows with it;
// bert_tiny has a ragged form, so the batch is the 4 lengths. The lengths are
// multiples of the tile alignment; at a small padding share (128,120,120,120: 5%) the
// packing gather outweighs the saved work and ragged is slower (docs/simulator.md).
func TestCalibration(t *testing.T) {
	c := testChip(t)
	var prev *Report
	for _, lengths := range [][]int{{128, 128, 128, 128}, {128, 128, 64, 64}, {128, 96, 64, 32}, {128, 64, 64, 32}, {128, 32, 32, 32}} {
		r, err := TimeZoo("bert_tiny_s128_b32", lengths, c)
		if err != nil {
			t.Fatal(err)
		}
		if r.Batch != 4 {
			t.Fatalf("batch %d", r.Batch)
		}
		if prev != nil {
			if r.PaddedNs != prev.PaddedNs || !(r.IdealNs < prev.IdealNs) || !(r.RaggedNs < prev.RaggedNs) || !(r.PaddingWaste > prev.PaddingWaste) {
				t.Errorf("%v: padded %.0f ideal %.0f ragged %.0f waste %.3f after %v: padded %.0f ideal %.0f ragged %.0f waste %.3f",
					lengths, r.PaddedNs, r.IdealNs, r.RaggedNs, r.PaddingWaste, prev.Lengths, prev.PaddedNs, prev.IdealNs, prev.RaggedNs, prev.PaddingWaste)
			}
		}
		prev = r
	}
	if !(prev.Speedup > 1) {
		t.Errorf("%v: ragged %.0f ns not faster than padded %.0f ns", prev.Lengths, prev.RaggedNs, prev.PaddedNs)
	}
}

// TestRefusals: bad lengths and sources are refused with one line.
func TestRefusals(t *testing.T) {
	for _, bad := range []string{"", "37,,64", "37,abc", "0", "-4", "70000"} {
		if _, err := ParseLengths(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if l, err := ParseLengths("64, 37,64"); err != nil || len(l) != 3 || l[0] != 64 || l[1] != 37 {
		t.Errorf("%v %v", l, err)
	}
	c := testChip(t)
	for _, tc := range []struct {
		src     string
		lengths []int
		want    string
	}{
		{"resnet18_b1", []int{32, 64}, `no dynamic dimension "seq"`},
		{"bert_tiny_s128_b32", []int{32, 600}, "takes seq up to 512"},
		{"../../zoo/testdata/bounded.hlo", []int{32, 64}, "take a zoo model that declares seq"},
		{"no_such_model", []int{32}, "no model named"},
	} {
		_, err := TimeZoo(tc.src, tc.lengths, c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s %v: %v, want one line with %q", tc.src, tc.lengths, err, tc.want)
		}
	}
	if b, err := ZooBatch("bert_base_s128_b8_train"); err != nil || b != 8 {
		t.Errorf("batch %d %v", b, err)
	}
}
