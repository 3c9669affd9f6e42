package opt

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// parseHLO parses and verifies a test module.
func parseHLO(t testing.TB, src string) *hlo.Module {
	t.Helper()
	m, err := hlo.Parse("test.hlo", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := hlo.Verify(m); err != nil {
		t.Fatalf("the test module does not verify: %v", err)
	}
	return m
}

// expr renders the expression tree of in: parameters by name, constants by literal,
// other instructions as opcode{attributes}(operands).
func expr(in *hlo.Instruction) string {
	switch in.Opcode {
	case hlo.OpParameter:
		return in.Name
	case hlo.OpConstant:
		return in.Literal
	}
	var b strings.Builder
	b.WriteString(in.Opcode.String())
	switch in.Opcode {
	case hlo.OpBroadcast, hlo.OpTranspose, hlo.OpReduce, hlo.OpConcatenate, hlo.OpReverse:
		fmt.Fprintf(&b, "%v", in.Dimensions)
	case hlo.OpSlice:
		for _, s := range in.Slice {
			fmt.Fprintf(&b, "[%d:%d:%d]", s.Start, s.Limit, s.Stride)
		}
	case hlo.OpGetTupleElement:
		fmt.Fprintf(&b, "%d", in.Index)
	case hlo.OpCompare:
		b.WriteString(in.Direction)
	case hlo.OpDot:
		if d := in.Dot; d != nil {
			fmt.Fprintf(&b, "%v%v%v%v", d.LhsBatch, d.LhsContracting, d.RhsBatch, d.RhsContracting)
		}
	case hlo.OpConvert:
		b.WriteString(in.Shape.Elem.String())
	case hlo.OpReshape:
		fmt.Fprintf(&b, "%v", in.Shape.Dims)
	}
	b.WriteByte('(')
	for i, op := range in.Operands {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(expr(op))
	}
	b.WriteByte(')')
	return b.String()
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 5)) }

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// equivalenceTrials is the number of random argument sets each equivalence check uses.
const equivalenceTrials = 3

// checkEquivalent evaluates both modules on the same random arguments and compares.
func checkEquivalent(before, after *hlo.Module, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 7))
	for trial := 0; trial < equivalenceTrials; trial++ {
		args := randomArgs(before, r)
		want, err := evalModule(before, args)
		if err != nil {
			return fmt.Errorf("evaluating the input: %w", err)
		}
		got, err := evalModule(after, args)
		if err != nil {
			return fmt.Errorf("evaluating the result: %w", err)
		}
		if err := sameTensor(want, got); err != nil {
			return fmt.Errorf("trial %d: the result differs: %w", trial, err)
		}
	}
	return nil
}

// runChecked runs p on a clone of m and checks the pass contract: no error, the result
// verifies, OpCount does not grow (unless the pass Expands), the result evaluates equal to m on random inputs, a
// second run on another clone prints the same text, and changed=false means the text
// did not change. It returns the rewritten clone.
func runChecked(t testing.TB, p Pass, m *hlo.Module) (*hlo.Module, bool) {
	t.Helper()
	a, changed := runStructural(t, p, m)
	if err := checkEquivalent(m, a, seedOf(m.Name+p.Name)); err != nil {
		t.Fatalf("%s changed the value of %s: %v\nbefore:\n%s\nafter:\n%s", p.Name, m.Name, err, m, a)
	}
	return a, changed
}

// runStructural is runChecked without the evaluation.
func runStructural(t testing.TB, p Pass, m *hlo.Module) (*hlo.Module, bool) {
	t.Helper()
	a, b := m.Clone(), m.Clone()
	ca, err := p.Run(a)
	if err != nil {
		t.Fatalf("%s: %v\ninput:\n%s", p.Name, err, m)
	}
	if _, err := p.Run(b); err != nil {
		t.Fatalf("%s (second run): %v", p.Name, err)
	}
	if err := hlo.Verify(a); err != nil {
		t.Fatalf("%s: the result does not verify: %v\n%s", p.Name, err, a)
	}
	if a.String() != b.String() {
		t.Fatalf("%s is not deterministic", p.Name)
	}
	// compare with a clone: hlo's Clone drops an empty "slice={}" that the parser kept
	if !ca && a.String() != m.Clone().String() {
		t.Fatalf("%s reported no change but changed the module:\n%s", p.Name, a)
	}
	if before, after := OpCount(m), OpCount(a); after > before && !p.Expands {
		t.Fatalf("%s increased OpCount from %d to %d:\n%s", p.Name, before, after, a)
	}
	return a, ca
}

func mustLookup(t testing.TB, name string) Pass {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
