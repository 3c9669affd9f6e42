package compiler

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// TestPassHookSeesEveryRun: a hook without Select is called after every run the program
// logs (and after the group, after its members), with op counts that chain (each run's
// OpsBefore is the previous run's count) and end at the program's module.
func TestPassHookSeesEveryRun(t *testing.T) {
	m := mlpBlock(t, "mlp", 32, 256, 256)
	var runs []PassStat
	o := opts()
	o.Kernels = &KernelCache{} // the prefix runs afresh: the hook selects its passes
	o.AfterPass = []PassHook{{After: func(mod *hlo.Module, run PassStat) error {
		if run.OpCount != opt.OpCount(mod) {
			t.Errorf("%s: OpCount %d, the module has %d", run.Name, run.OpCount, opt.OpCount(mod))
		}
		runs = append(runs, run)
		return nil
	}}}
	for range 2 { // the second compile would find the prefix memoized
		runs = nil
		p, err := Compile(m, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		var logged []PassRun
		prev := -1
		for _, r := range runs {
			if r.Name == SimplifyGroup {
				if r.OpsBefore != p.OpCountBefore || r.OpCount != p.OpCountAfter {
					t.Errorf("group: ops %d -> %d, program %d -> %d", r.OpsBefore, r.OpCount, p.OpCountBefore, p.OpCountAfter)
				}
				continue
			}
			if prev >= 0 && r.OpsBefore != prev {
				t.Errorf("%s: OpsBefore %d, the run before left %d", r.Name, r.OpsBefore, prev)
			}
			prev = r.OpCount
			logged = append(logged, r.PassRun)
		}
		if !slices.Equal(logged, p.Passes) {
			t.Errorf("hook saw %d runs, the program logs %d", len(logged), len(p.Passes))
		}
		if prev != opt.OpCount(p.Module) {
			t.Errorf("last run left %d ops, the program's module has %d", prev, opt.OpCount(p.Module))
		}
		seen := map[string]bool{}
		for _, r := range runs {
			seen[r.Name] = true
		}
		for _, n := range PassNames() {
			if !seen[n] {
				t.Errorf("the hook never saw pass %s", n)
			}
		}
	}
}

// TestPassHookSelectKeepsTheMemo: a hook that selects only a configurable pass sees
// that pass and leaves the memoized prefix alone; its error ends the compile.
func TestPassHookSelectKeepsTheMemo(t *testing.T) {
	m := mlpBlock(t, "mlp", 32, 256, 256)
	o := opts()
	o.Kernels = &KernelCache{}
	var names []string
	o.AfterPass = []PassHook{{Select: func(n string) bool { return n == "fusion" || n == "layout-assignment" },
		After: func(_ *hlo.Module, run PassStat) error { names = append(names, run.Name); return nil }}}
	for range 2 {
		if _, err := Compile(m, nil, o); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"layout-assignment", "fusion", "layout-assignment", "fusion"}; !slices.Equal(names, want) {
		t.Errorf("hook saw %v, want %v", names, want)
	}
	if n := len(o.Kernels.prep); n != 1 {
		t.Errorf("%d memoized prefixes, want 1", n)
	}
	o.AfterPass[0].After = func(*hlo.Module, PassStat) error { return errStopHook }
	if _, err := Compile(m, nil, o); err == nil || !strings.Contains(err.Error(), errStopHook.Error()) {
		t.Errorf("hook error: Compile err = %v", err)
	}
}

var errStopHook = stopErr("hook says stop")

type stopErr string

func (e stopErr) Error() string { return string(e) }

// TestDumpAfterPattern: --dump-after takes all and regular expressions matched against
// whole names; several dumps are each preceded by a "// after pass" comment line, and a
// single name prints the module alone, as before.
func TestDumpAfterPattern(t *testing.T) {
	m := mlpBlock(t, "mlp", 32, 256, 256)
	dump := func(pat string) (string, error) {
		var buf bytes.Buffer
		o := opts()
		o.DumpAfter, o.Dump = pat, &buf
		_, err := Compile(m, nil, o)
		return buf.String(), err
	}
	all, err := dump("all")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(all, "// after pass "), len(PassNames()); got != want {
		t.Errorf("--dump-after all: %d dumps, want %d (one per pass)", got, want)
	}
	// In run order: a group's dump follows its members'; a member the group lists twice
	// (dce, in XLA's order) is dumped once, after its first place.
	var order []string
	for _, p := range Passes() {
		for _, n := range append(passNames(p.Group), p.Name) {
			if !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
	}
	for i, part := range strings.Split(all, "// after pass ")[1:] {
		name, text, _ := strings.Cut(part, "\n")
		if i >= len(order) || name != order[i] {
			t.Errorf("dump %d is after %s, want %s", i, name, order[min(i, len(order)-1)])
		}
		if _, err := hlo.Parse("dump", []byte(text)); err != nil {
			t.Errorf("dump after %s does not parse: %v", name, err)
		}
	}
	alg, err := dump("alg.*")
	if err != nil {
		t.Fatal(err)
	}
	one, _ := dump("algsimp")
	if alg != one || strings.Contains(one, "// after pass") || !strings.HasPrefix(one, "HloModule") {
		t.Errorf("'alg.*' selects algsimp alone: want its dump without a header, got %.80q vs %.80q", alg, one)
	}
	two, err := dump("fusion|tiling")
	if err != nil || strings.Count(two, "// after pass ") != 2 {
		t.Errorf("'fusion|tiling': %d dumps (%v), want 2", strings.Count(two, "// after pass "), err)
	}
	if _, err := dump("fus"); err == nil || !strings.Contains(err.Error(), "no such pass") {
		t.Errorf("a partial name: err = %v, want no such pass (the expression matches whole names)", err)
	}
	if _, err := dump("(alg"); err == nil || !strings.Contains(err.Error(), "regular expression") {
		t.Errorf("a bad expression: err = %v", err)
	}
}
