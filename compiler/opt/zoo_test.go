package opt

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// zooModels is every zoo model, or one per family and kind under the race detector.
func zooModels() []zoo.Model {
	if raceEnabled {
		return oneModelPerFamily()
	}
	return zoo.All()
}

// TestZooDefault checks Default on every zoo model, inference and training: it
// succeeds within the iterations DefaultMaxIterations's doc states, the result
// verifies, OpCount does not grow, running it again changes nothing (a fixed point),
// and a second build gives byte-identical output.
func TestZooDefault(t *testing.T) {
	for _, zm := range zooModels() {
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		before := OpCount(m)
		n, err := RunToFixedPoint(m, XLAOrderPasses(), DefaultMaxIterations)
		if err != nil {
			t.Fatalf("%s: %v", zm.Name, err)
		}
		if n > maxZooIterations {
			t.Errorf("%s: Default needed %d iterations, DefaultMaxIterations's doc says at most %d", zm.Name, n, maxZooIterations)
		}
		out := checkDefault(t, zm.Name, m)
		if got := OpCount(out); got > before {
			t.Errorf("%s: OpCount grew from %d to %d", zm.Name, before, got)
		}
		m2, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Default().Run(m2); err != nil {
			t.Fatal(err)
		}
		if m2.String() != out.String() {
			t.Errorf("%s: Default is not deterministic", zm.Name)
		}
	}
}

// checkDefault runs Default on m (in place) and checks the result verifies and is a
// fixed point.
func checkDefault(t *testing.T, name string, m *hlo.Module) *hlo.Module {
	t.Helper()
	if _, err := Default().Run(m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := hlo.Verify(m); err != nil {
		t.Fatalf("%s: the result does not verify: %v", name, err)
	}
	text := m.String()
	again, err := Default().Run(m)
	if err != nil {
		t.Fatalf("%s (second run): %v", name, err)
	}
	if again || m.String() != text {
		t.Fatalf("%s: Default did not reach a fixed point (a second run changed it)", name)
	}
	return m
}

// TestZooPassesAlone runs every pass alone on one model of each zoo family and kind:
// each succeeds, verifies and does not grow OpCount.
func TestZooPassesAlone(t *testing.T) {
	for _, zm := range oneModelPerFamily() {
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range All() {
			c := m.Clone()
			if _, err := p.Run(c); err != nil {
				t.Fatalf("%s on %s: %v", p.Name, zm.Name, err)
			}
			if err := hlo.Verify(c); err != nil {
				t.Fatalf("%s on %s: the result does not verify: %v", p.Name, zm.Name, err)
			}
			if OpCount(c) > OpCount(m) && !p.Expands {
				t.Errorf("%s on %s: OpCount grew from %d to %d", p.Name, zm.Name, OpCount(m), OpCount(c))
			}
		}
	}
}

func oneModelPerFamily() []zoo.Model {
	seen := map[string]bool{}
	var out []zoo.Model
	for _, zm := range zoo.All() {
		k := zm.Family + "/" + string(zm.Kind)
		if !seen[k] {
			seen[k] = true
			out = append(out, zm)
		}
	}
	return out
}

// maxEvalWork bounds the reference evaluator's work (multiply-adds and element copies)
// for the zoo models TestZooEquivalence evaluates: about a second in the evaluator.
const maxEvalWork = 1e7

// evalWork estimates the reference evaluator's work for m's entry.
func evalWork(m *hlo.Module) float64 {
	w := 0.0
	for _, in := range m.Entry.Instructions {
		n := float64(in.Shape.Elements())
		switch in.Opcode {
		case hlo.OpDot:
			dd := dotDims(in)
			for _, d := range dd.LhsContracting {
				n *= float64(in.Operands[0].Shape.Dims[d])
			}
		case hlo.OpConvolution:
			n *= float64(in.Operands[1].Shape.Elements()) / float64(max(in.Operands[1].Shape.Dims[in.Conv.KernelOutput], 1))
		case hlo.OpReduce:
			n = float64(in.Operands[0].Shape.Elements()) * 8 // a reducer call per element
		}
		w += n
	}
	return w
}

// TestZooEquivalence evaluates every zoo model that is small enough for the reference
// evaluator (and uses only what it supports) on one random input, before and after each
// pass and Default.
func TestZooEquivalence(t *testing.T) {
	var names []string
	limit, want := maxEvalWork, minZooEvaluated
	if raceEnabled {
		limit, want = maxEvalWork/10, 2
	}
	for _, zm := range zoo.All() {
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		if evalWork(m) > limit {
			continue
		}
		args := randomArgs(m, newRand(seedOf(zm.Name)))
		want, err := evalModule(m, args)
		if err != nil {
			if strings.Contains(err.Error(), "does not support") {
				continue
			}
			t.Fatalf("%s: %v", zm.Name, err)
		}
		names = append(names, zm.Name)
		for _, p := range append(All(), Default()) {
			out, changed := runStructural(t, p, m)
			if !changed {
				continue
			}
			got, err := evalModule(out, args)
			if err != nil {
				t.Fatalf("%s on %s: evaluating the result: %v", p.Name, zm.Name, err)
			}
			if err := sameTensor(want, got); err != nil {
				t.Errorf("%s changed the value of %s: %v", p.Name, zm.Name, err)
			}
		}
	}
	t.Logf("evaluated %d zoo models: %s", len(names), strings.Join(names, ", "))
	if len(names) < want {
		t.Errorf("only %d zoo models were small enough to evaluate, want ≥ %d", len(names), want)
	}
}

// minZooEvaluated is how many zoo models TestZooEquivalence must evaluate (the small
// MLPs, char-RNNs and DLRMs, inference and training: 7 when it was written).
const minZooEvaluated = 6

// realHLO lists the real XLA dumps in testdata with the OpCount Default reaches on
// each; it pins the passes' effect on real input (see testdata/README.md).
var realHLO = []struct {
	file       string
	before     int
	after      int
	evaluate   bool
	iterations int
}{
	{"graphsage_tf.hlo", 123, 66, true, 3},
	{"resnet50_keras_jax_f32.hlo", 1529, 1161, false, 2},
	{"dynamic_slice_loop_1x2048x768_bf16.hlo", 451, 451, false, 1},
}

func TestRealHLO(t *testing.T) {
	for _, r := range realHLO {
		m, err := hlo.ParseFile(filepath.Join("testdata", r.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := OpCount(m); got != r.before {
			t.Errorf("%s: OpCount %d before, want %d", r.file, got, r.before)
		}
		var args []*tensor
		var want *tensor
		evaluate := r.evaluate && !raceEnabled
		if evaluate {
			args = randomArgs(m, newRand(seedOf(r.file)))
			if want, err = evalModule(m, args); err != nil {
				t.Fatalf("%s: %v", r.file, err)
			}
		}
		check := func(name string, out *hlo.Module) {
			if !evaluate {
				return
			}
			got, err := evalModule(out, args)
			if err != nil {
				t.Fatalf("%s on %s: evaluating the result: %v", name, r.file, err)
			}
			if err := sameTensor(want, got); err != nil {
				t.Errorf("%s changed the value of %s: %v", name, r.file, err)
			}
		}
		for _, p := range All() {
			if out, changed := runStructural(t, p, m); changed {
				check(p.Name, out)
			}
		}
		out := m.Clone()
		n, err := RunToFixedPoint(out, XLAOrderPasses(), DefaultMaxIterations)
		if err != nil {
			t.Fatal(err)
		}
		if n != r.iterations {
			t.Errorf("%s: Default took %d iterations, want %d", r.file, n, r.iterations)
		}
		if err := hlo.Verify(out); err != nil {
			t.Fatalf("%s: %v", r.file, err)
		}
		check("simplify", out)
		if got := OpCount(out); got != r.after {
			t.Errorf("%s: OpCount %d after Default, want %d", r.file, got, r.after)
		}
		checkDefault(t, r.file, out)
	}
}
