package opt

import (
	"errors"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

func TestRegistry(t *testing.T) {
	all := All()
	if len(all) < 12 {
		t.Fatalf("%d passes, want at least 12", len(all))
	}
	seen := map[string]bool{}
	for _, p := range all {
		if p.Name == "" || p.Doc == "" || p.Run == nil {
			t.Errorf("pass %q is incomplete", p.Name)
		}
		if seen[p.Name] {
			t.Errorf("pass %q listed twice", p.Name)
		}
		seen[p.Name] = true
		got, err := Lookup(p.Name)
		if err != nil || got.Name != p.Name {
			t.Errorf("Lookup(%q) = %q, %v", p.Name, got.Name, err)
		}
	}
	if _, err := Lookup("algebraic-simplifier"); err == nil || !strings.Contains(err.Error(), "algsimp") {
		t.Errorf("Lookup of an unknown name: %v, want an error listing the passes", err)
	}
	if _, err := LookupAll([]string{"cse", "nope"}); err == nil {
		t.Error("LookupAll accepted an unknown name")
	}
	if Default().Name != "simplify" {
		t.Errorf("Default is %q", Default().Name)
	}
}

// TestNoFixedPoint checks that RunToFixedPoint reports a pass list that never settles.
func TestNoFixedPoint(t *testing.T) {
	m := parseHLO(t, "HloModule m\n\nENTRY %main {\n  ROOT %x = f32[] parameter(0)\n}\n")
	flip := Pass{Name: "flip", Doc: "always changes", Run: func(*hlo.Module) (bool, error) { return true, nil }}
	n, err := RunToFixedPoint(m, []Pass{flip}, 5)
	if !errors.Is(err, ErrNoFixedPoint) || n != 5 {
		t.Errorf("got %d iterations, %v; want 5 and ErrNoFixedPoint", n, err)
	}
	n, err = RunToFixedPoint(m, All(), 5)
	if err != nil || n != 1 {
		t.Errorf("a module with nothing to do: %d iterations, %v; want 1, nil", n, err)
	}
}

// TestBadInput checks that passes report malformed input as errors, not panics or
// quiet defaults.
func TestBadInput(t *testing.T) {
	if _, err := Default().Run(&hlo.Module{Name: "empty"}); err == nil {
		t.Error("a module without an entry was accepted")
	}
	// The parser refuses such a literal; a module built or edited in Go can still hold one.
	m := parseHLO(t, "HloModule m\n\nENTRY %main {\n  %a = f32[2] constant({1, 2})\n  ROOT %n = f32[2] negate(%a)\n}\n")
	m.Entry.Root.Operands[0].Literal = "{1, 2, 3}"
	for _, name := range []string{"constant-folding", "algsimp", "cse"} {
		_, err := mustLookup(t, name).Run(m.Clone())
		if err == nil || !strings.Contains(err.Error(), "%a") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s on a malformed literal: %v, want an error naming the pass and the constant", name, err)
		}
	}
	// an operand outside its computation (a module that does not verify)
	bad := parseHLO(t, "HloModule m\n\nENTRY %main {\n  %a = f32[] parameter(0)\n  ROOT %n = f32[] negate(%a)\n}\n")
	bad.Entry.Root.Operands[0] = &hlo.Instruction{Name: "stray", Opcode: hlo.OpParameter, Shape: hlo.Scalar(hlo.F32), ID: 0}
	if _, err := mustLookup(t, "dce").Run(bad); err == nil || !strings.Contains(err.Error(), "internal error") {
		t.Errorf("an operand outside the computation: %v, want an internal error", err)
	}
}

// TestOpaqueLeftAlone runs every pass and Default on a module full of side effects and
// opaque ops, duplicated and dead, and checks that every one of them is still there.
func TestOpaqueLeftAlone(t *testing.T) {
	src := `HloModule opaque

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main {
  %x = f32[4] parameter(0)
  %one = f32[] constant(1)
  %k = f32[4] constant({1, 2, 3, 4})
  %cc1 = f32[4] custom-call(%k), custom_call_target="f"
  %cc2 = f32[4] custom-call(%k), custom_call_target="f"
  %dead = f32[4] custom-call(%x), custom_call_target="log"
  %r1 = f32[4] rng(%one, %one), distribution=rng_uniform
  %r2 = f32[4] rng(%one, %one), distribution=rng_uniform
  %t1 = token[] after-all()
  %t2 = token[] after-all()
  %ar1 = f32[4] all-reduce(%x), to_apply=%add
  %ar2 = f32[4] all-reduce(%x), to_apply=%add
  %ob = f32[4] multiply(%cc1, %one_b)
  %one_b = f32[4] broadcast(%one), dimensions={}
  %sum = f32[4] add(%ob, %cc2)
  ROOT %t = (f32[4], f32[4], f32[4], f32[4], f32[4]) tuple(%sum, %r1, %r2, %ar1, %ar2)
}
`
	m := parseHLO(t, src)
	count := func(m *hlo.Module) map[hlo.Opcode]int {
		n := map[hlo.Opcode]int{}
		for _, in := range m.Entry.Instructions {
			n[in.Opcode]++
		}
		return n
	}
	want := count(m)
	for _, p := range append(All(), Default()) {
		out, _ := runStructural(t, p, m)
		got := count(out)
		for _, op := range []hlo.Opcode{hlo.OpCustomCall, hlo.OpRng, hlo.OpAfterAll, hlo.OpAllReduce} {
			if op == hlo.OpAllReduce && p.Name == "all-reduce-combiner" {
				// its purpose: the two independent all-reduces become one
				if got[op] != 1 {
					t.Errorf("%s: %d all-reduce instructions, want the 2 combined into 1", p.Name, got[op])
				}
				continue
			}
			if got[op] != want[op] {
				t.Errorf("%s: %d %s instructions, want %d", p.Name, got[op], op, want[op])
			}
		}
	}
}

// maxZooIterations is what DefaultMaxIterations's doc states the zoo needs (checked by
// TestZooDefault).
const maxZooIterations = 4

// TestBranchesWithoutSigilAreReferenced: XLA prints branch_computations={b1, b2} without
// the % sigil; the branches are referenced and must survive dead-computation removal.
func TestBranchesWithoutSigilAreReferenced(t *testing.T) {
	m, err := hlo.Parse("cond.hlo", []byte(`HloModule cond
b1 {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
b2 {
  p = f32[] parameter(0)
  ROOT a = f32[] abs(p)
}
unused {
  p = f32[] parameter(0)
  ROOT e = f32[] exponential(p)
}
ENTRY e {
  i = s32[] parameter(0)
  x = f32[] parameter(1)
  ROOT c = f32[] conditional(i, x, x), branch_computations={b1, b2}
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !removeUnreferenced(m) {
		t.Error("the unused computation was not removed")
	}
	for _, name := range []string{"b1", "b2"} {
		if m.Computation(name) == nil {
			t.Errorf("branch %s was removed", name)
		}
	}
	if m.Computation("unused") != nil {
		t.Error("unused computation kept")
	}
}
