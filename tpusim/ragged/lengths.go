package ragged

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/zoo"
)

// MaxDrawn bounds how many lengths a named distribution draws.
const MaxDrawn = 4096

// ZipfExponent is the exponent s of the zipf distribution: P(LO+k) ∝ (1+k)^-s, skewed
// to short sequences as natural-language corpora are.
const ZipfExponent = 1.1

// parseForm reads the named-distribution and file forms of --lengths (ParseLengths);
// ok is false for a plain list.
func parseForm(s string) (out []int, ok bool, err error) {
	kind, rest, found := strings.Cut(strings.TrimSpace(s), ":")
	switch {
	case !found:
		return nil, false, nil
	case kind == "file":
		b, err := os.ReadFile(rest)
		if err != nil {
			return nil, true, fmt.Errorf("file:%s: %w", rest, err)
		}
		f := strings.FieldsFunc(string(b), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r' })
		if len(f) == 0 {
			return nil, true, fmt.Errorf("file:%s: no lengths in the file", rest)
		}
		out, err := ParseLengths(strings.Join(f, ","))
		if err != nil {
			return nil, true, fmt.Errorf("file:%s: %w", rest, err)
		}
		return out, true, nil
	case kind == "uniform" || kind == "zipf":
	default:
		return nil, true, fmt.Errorf("%q: unknown form %q; want L,L,..., uniform:LO-HI:N:SEED, zipf:LO-HI:N:SEED or file:PATH", s, kind)
	}
	want := fmt.Sprintf("want %s:LO-HI:N:SEED (e.g. %s:16-512:32:1)", kind, kind)
	parts := strings.Split(rest, ":")
	if len(parts) != 3 {
		return nil, true, fmt.Errorf("%q: %s", s, want)
	}
	lo, hi, okr := strings.Cut(parts[0], "-")
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	n, err3 := strconv.Atoi(parts[1])
	seed, err4 := strconv.ParseUint(parts[2], 10, 64)
	switch {
	case !okr || err1 != nil || err2 != nil || err3 != nil || err4 != nil:
		return nil, true, fmt.Errorf("%q: %s", s, want)
	case l < 1 || h < l || h > zoo.MaxDimValue:
		return nil, true, fmt.Errorf("%q: the range %d-%d is not within [1, %d] with LO <= HI", s, l, h, zoo.MaxDimValue)
	case n < 1 || n > MaxDrawn:
		return nil, true, fmt.Errorf("%q: N=%d, want 1..%d lengths", s, n, MaxDrawn)
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, ZipfExponent, 1, uint64(h-l))
	out = make([]int, n)
	for i := range out {
		if kind == "uniform" {
			out[i] = l + r.IntN(h-l+1)
		} else {
			out[i] = l + int(z.Uint64())
		}
	}
	return out, true, nil
}
