package dataset

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/internal/stablehash"
)

// The kinds of split.
const (
	SplitRandom  = "random"  // by kernel: a hash of (seed, kernel key) decides
	SplitProgram = "program" // held-out programs: no kernel of a test program is trained on
	SplitFamily  = "family"  // held-out model families: no kernel of a test family is trained on
	// SplitShape holds out sizes of a dynamic dimension: the kind is written
	// "shape:NAME=V[,V...]" (e.g. "shape:seq=384"), and no kernel of a program built at a
	// held-out size (MODEL@NAME=V, gen --shapes) is trained on.
	SplitShape = "shape"
)

// SplitKinds lists the kinds of split that a test fraction and a seed define; a shape
// split names its sizes (SplitShapeForm).
func SplitKinds() []string { return []string{SplitRandom, SplitProgram, SplitFamily} }

// SplitShapeForm is how a shape split is written.
const SplitShapeForm = SplitShape + ":NAME=V[,V...]"

// SplitUsage lists every split kind for messages: "random, program, family or
// shape:NAME=V[,V...]".
const SplitUsage = SplitRandom + ", " + SplitProgram + ", " + SplitFamily + " or " + SplitShapeForm

// CheckSplitKind reports whether kind names a split NewSplit makes: random, program,
// family, or shape:NAME=V[,V...] with positive integer sizes, none repeated. The error
// does not name a flag.
func CheckSplitKind(kind string) error {
	if kind == SplitRandom || kind == SplitProgram || kind == SplitFamily {
		return nil
	}
	if rest, ok := strings.CutPrefix(kind, SplitShape+":"); ok {
		_, _, err := parseShapeSplit(rest)
		return err
	}
	if kind == SplitShape {
		return fmt.Errorf("%q: name the held-out sizes, shape:NAME=V[,V...] (e.g. shape:seq=384)", kind)
	}
	return fmt.Errorf("unknown split kind %q (want %s)", kind, SplitUsage)
}

// parseShapeSplit parses the NAME=V[,V...] of a shape split.
func parseShapeSplit(s string) (name string, values []int, err error) {
	name, list, ok := strings.Cut(s, "=")
	if !ok || name == "" || strings.Contains(list, "=") {
		return "", nil, fmt.Errorf("shape:%s: want shape:NAME=V[,V...], sizes of one dimension (e.g. shape:seq=384)", s)
	}
	for _, item := range strings.Split(list, ",") {
		v, err := strconv.Atoi(item)
		if err != nil || v < 1 {
			return "", nil, fmt.Errorf("shape:%s: %q is not a positive integer size", s, item)
		}
		if slices.Contains(values, v) {
			return "", nil, fmt.Errorf("shape:%s: %s=%d given twice", s, name, v)
		}
		values = append(values, v)
	}
	slices.Sort(values)
	return name, values, nil
}

// programShape returns the size of dimension name a program's name carries
// (MODEL@NAME=V[,NAME2=V2], as gen --shapes and --shapes name programs), if any.
func programShape(program, name string) (int, bool) {
	i := strings.LastIndexByte(program, '@')
	if i < 0 {
		return 0, false
	}
	for _, item := range strings.Split(program[i+1:], ",") {
		if n, v, ok := strings.Cut(item, "="); ok && n == name {
			x, err := strconv.Atoi(v)
			return x, err == nil
		}
	}
	return 0, false
}

// Split divides a dataset's rows into train and test, deterministically given its seed.
type Split struct {
	Kind         string
	TestFraction float64
	Seed         int64
	HeldOut      []string // the held-out (test) programs of a program or family split, sorted
	// HeldOutFamilies are the held-out families of a family split, sorted.
	HeldOutFamilies []string
	// HeldOutShapes are the held-out sizes of a shape split, ascending.
	HeldOutShapes []int

	heldOut  map[string]bool
	testKeys map[string]bool        // program split: kernels occurring in a held-out program
	programs map[SplitPart][]string // sorted
}

// NewSplit makes a split of d.
//
// Kind "random": a row is in test when a hash of (seed, kernel key) falls below
// testFraction. Kind "program": max(1, round(testFraction·programs)) programs, never all of
// them, are held out, chosen by a hash of (seed, program name); a row is in test when its
// kernel occurs in any held-out program (by the dataset's occurrences) or it comes from
// one, so that no kernel of a held-out program is trained on. Kind "family": the same with
// whole model families (as the dataset records them: Provenance.Family; a schema 1
// dataset, which records none, cannot be split by family) in place of programs — max(1, round(testFraction·families)),
// never all, chosen by a hash of (seed, family) — so the test programs come from families
// the model never saw (train on CNNs, test on transformers). Kind "shape:NAME=V[,V...]":
// the held-out programs are exactly those whose name carries one of the sizes
// (MODEL@NAME=V); programs without the dimension are trained on; testFraction and seed
// choose nothing (the sizes are given). A shape split that holds out no program, or every
// program, is an error naming the sizes the dataset has. testFraction must be in (0, 1).
func NewSplit(d *Dataset, kind string, testFraction float64, seed int64) (*Split, error) {
	if !(testFraction > 0 && testFraction < 1) {
		return nil, fmt.Errorf("dataset: test fraction %g is not in (0, 1)", testFraction)
	}
	s := &Split{Kind: kind, TestFraction: testFraction, Seed: seed, heldOut: map[string]bool{}, testKeys: map[string]bool{}}
	occ, err := d.Occurrences()
	if err != nil {
		return nil, err
	}
	var programs []string
	for _, o := range occ {
		programs = append(programs, o.Program)
	}
	slices.Sort(programs)
	programs = slices.Compact(programs)
	// heldOutOf picks max(1, round(testFraction·n)) of names, never all, by a hash of
	// (seed, domain, name).
	heldOutOf := func(domain string, names []string) []string {
		n := max(1, int(math.Round(testFraction*float64(len(names)))))
		n = min(n, len(names)-1)
		ranked := slices.Clone(names)
		slices.SortFunc(ranked, func(a, b string) int {
			return cmp.Or(cmp.Compare(splitHash(seed, domain, a), splitHash(seed, domain, b)), cmp.Compare(a, b))
		})
		out := slices.Clone(ranked[:n])
		slices.Sort(out)
		return out
	}
	if err := CheckSplitKind(kind); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	shapeName, shapeValues := "", []int(nil)
	if rest, ok := strings.CutPrefix(kind, SplitShape+":"); ok {
		if shapeName, shapeValues, err = parseShapeSplit(rest); err != nil {
			return nil, fmt.Errorf("dataset: split %w", err)
		}
		s.HeldOutShapes = shapeValues
		kind = SplitShape
	}
	switch kind {
	case SplitRandom:
	case SplitProgram, SplitFamily, SplitShape:
		if kind == SplitShape {
			var sizes []int
			for _, p := range programs {
				v, ok := programShape(p, shapeName)
				if !ok {
					continue
				}
				sizes = append(sizes, v)
				if slices.Contains(shapeValues, v) {
					s.HeldOut = append(s.HeldOut, p)
				}
			}
			slices.Sort(sizes)
			sizes = slices.Compact(sizes)
			switch {
			case len(s.HeldOut) == 0:
				return nil, fmt.Errorf("dataset: split %s holds out nothing: %s has no program at those sizes (its %s sizes: %v; generate them with gen --shapes)", s.Kind, d.Dir, shapeName, sizes)
			case len(s.HeldOut) == len(programs):
				return nil, fmt.Errorf("dataset: split %s holds out every program of %s: nothing is left to train on (its %s sizes: %v)", s.Kind, d.Dir, shapeName, sizes)
			}
		} else if kind == SplitProgram {
			if len(programs) < 2 {
				return nil, fmt.Errorf("dataset: a program split needs at least 2 programs, %s has %d", d.Dir, len(programs))
			}
			s.HeldOut = heldOutOf("program", programs)
		} else {
			familyOf := map[string]string{}
			var families []string
			for _, p := range programs {
				f, err := d.Provenance.Family(p)
				if err != nil {
					return nil, fmt.Errorf("dataset: a family split of %s: %w", d.Dir, err)
				}
				familyOf[p] = f
				families = append(families, f)
			}
			slices.Sort(families)
			families = slices.Compact(families)
			if len(families) < 2 {
				return nil, fmt.Errorf("dataset: a family split needs programs of at least 2 model families, %s has %d (%v)", d.Dir, len(families), families)
			}
			s.HeldOutFamilies = heldOutOf("family", families)
			for _, p := range programs {
				if slices.Contains(s.HeldOutFamilies, familyOf[p]) {
					s.HeldOut = append(s.HeldOut, p)
				}
			}
		}
		for _, p := range s.HeldOut {
			s.heldOut[p] = true
		}
		for _, o := range occ {
			if s.heldOut[o.Program] {
				s.testKeys[o.KernelKey] = true
			}
		}
	default:
		return nil, fmt.Errorf("dataset: %w", CheckSplitKind(kind))
	}
	// The programs of each part: for a program split, the held-out programs and the rest;
	// for a random split, the programs with at least one kernel in the part.
	in := map[SplitPart]map[string]bool{Train: {}, Test: {}}
	for _, o := range occ {
		switch {
		case kind != SplitRandom && s.heldOut[o.Program]:
			in[Test][o.Program] = true
		case kind != SplitRandom:
			in[Train][o.Program] = true
		case s.isTest(o.KernelKey, o.Program):
			in[Test][o.Program] = true
		default:
			in[Train][o.Program] = true
		}
	}
	s.programs = map[SplitPart][]string{All: programs}
	for _, part := range []SplitPart{Train, Test} {
		ps := []string{}
		for _, p := range programs {
			if in[part][p] {
				ps = append(ps, p)
			}
		}
		s.programs[part] = ps
	}
	return s, nil
}

// IsTest reports whether r is in the test part.
func (s *Split) IsTest(r *Row) bool { return s.isTest(r.KernelKey, r.Program) }

func (s *Split) isTest(key, program string) bool {
	if s.Kind != SplitRandom {
		return s.testKeys[key] || s.heldOut[program]
	}
	return stablehash.Unit(splitHash(s.Seed, "kernel", key)) < s.TestFraction
}

// Programs returns the programs of a part, sorted: for a program split, the held-out
// programs (Test) or the others (Train); for a random split, the programs with at least
// one kernel in the part; for All, every program. The caller may change the result.
func (s *Split) Programs(part SplitPart) []string { return slices.Clone(s.programs[part]) }

// splitHash hashes (seed, domain, s) to 64 bits: FNV-1a, then a SplitMix64 finalizer to
// spread FNV's weak low bits. It is fixed forever: splits must not change across versions.
func splitHash(seed int64, domain, s string) uint64 {
	return stablehash.Mix(stablehash.Seeded(seed).Label(domain).Sum64Of(s))
}
