package hlo

import (
	"path/filepath"
	"strings"
	"testing"
)

// refusedByScope are the real_more files that use a feature out of this importer's
// scope (docs/compiler.md: Real inputs) or that XLA rejects too, with the one-line error
// the importer must give.
var refusedByScope = map[string]string{
	// XLA's buffer shapes, b(f32[]), of the Pin/CreateBuffer custom-calls.
	"buffer_shape.hlo": "buffer_shape.hlo:12:20: buffer shape b(...) is not supported (XLA's mutable buffers of Pin/Unpin/CreateBuffer custom-calls), expected an array or tuple shape",
	// Invalid for XLA too: a call passing f32[4] arrays to a computation of f32[]
	// parameters (XLA's verifier: the operands must have the parameters' shapes).
	"call_shape_mismatch.hlo": "call_shape_mismatch.hlo:24:3: %call-foo.bar.baz.0: call operand 0 is f32[4], but parameter 0 of foo.bar.baz.0 is f32[]",
}

// TestRealMoreFiles imports every file of testdata/real_more (real XLA HLO the importer
// once refused; README.md there): each verifies and round-trips through the printer, the
// out-of-scope one fails with its one-line error, and each shows the syntax it was added
// for.
func TestRealMoreFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/real_more/*.hlo")
	if err != nil || len(files) < 9 {
		t.Fatalf("real_more files: %v (%d found, want 9)", err, len(files))
	}
	mods := map[string]*Module{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := ParseFile(f)
			if want, out := refusedByScope[filepath.Base(f)]; out {
				if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("error = %v, want one line ending ...%s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(m); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			roundTrip(t, m)
			mods[filepath.Base(f)] = m
		})
	}

	// Nested instructions as operands ("reshape(f32[1,8,1,7] parameter(0))") become
	// instructions of their own, named as XLA names them.
	if m := mods["nested_operands.hlo"]; m != nil {
		r0 := findIn(t, m.Entry, "reshape0")
		if op := r0.Operands[0]; op.Name != "parameter.anon" || op.Opcode != OpParameter || op.ParamNum != 0 ||
			op.Shape.StringNoLayout() != "f32[1,8,1,7]" {
			t.Errorf("reshape0's operand = %s %s(%d), want f32[1,8,1,7] parameter.anon = parameter(0)", op.Shape, op.Name, op.ParamNum)
		}
		if op := findIn(t, m.Entry, "reshape1").Operands[0]; op.Name != "parameter.anon.1" || op.ParamNum != 1 {
			t.Errorf("reshape1's operand = %s(%d), want parameter.anon.1 = parameter(1)", op.Name, op.ParamNum)
		}
	}
	// A computation written inline as to_apply's value is a computation of the module,
	// called by the reduce, and the fusion body stays the one the entry calls.
	if m := mods["inline_to_apply.hlo"]; m != nil {
		if m.Entry.Name != "main" || len(m.Computations) != 3 {
			t.Errorf("entry %q, %d computations, want main and 3", m.Entry.Name, len(m.Computations))
		}
		fusion := findIn(t, m.Entry, "fusion").Calls
		red := findIn(t, fusion, "reduce")
		if red.ToApply == nil || red.ToApply.Name != "reduce.to_apply" || red.ToApply.Root.Opcode != OpMaximum {
			t.Errorf("reduce's to_apply = %+v, want the inline maximum computation reduce.to_apply", red.ToApply)
		}
	}
	// XLA's variadic reduce-window: two inputs, two init values, a tuple of two results.
	if m := mods["variadic_reduce_window.hlo"]; m != nil {
		rw := findIn(t, m.Entry, "reduce-window.13")
		if got := rw.Shape.StringNoLayout(); len(rw.Operands) != 4 || got != "(f32[2,2], s32[2,2])" {
			t.Errorf("reduce-window: %d operands, shape %s, want 4 and (f32[2,2], s32[2,2])", len(rw.Operands), got)
		}
	}
}

func findIn(t *testing.T, c *Computation, name string) *Instruction {
	t.Helper()
	for _, in := range c.Instructions {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("no instruction %q in %s", name, c.Name)
	return nil
}

// Nested instructions and inline computations in hand-written forms: a nested operand
// with its shape omitted (inferred), nested inside another nested one, names that XLA's
// uniquer would give, an inline computation followed by another attribute, and a while
// loop with both its condition and body inline (the second inline computation must be
// called from the loop's computation, not the first inline one).
func TestNestedAndInline(t *testing.T) {
	src := `HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] add(p, negate(f32[4] abs(p)))
  t = (s32[], f32[4]) tuple(s32[] constant(0), a)
  ROOT w = (s32[], f32[4]) while(t), condition={
    s = (s32[], f32[4]) parameter(0)
    ROOT lt = pred[] compare(s32[] get-tuple-element(s), s32[] constant(10)), direction=LT
  }, body={
    s = (s32[], f32[4]) parameter(0)
    i = s32[] get-tuple-element(s), index=0
    x = f32[4] get-tuple-element(s), index=1
    ROOT n = (s32[], f32[4]) tuple(add(i, s32[] constant(1)), x)
  }, metadata={op_name="loop"}
}
`
	m := mustParse(t, src)
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, m)
	a := findIn(t, m.Entry, "a")
	if neg := a.Operands[1]; neg.Name != "negate.anon" || neg.Shape.StringNoLayout() != "f32[4]" || neg.Operands[0].Name != "abs.anon" {
		t.Errorf("a's operand 1 = %s %s(%s), want negate.anon = f32[4] negate(abs.anon)", neg.Shape, neg.Name, neg.Operands[0].Name)
	}
	w := m.Entry.Root
	if w.Condition == nil || w.Condition.Name != "w.condition" || w.Body == nil || w.Body.Name != "w.body" {
		t.Fatalf("while's condition and body = %v, %v, want w.condition and w.body", w.Condition, w.Body)
	}
	if w.Metadata != `op_name="loop"` {
		t.Errorf("the attribute after the inline body was lost: metadata %q", w.Metadata)
	}
	// Nesting is bounded (hostile input must not exhaust the stack): 101 nested negates
	// are refused at the 101st (column 23 + 7*100), 100 are read.
	deep := func(n int) string {
		return "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT r = f32[4] abs(" +
			strings.Repeat("negate(", n) + "p" + strings.Repeat(")", n) + ")\n}\n"
	}
	if _, err := Parse("deep.hlo", []byte(deep(100))); err != nil {
		t.Errorf("100 nested instructions: %v", err)
	}
	if _, err := Parse("deep.hlo", []byte(deep(101))); err == nil || !strings.Contains(err.Error(), "deep.hlo:4:723: instructions nested more than 100 deep") {
		t.Errorf("101 nested instructions: err = %v", err)
	}
	// The get-tuple-element nested in the condition has no index: XLA's nested
	// instructions take no attributes, so it is an error, with its place.
	bad := strings.Replace(src, "s32[] get-tuple-element(s), s32[] constant(10)", "s32[] get-tuple-element(s), index=0", 1)
	if _, err := Parse("bad.hlo", []byte(bad)); err == nil || !strings.Contains(err.Error(), "bad.hlo:8:63: expected ')' after operands, found '='") {
		t.Errorf("nested instruction with an attribute: err = %v, want bad.hlo:8:63: expected ')' after operands", err)
	}
}
