package features

import (
	"math"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler"
)

// TestRaggedSchema: the ragged feature set is tpucost's own schema with RaggedWidth
// distinct names appended to the kernel features; tpucost's own schema is unchanged.
func TestRaggedSchema(t *testing.T) {
	own, rs := CurrentSchema(), RaggedSchema()
	if len(raggedNames()) != RaggedWidth || len(rs.Kernel) != KernelWidth+RaggedWidth || len(own.Kernel) != KernelWidth {
		t.Fatalf("widths: ragged names %d (want %d), ragged kernel %d, own kernel %d", len(raggedNames()), RaggedWidth, len(rs.Kernel), len(own.Kernel))
	}
	if !slices.Equal(rs.Kernel[:KernelWidth], own.Kernel) || !slices.Equal(rs.Node, own.Node) || !slices.Equal(rs.Config, own.Config) || rs.Version != own.Version {
		t.Error("the ragged schema's node, config or leading kernel features differ from tpucost's own")
	}
	seen := map[string]bool{}
	for _, n := range rs.Kernel {
		if seen[n] {
			t.Errorf("kernel feature %q twice", n)
		}
		seen[n] = true
	}
}

// TestRaggedFeatures: the features of the batch {37, 64, 100, 128} (worked by hand: mean
// 82.25, population standard deviation 34.600, packed rows 40+64+104+128 = 336, padding
// 1 − 329/512) for each kind; equal lengths have no spread and no padding.
func TestRaggedFeatures(t *testing.T) {
	// tol: float32 rounding of values of order 1-10 (2^-23 relative), with margin.
	const tol = 1e-5
	lg2 := func(x float64) float64 { return math.Log2(1 + x) }
	got := RaggedFeatures(compiler.RaggedPerSequence, true, []int{37, 64, 100, 128}, compiler.PackAlign)
	want := []float64{0, 1, 0, 1, lg2(4), lg2(82.25), lg2(128), math.Sqrt(1197.1875) / 82.25, lg2(336), 1 - 329.0/512}
	for i, w := range want {
		if math.Abs(float64(got[i])-w) > tol {
			t.Errorf("%s = %g, want %g", raggedNames()[i], got[i], w)
		}
	}
	for _, tc := range []struct {
		kind compiler.RaggedKind
		hot  []float32
	}{{compiler.RaggedDense, []float32{0, 0, 0}}, {compiler.RaggedPacked, []float32{1, 0, 0}}, {compiler.RaggedPadKernel, []float32{0, 0, 1}}} {
		if f := RaggedFeatures(tc.kind, false, []int{8}, compiler.PackAlign); !slices.Equal(f[:3], tc.hot) || f[3] != 0 {
			t.Errorf("kind %s: %v, want one-hot %v and no offsets", tc.kind, f[:4], tc.hot)
		}
	}
	eq := RaggedFeatures(compiler.RaggedPacked, true, []int{128, 128, 128}, compiler.PackAlign)
	if eq[7] != 0 || eq[9] != 0 || math.Abs(float64(eq[8])-lg2(384)) > tol {
		t.Errorf("equal lengths: spread %g padding %g packed %g, want 0, 0, log2(385)", eq[7], eq[9], eq[8])
	}
}
