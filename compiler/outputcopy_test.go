package compiler

import (
	"slices"
	"strings"
	"testing"
)

// TestOutputCopies: as XLA's copy insertion, every output leaf that is an entry
// parameter or a constant (through bitcasts, get-tuple-elements, tuples, opt-barriers,
// add-dependency) is copied by a kernel of its own, each use of it once; leaves computed
// by the program are not, nor parameters the header declares aliased to outputs.
func TestOutputCopies(t *testing.T) {
	kernels := func(src string) []string {
		t.Helper()
		p, err := Compile(parseText(t, src), nil, opts()) // opts: the verifier after every pass
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, k := range p.Kernels {
			names = append(names, k.Name)
		}
		slices.Sort(names)
		return names
	}
	copies := func(names []string) int {
		n := 0
		for _, k := range names {
			if strings.Contains(k, ".output_copy") {
				n++
			}
		}
		return n
	}
	for _, c := range []struct {
		name, src string
		copies    int
	}{
		{"a parameter twice and a computed value", `HloModule m
ENTRY e {
  p = f32[8,128] parameter(0)
  ROOT t = (f32[8,128], f32[8,128], f32[8,128]) tuple(p, p, f32[8,128] negate(p))
}`, 2},
		{"a bitcast of a parameter", `HloModule m
ENTRY e {
  p = f32[8,128] parameter(0)
  ROOT b = f32[1024] bitcast(p)
}`, 1},
		{"a tuple parameter returned whole", `HloModule m
ENTRY e {
  ROOT p = ((f32[8,128], f32[16,128])) parameter(0)
}`, 2},
		{"an opt-barrier's elements and a constant", `HloModule m
ENTRY e {
  p = f32[8,128] parameter(0)
  q = f32[16,128] parameter(1)
  o = (f32[8,128], f32[16,128]) opt-barrier((f32[8,128], f32[16,128]) tuple(p, q))
  g0 = f32[8,128] get-tuple-element(o), index=0
  g1 = f32[16,128] get-tuple-element(o), index=1
  c = f32[4] constant({1, 2, 3, 4})
  ROOT t = (f32[8,128], f32[16,128], f32[4]) tuple(g0, g1, c)
}`, 3},
		{"computed outputs only", `HloModule m
ENTRY e {
  p = f32[8,128] parameter(0)
  ROOT t = (f32[8,128], f32[8,128]) tuple(f32[8,128] negate(p), f32[8,128] exponential(p))
}`, 0},
		{"declared input_output_alias", `HloModule m, input_output_alias={ {}: (0, {}, may-alias) }
ENTRY e {
  ROOT p = f32[8,128] parameter(0)
}`, 0},
	} {
		got := kernels(c.src + "\n")
		if n := copies(got); n != c.copies {
			t.Errorf("%s: %d output copies %v, want %d", c.name, n, got, c.copies)
		}
	}
}
