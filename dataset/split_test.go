package dataset

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// splitDataset writes a dataset of 300 units of 12 programs.
func splitDataset(t *testing.T) *Dataset {
	t.Helper()
	dir := t.TempDir()
	g := rowGen{task: TaskTile, maxNodes: 3, configs: 2}
	writeShard(t, dir, FormatArrow, memory.DefaultAllocator, g, testUnits(11, 300, 12, 400), 0, 1, 50)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// keysOf returns the kernel keys of a split part.
func keysOf(t *testing.T, d *Dataset, s *Split, part SplitPart) []string {
	t.Helper()
	var keys []string
	err := d.Rows(ReadOptions{Split: s, Part: part}, func(r *Row) error {
		if s != nil && part != All && s.IsTest(r) != (part == Test) {
			t.Errorf("row %s streamed for %s but IsTest is %v", r.KernelKey, part, s.IsTest(r))
		}
		keys = append(keys, r.KernelKey)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

func TestSplits(t *testing.T) {
	d := splitDataset(t)
	all := keysOf(t, d, nil, All)
	occ, err := d.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	programs, err := d.Programs()
	if err != nil {
		t.Fatal(err)
	}
	if len(programs) != 12 {
		t.Fatalf("%d programs, want 12", len(programs))
	}
	for _, tc := range []struct {
		kind     string
		fraction float64
		// tolerance on the test fraction of kernels: a random split's count is binomial,
		// so 4 standard deviations of a fraction over len(all) kernels; a program split
		// holds out whole programs and is only checked for its program count.
		tolerance float64
	}{
		{SplitRandom, 0.2, 4 * math.Sqrt(0.2*0.8/float64(len(all)))},
		{SplitRandom, 0.5, 4 * math.Sqrt(0.5*0.5/float64(len(all)))},
		{SplitProgram, 0.25, -1},
		{SplitProgram, 0.01, -1}, // rounds to 0 programs: at least 1 is held out
		{SplitProgram, 0.99, -1}, // rounds to all programs: one is kept for training
	} {
		t.Run(fmt.Sprintf("%s-%g", tc.kind, tc.fraction), func(t *testing.T) {
			s, err := NewSplit(d, tc.kind, tc.fraction, 42)
			if err != nil {
				t.Fatal(err)
			}
			train, test := keysOf(t, d, s, Train), keysOf(t, d, s, Test)
			// Disjoint and complete.
			union := slices.Concat(train, test)
			slices.Sort(union)
			if !slices.Equal(union, all) || len(slices.Compact(slices.Clone(union))) != len(union) {
				t.Fatalf("train (%d) and test (%d) are not a partition of the %d kernels", len(train), len(test), len(all))
			}
			// Deterministic for a seed, different for another.
			s2, _ := NewSplit(d, tc.kind, tc.fraction, 42)
			if got := keysOf(t, d, s2, Test); !slices.Equal(got, test) {
				t.Error("same seed, different test set")
			}
			s3, _ := NewSplit(d, tc.kind, tc.fraction, 43)
			if got := keysOf(t, d, s3, Test); slices.Equal(got, test) && tc.fraction > 0.1 && tc.fraction < 0.9 {
				t.Error("another seed, same test set")
			}
			switch tc.kind {
			case SplitRandom:
				if f := float64(len(test)) / float64(len(all)); math.Abs(f-tc.fraction) > tc.tolerance {
					t.Errorf("test fraction %.3f, want %.2f ± %.3f", f, tc.fraction, tc.tolerance)
				}
			case SplitProgram:
				want := max(1, min(int(math.Round(tc.fraction*12)), 11))
				if len(s.HeldOut) != want || !slices.Equal(s.Programs(Test), s.HeldOut) {
					t.Fatalf("held out %v, want %d programs", s.HeldOut, want)
				}
				if got := slices.Concat(s.Programs(Train), s.Programs(Test)); len(got) != 12 {
					t.Errorf("train and test programs: %v", got)
				}
				// Every kernel occurring in a held-out program is in test.
				isTest := map[string]bool{}
				for _, k := range test {
					isTest[k] = true
				}
				for _, o := range occ {
					if slices.Contains(s.HeldOut, o.Program) && !isTest[o.KernelKey] {
						t.Errorf("kernel %s of held-out program %s is in train", o.KernelKey, o.Program)
					}
				}
			}
			if len(s.Programs(All)) != 12 {
				t.Errorf("Programs(All) = %v", s.Programs(All))
			}
		})
	}
	for _, bad := range []struct {
		kind string
		f    float64
	}{{"random", 0}, {"random", 1}, {"program", -0.5}, {"model", 0.2}} {
		if _, err := NewSplit(d, bad.kind, bad.f, 1); err == nil {
			t.Errorf("NewSplit(%s, %g) accepted", bad.kind, bad.f)
		}
	}
}

// TestSplitHashIsFrozen pins the split hash: changing it would silently change every
// dataset's splits. The values were checked against an independent implementation of
// FNV-1a 64 followed by the SplitMix64 finalizer (Python).
func TestSplitHashIsFrozen(t *testing.T) {
	for _, tc := range []struct {
		seed   int64
		domain string
		s      string
		want   uint64
	}{
		{0, "kernel", "", 0xdd4982b959c6570f},
		{42, "kernel", "k001", 0x30c1656ee43a099d},
		{42, "program", "resnet50_b32", 0x150622a6898b69cf},
	} {
		if got := splitHash(tc.seed, tc.domain, tc.s); got != tc.want {
			t.Errorf("splitHash(%d, %s, %s) = %#x, want %#x", tc.seed, tc.domain, tc.s, got, tc.want)
		}
	}
}

// TestFamilySplit holds out whole model families, as the dataset records them: every
// program of a held-out family is in test with all its kernels, no program of a training
// family is, and programs the provenance gives no family are families of their own.
func TestFamilySplit(t *testing.T) {
	// 12 programs of 4 families (3 each), named onto the synthetic units. They carry zoo
	// model names but families the zoo does not use (fam_*): the split must take the
	// provenance's, never the zoo's.
	zooNames := []string{
		"resnet18_b1", "resnet50_b32", "resnet34_b8",
		"bert_tiny_s128_b32", "bert_base_s128_b8", "bert_mini_s128_b16",
		"mlp_96x2_b1", "mlp_768x3_b8", "mlp_1000x4_b64",
		"gpt2_tiny_s128_b8", "gpt2_small_s128_b8", "gpt2_medium_s256_b2",
	}
	families := map[string]string{}
	for i, p := range zooNames {
		families[p] = []string{"fam_resnet", "fam_bert", "fam_mlp", "fam_gpt2"}[i/3]
	}
	units := testUnits(11, 300, 12, 400)
	for i := range units {
		var p int
		fmt.Sscanf(units[i].program, "prog%d", &p)
		units[i].program = zooNames[p]
	}
	dir := t.TempDir()
	writeShard(t, dir, FormatArrow, memory.DefaultAllocator, rowGen{task: TaskTile, maxNodes: 3, configs: 2, families: families}, units, 0, 1, 50)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(d.Provenance.Families, families) {
		t.Fatalf("families read back %v, written %v", d.Provenance.Families, families)
	}
	s, err := NewSplit(d, SplitFamily, 0.25, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.HeldOutFamilies) != 1 || len(s.HeldOut) != 3 {
		t.Fatalf("held out families %v programs %v: want 1 family (round(0.25·4)) of 3 programs", s.HeldOutFamilies, s.HeldOut)
	}
	for _, p := range zooNames {
		held := slices.Contains(s.HeldOut, p)
		if held != (families[p] == s.HeldOutFamilies[0]) {
			t.Errorf("program %s (family %s): held out %v, held-out family %s", p, families[p], held, s.HeldOutFamilies[0])
		}
	}
	occ, _ := d.Occurrences()
	test := map[string]bool{}
	for _, k := range keysOf(t, d, s, Test) {
		test[k] = true
	}
	for _, o := range occ {
		if slices.Contains(s.HeldOut, o.Program) && !test[o.KernelKey] {
			t.Errorf("kernel %s of held-out program %s is in train", o.KernelKey, o.Program)
		}
	}
	if f, err := d.Provenance.Family("my_dump.hlo"); err != nil || f != "my_dump.hlo" {
		t.Errorf("a program without a recorded family: family %q, %v; want its own", f, err)
	}
	// The synthetic dataset's programs are outside the zoo: one family each, so a family
	// split there equals a program split.
	sd := splitDataset(t)
	fs, err := NewSplit(sd, SplitFamily, 0.25, 42)
	if err != nil {
		t.Fatal(err)
	}
	ps, _ := NewSplit(sd, SplitProgram, 0.25, 42)
	if len(fs.HeldOut) != len(ps.HeldOut) {
		t.Errorf("family split of single-program families holds out %d programs, program split %d", len(fs.HeldOut), len(ps.HeldOut))
	}
}

// TestSchema1DatasetHasNoFamilies: a dataset written with schema 1 (before families were
// recorded: the committed golden dataset) still opens, reads and splits by program, but a
// family split is refused with one line saying why, instead of asking the zoo.
func TestSchema1DatasetHasNoFamilies(t *testing.T) {
	d, err := Open(filepath.Join("testdata", "golden", string(FormatArrow)))
	if err != nil {
		t.Fatal(err)
	}
	if d.Provenance.SchemaVersion != 1 {
		t.Fatalf("the golden dataset has schema %d; this test needs a schema 1 one", d.Provenance.SchemaVersion)
	}
	if _, err := NewSplit(d, SplitProgram, 0.5, 1); err != nil {
		t.Errorf("program split of a schema 1 dataset: %v", err)
	}
	_, err = NewSplit(d, SplitFamily, 0.5, 1)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "schema 1") || !strings.Contains(err.Error(), "split by program") {
		t.Errorf("family split of a schema 1 dataset: %v; want one line naming schema 1 and the way out", err)
	}
	// Nor may a writer record families under schema 1, or write a schema this tpucost
	// does not know.
	p := d.Provenance
	p.Families = map[string]string{"prog0": "f"}
	if _, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: p}); err == nil {
		t.Error("a schema 1 writer accepted families")
	}
	p = testProv(TaskTile, 0, 1)
	p.SchemaVersion = SchemaVersion + 1
	if _, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: p}); err == nil {
		t.Errorf("a writer accepted schema %d", p.SchemaVersion)
	}
}
