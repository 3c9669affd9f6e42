package suggest

import (
	"slices"
	"testing"
)

// TestDistance: insertions, deletions, substitutions and adjacent transpositions each
// cost one.
func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"", "abc", 3}, {"abc", "", 3},
		{"kitten", "sitting", 3}, {"resnet", "renset", 1}, {"ab", "ba", 1},
		{"resnet50_b33", "resnet50_b32", 1}, {"nope", "resnet18_b1", 10},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestClosest: candidates are ranked by edit distance, only close ones are suggested,
// and a fragment of a name suggests the names that contain it.
func TestClosest(t *testing.T) {
	names := []string{"resnet18_b1", "resnet18_b32", "resnet50_b1", "resnet50_b32", "bert_base_s128_b8",
		"bert_base_s384_b1", "mlp_96x2_b1", "mlp_768x3_b8", "dlrm_small_b32"}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"nope", nil}, // close to nothing: no suggestion
		{"resnet50_b33", []string{"resnet50_b32", "resnet50_b1", "resnet18_b32"}}, // by distance 1, 2, 3
		{"renset18_b1", []string{"resnet18_b1", "resnet18_b32", "resnet50_b1"}},   // a transposition is one edit
		{"RESNET18_B1", []string{"resnet18_b1", "resnet18_b32", "resnet50_b1"}},   // case does not count
		{"bert_base", []string{"bert_base_s128_b8", "bert_base_s384_b1"}},         // a fragment
		{"mlp", []string{"mlp_96x2_b1", "mlp_768x3_b8"}},                          // shorter names first
		{"x", nil},
	} {
		if got := Closest(tc.name, names, 3); !slices.Equal(got, tc.want) {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Closest("resnet50_b33", names, 1); !slices.Equal(got, []string{"resnet50_b32"}) {
		t.Errorf("n=1: %q", got)
	}
}
