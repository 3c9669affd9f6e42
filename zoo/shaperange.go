package zoo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/internal/stablehash"
)

// isShapeRange reports whether a --shapes value (after NAME=) is in a range form.
func isShapeRange(v string) bool {
	v = strings.TrimSpace(v)
	return strings.Contains(v, "..") || strings.HasPrefix(v, "uniform:")
}

// parseShapeRange parses the range forms of a --shapes list (the value after NAME=):
//
//   - LO..HI: every value from LO to HI;
//   - uniform:LO-HI:N:SEED: N distinct values drawn uniformly from LO..HI with SEED (the
//     same seed, the same values), stratified: one from each of N strata of equal width,
//     the first and last strata giving LO and HI (the range's ends).
//
// Values are integers in [1, MaxDimValue] with LO <= HI and 2 <= N <= HI−LO+1.
func parseShapeRange(name, v string) (ShapeList, error) {
	want := fmt.Sprintf("want %s=LO..HI or %s=uniform:LO-HI:N:SEED (e.g. seq=1..512, seq=uniform:1-512:16:1)", name, name)
	bound := func(s string) (int, error) {
		x, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || x < 1 || x > MaxDimValue {
			return 0, fmt.Errorf("%s=%s: %q is not an integer in [1, %d]", name, v, s, MaxDimValue)
		}
		return x, nil
	}
	l := ShapeList{Name: name, Range: v}
	var lohi string
	n, seed := 0, int64(0)
	if rest, ok := strings.CutPrefix(v, "uniform:"); ok {
		parts := strings.Split(rest, ":")
		if len(parts) != 3 {
			return ShapeList{}, fmt.Errorf("%s=%s: %s", name, v, want)
		}
		lohi = strings.Replace(parts[0], "-", "..", 1)
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(parts[1])); err != nil || n < 2 {
			return ShapeList{}, fmt.Errorf("%s=%s: N %q is not an integer >= 2", name, v, parts[1])
		}
		if seed, err = strconv.ParseInt(strings.TrimSpace(parts[2]), 10, 64); err != nil {
			return ShapeList{}, fmt.Errorf("%s=%s: SEED %q is not an integer", name, v, parts[2])
		}
	} else {
		lohi = v
	}
	a, b, ok := strings.Cut(lohi, "..")
	if !ok {
		return ShapeList{}, fmt.Errorf("%s=%s: %s", name, v, want)
	}
	var err error
	if l.Lo, err = bound(a); err != nil {
		return ShapeList{}, err
	}
	if l.Hi, err = bound(b); err != nil {
		return ShapeList{}, err
	}
	if l.Lo > l.Hi {
		return ShapeList{}, fmt.Errorf("%s=%s: LO %d is above HI %d", name, v, l.Lo, l.Hi)
	}
	if n == 0 {
		for x := l.Lo; x <= l.Hi; x++ {
			l.Values = append(l.Values, x)
		}
		return l, nil
	}
	if n > l.Hi-l.Lo+1 {
		return ShapeList{}, fmt.Errorf("%s=%s: N %d is more than the %d values of %d..%d", name, v, n, l.Hi-l.Lo+1, l.Lo, l.Hi)
	}
	// Stratified: N strata of (nearly) equal width, one seeded value from each, the first
	// and last strata giving LO and HI: the sample covers the range evenly.
	h := stablehash.Seeded(seed).Str("shapes-uniform")
	width := float64(l.Hi-l.Lo+1) / float64(n)
	for i := range n {
		a := l.Lo + int(float64(i)*width)
		b := l.Lo + int(float64(i+1)*width) - 1
		switch {
		case i == 0:
			l.Values = append(l.Values, l.Lo)
		case i == n-1:
			l.Values = append(l.Values, l.Hi)
		default:
			l.Values = append(l.Values, a+int(stablehash.Mix(h.Sum64()^stablehash.Weyl(uint64(i)))%uint64(b-a+1)))
		}
	}
	slices.Sort(l.Values)
	return l, nil
}
