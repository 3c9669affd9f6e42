package compiler

import (
	"bytes"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/zoo"
)

// simplifiable has an x*1 (algsimp removes it) and a dead negate (dce removes it).
const simplifiable = `HloModule simplifiable

ENTRY main {
  p0 = f32[256,128] parameter(0)
  p1 = f32[128,256] parameter(1)
  one = f32[] constant(1)
  ones = f32[256,128] broadcast(one), dimensions={}
  x = f32[256,128] multiply(p0, ones)
  dead = f32[256,128] negate(p0)
  ROOT d = f32[256,256] dot(x, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
`

func parseSimplifiable(t *testing.T) *hlo.Module {
	t.Helper()
	m, err := hlo.Parse("simplifiable.hlo", []byte(simplifiable))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustPasses(t *testing.T, names ...string) []opt.Pass {
	t.Helper()
	ps, err := opt.LookupAll(names)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// listLog is the pass log of Passes when the simplification group runs sims once each:
// the passes before the group, sims, then the passes after it.
func listLog(sims ...string) []string {
	ps := Passes()
	i := slices.IndexFunc(ps, func(p Pass) bool { return p.Name == SimplifyGroup })
	var out []string
	for _, p := range ps[:i] {
		out = append(out, p.Name)
	}
	out = append(out, sims...)
	for _, p := range ps[i+1:] {
		out = append(out, p.Name)
	}
	return out
}

func runNames(log []PassRun) []string {
	var ns []string
	for _, r := range log {
		ns = append(ns, r.Name)
	}
	return ns
}

// TestSimplifyZooDefault runs the start of Compile (the default simplification pipeline)
// on every zoo model: no pass increases the op count, the last iteration changes
// nothing (a fixed point), and the log's last op count is OpCountAfter.
func TestSimplifyZooDefault(t *testing.T) {
	for _, zm := range zoo.All() {
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		ps := Passes()
		p := prepareModule(m, Options{Target: testTarget}, ps[:prefixLen(ps)], nil)
		if p.err != nil {
			t.Fatalf("%s: %v", zm.Name, p.err)
		}
		// The preparation passes (iteration 0) may grow the op count: unfusing does.
		p.log = slices.DeleteFunc(p.log, func(r PassRun) bool { return r.Iteration == 0 })
		prev := p.before
		last := 0
		for _, r := range p.log {
			if r.OpCount > prev {
				t.Errorf("%s: pass %s (iteration %d) grew the op count from %d to %d", zm.Name, r.Name, r.Iteration, prev, r.OpCount)
			}
			prev = r.OpCount
			last = r.Iteration
		}
		for _, r := range p.log {
			if r.Iteration == last && r.Changed {
				t.Errorf("%s: pass %s changed the module in the last iteration (%d): no fixed point", zm.Name, r.Name, last)
			}
		}
		if got := len(p.log); got != last*len(opt.DefaultNames()) {
			t.Errorf("%s: %d pass runs for %d iterations of %d passes", zm.Name, got, last, len(opt.DefaultNames()))
		}
		if prev != p.after || p.after > p.before {
			t.Errorf("%s: op count %d -> %d, log ends at %d", zm.Name, p.before, p.after, prev)
		}
	}
}

// TestCompileExplicitPasses compiles with an explicit pass list: exactly those passes
// run once each, in order, then the compiler passes; changed and the op counts are
// recorded.
func TestCompileExplicitPasses(t *testing.T) {
	m := parseSimplifiable(t)
	o := opts()
	o.Simplify = Simplify{Passes: mustPasses(t, "dce", "algsimp", "cse")}
	p, err := Compile(m, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	want := listLog("dce", "algsimp", "cse")
	if got := runNames(p.Passes); !slices.Equal(got, want) {
		t.Fatalf("pass log %v, want %v", got, want)
	}
	sims := p.Passes[slices.Index(want, "dce"):]
	// dce drops the negate; algsimp turns multiply(p0, broadcast(1)) into p0; cse finds
	// nothing. The op count excludes parameters.
	wantChanged := []bool{true, true, false}
	wantOps := []int{4, 1, 1}
	for i, r := range sims[:3] {
		if r.Changed != wantChanged[i] || r.OpCount != wantOps[i] || r.Iteration != 0 {
			t.Errorf("pass %s: changed %v, op count %d, iteration %d; want %v, %d, 0", r.Name, r.Changed, r.OpCount, r.Iteration, wantChanged[i], wantOps[i])
		}
	}
	if p.OpCountBefore != 5 || p.OpCountAfter != 1 {
		t.Errorf("op count %d -> %d, want 5 -> 1", p.OpCountBefore, p.OpCountAfter)
	}
	if !p.Passes[slices.Index(want, "fusion")].Changed { // fusion forms the kernel
		t.Errorf("fusion recorded as not changing the module")
	}

	o.Simplify = Simplify{None: true}
	p, err = Compile(m, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := runNames(p.Passes); !slices.Equal(got, listLog()) {
		t.Errorf("with None the pass log is %v, want only %v", got, listLog())
	}
	if p.OpCountBefore != 5 || p.OpCountAfter != 5 {
		t.Errorf("with None the op count is %d -> %d, want 5 -> 5", p.OpCountBefore, p.OpCountAfter)
	}

	o.Simplify = Simplify{None: true, Passes: mustPasses(t, "dce")}
	if _, err := Compile(m, nil, o); err == nil {
		t.Error("None with a pass list compiled")
	}
}

// TestCompileDefaultSimplifies: the zero Options run the default pipeline, which removes
// the multiply by one and the dead negate before fusion (one kernel: the dot alone).
func TestCompileDefaultSimplifies(t *testing.T) {
	p, err := Compile(parseSimplifiable(t), nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if p.OpCountBefore != 5 || p.OpCountAfter != 1 {
		t.Errorf("op count %d -> %d, want 5 -> 1", p.OpCountBefore, p.OpCountAfter)
	}
	if n := len(p.Passes); n != 2*len(opt.DefaultNames())+len(listLog()) {
		t.Errorf("%d pass runs, want two iterations of the default passes, the preparation and the configurable passes", n)
	}
	if len(p.Kernels) != 1 || p.Kernels[0].Info.NumOps != 1 {
		t.Errorf("kernels %d (first has %d ops), want one kernel of the dot alone", len(p.Kernels), p.Kernels[0].Info.NumOps)
	}
}

// breakRoot is a test-only pass that leaves a module hlo.Verify rejects: the root's
// shape no longer matches what its operands give.
var breakRoot = opt.Pass{Name: "break-root", Doc: "test only", Run: func(m *hlo.Module) (bool, error) {
	m.Entry.Root.Shape = hlo.Array(hlo.F32, 3)
	return true, nil
}}

// TestCheckCatchesBrokenPass: with Check the verifier runs after every simplification
// pass and its error names the pass that broke the module.
func TestCheckCatchesBrokenPass(t *testing.T) {
	o := opts()
	o.Simplify = Simplify{Passes: []opt.Pass{mustPasses(t, "dce")[0], breakRoot, mustPasses(t, "cse")[0]}}
	_, err := Compile(parseSimplifiable(t), nil, o)
	if err == nil || !strings.Contains(err.Error(), "after pass break-root") {
		t.Fatalf("err = %v, want a verifier error after pass break-root", err)
	}
}

// TestSimplifyMemoized: with a shared KernelCache the simplification passes run once per
// module and pass selection, however many configs are compiled.
func TestSimplifyMemoized(t *testing.T) {
	var runs atomic.Int32
	count := opt.Pass{Name: "count", Doc: "test only", Run: func(*hlo.Module) (bool, error) { runs.Add(1); return false, nil }}
	m := parseSimplifiable(t)
	o := Options{Target: testTarget, Kernels: &KernelCache{}, Simplify: Simplify{Passes: []opt.Pass{count}}}
	var first string
	for i := range 3 {
		p, err := Compile(m, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = p.Module.String()
		} else if p.Module.String() != first {
			t.Fatal("a memoized compile gave a different program")
		}
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("the pass ran %d times for 3 compiles with one cache, want 1", n)
	}
	o.Kernels = nil
	if _, err := Compile(m, nil, o); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("without a cache the pass ran %d times in total, want 2", n)
	}
}

func TestParseSimplify(t *testing.T) {
	s, err := ParseSimplify("none")
	if err != nil || !s.None || len(s.Passes) != 0 {
		t.Errorf("none: %+v, %v", s, err)
	}
	s, err = ParseSimplify("")
	if err != nil || s.None || len(s.Passes) != 0 {
		t.Errorf("empty: %+v, %v", s, err)
	}
	s, err = ParseSimplify("cse,dce, algsimp")
	if err != nil || !slices.Equal(runNames(passRuns(s.Passes)), []string{"cse", "dce", "algsimp"}) {
		t.Errorf("list: %+v, %v", s, err)
	}
	for _, bad := range []string{"cse,nope", "cse,,dce"} {
		_, err = ParseSimplify(bad)
		if err == nil || !strings.Contains(err.Error(), "call-inliner") {
			t.Errorf("%q: err = %v, want an error listing the passes", bad, err)
		}
	}
	if _, err := ParseSimplify("nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown pass: err = %v, want it named", err)
	}
}

func passRuns(ps []opt.Pass) []PassRun {
	var out []PassRun
	for _, p := range ps {
		out = append(out, PassRun{Name: p.Name})
	}
	return out
}

// TestDumpAfterSimplificationPass: --dump-after takes a pass of the simplification group
// and prints the module after its first run — algsimp has removed the multiply by one,
// dce (after it) has not yet removed the dead negate — also when the prefix is memoized.
func TestDumpAfterSimplificationPass(t *testing.T) {
	m := parseSimplifiable(t)
	o := opts()
	o.Kernels = &KernelCache{}
	if _, err := Compile(m, nil, o); err != nil { // memoizes the prefix
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o.DumpAfter, o.Dump = "algsimp", &buf
	p, err := Compile(m, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	txt := buf.String()
	if strings.Contains(txt, "multiply") || !strings.Contains(txt, "negate") || strings.Count(txt, "HloModule") != 1 {
		t.Errorf("dump after algsimp:\n%s\nwant one module, without the multiply, with the negate", txt)
	}
	if strings.Contains(p.Module.String(), "negate") {
		t.Error("the compiled module kept the dead negate")
	}
	o.Simplify = Simplify{Passes: mustPasses(t, "dce")}
	if _, err := Compile(m, nil, o); err == nil || !strings.Contains(err.Error(), `"algsimp": no such pass`) {
		t.Errorf("dump after a pass the selection does not run: err = %v", err)
	}
}

// TestSimplifyNeedsTheGroup: selecting simplification passes for a list without the
// simplification group is an error, not a silent no-op.
func TestSimplifyNeedsTheGroup(t *testing.T) {
	o := opts()
	o.Simplify = Simplify{Passes: mustPasses(t, "dce")}
	if _, err := compile(parseSimplifiable(t), nil, o, without(Passes(), SimplifyGroup)); err == nil ||
		!strings.Contains(err.Error(), "no simplify group") {
		t.Errorf("err = %v, want the missing group named", err)
	}
}
