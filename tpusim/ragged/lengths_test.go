package ragged

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLengthForms: a named distribution draws N lengths in [LO, HI], the same for the
// same seed and different for another; zipf is skewed to short ones; a file's lengths are
// read in order; bad forms are one line each.
func TestLengthForms(t *testing.T) {
	for _, d := range []string{"uniform:16-512:64:1", "zipf:16-512:64:1"} {
		a, err := ParseLengths(d)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ParseLengths(d)
		c, _ := ParseLengths(strings.TrimSuffix(d, "1") + "2")
		if len(a) != 64 || !slices.Equal(a, b) || slices.Equal(a, c) || slices.Min(a) < 16 || slices.Max(a) > 512 {
			t.Errorf("%s: %v (again %v, seed 2 %v)", d, a, b, c)
		}
	}
	u, _ := ParseLengths("uniform:16-512:256:7")
	z, _ := ParseLengths("zipf:16-512:256:7")
	below := func(ls []int) int { // lengths in the shortest tenth of the range
		n := 0
		for _, l := range ls {
			if l < 16+50 {
				n++
			}
		}
		return n
	}
	if !(below(z) > 2*below(u)) {
		t.Errorf("zipf has %d short lengths, uniform %d: want zipf skewed to short", below(z), below(u))
	}
	path := filepath.Join(t.TempDir(), "lengths.txt")
	if err := os.WriteFile(path, []byte("37 64\n200,512\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := ParseLengths("file:" + path); err != nil || !slices.Equal(l, []int{37, 64, 200, 512}) {
		t.Errorf("file: %v %v", l, err)
	}
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	for _, bad := range []string{"uniform:16-512:64", "uniform:512-16:4:1", "uniform:0-16:4:1", "zipf:16-512:0:1", "zipf:16-512:5000:1",
		"normal:16-512:4:1", "file:/no/such/file", "file:" + empty, "uniform:a-b:4:1"} {
		if _, err := ParseLengths(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one error line", bad, err)
		}
	}
}
