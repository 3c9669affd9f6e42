package opt

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/zoo"
)

// TestOpCountReport measures the OpCount reduction of Default per zoo family and kind,
// and of each pass run alone over the whole zoo, and logs both tables (go test -v -run
// TestOpCountReport ./compiler/opt). It pins the totals it measured when it was written
// as lower bounds, so that a pass that silently stops working fails it.
func TestOpCountReport(t *testing.T) {
	if raceEnabled {
		t.Skip("a measurement over the whole zoo; the race detector adds nothing to it")
	}
	type agg struct{ before, after, models int }
	fam := map[string]*agg{}
	alone := map[string]int{}
	total := &agg{}
	for _, zm := range zoo.All() {
		m, err := zm.Build()
		if err != nil {
			t.Fatal(err)
		}
		before := OpCount(m)
		for _, p := range All() {
			c := m.Clone()
			if _, err := p.Run(c); err != nil {
				t.Fatal(err)
			}
			alone[p.Name] += before - OpCount(c)
		}
		if _, err := Default().Run(m); err != nil {
			t.Fatal(err)
		}
		k := zm.Family + " " + string(zm.Kind)
		if fam[k] == nil {
			fam[k] = &agg{}
		}
		for _, a := range []*agg{fam[k], total} {
			a.before += before
			a.after += OpCount(m)
			a.models++
		}
	}
	pct := func(b, a int) float64 { return 100 * float64(b-a) / float64(b) }
	var keys []string
	for k := range fam {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("\n| family, kind | models | ops before | ops after Default | reduction |\n|---|---|---|---|---|\n")
	for _, k := range keys {
		a := fam[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %.1f%% |\n", k, a.models, a.before, a.after, pct(a.before, a.after))
	}
	fmt.Fprintf(&b, "| all | %d | %d | %d | %.1f%% |\n", total.models, total.before, total.after, pct(total.before, total.after))
	b.WriteString("\n| pass (alone, once, on every zoo model) | ops removed | share of all ops |\n|---|---|---|\n")
	for _, p := range All() {
		fmt.Fprintf(&b, "| %s | %d | %.2f%% |\n", p.Name, alone[p.Name], 100*float64(alone[p.Name])/float64(total.before))
	}
	t.Log(b.String())

	// lower bounds: the measured values when this test was written, rounded down
	if got := pct(total.before, total.after); got < minZooReduction {
		t.Errorf("Default removes %.1f%% of the zoo's ops, want ≥ %.0f%%", got, minZooReduction)
	}
	for name, min := range minAlone {
		if alone[name] < min {
			t.Errorf("%s alone removes %d zoo ops, want ≥ %d", name, alone[name], min)
		}
	}
}

// minZooReduction is the share of the zoo's ops Default removes (23.2% measured).
const minZooReduction = 20.0

// minAlone is the number of zoo ops each pass removes on its own (measured: cse 34130,
// pad-add-to-concat 2566, transpose-folding 732, algsimp 587, dce 577,
// constant-folding 25); the other passes find nothing in the zoo's graphs.
var minAlone = map[string]int{
	"cse": 34000, "pad-add-to-concat": 2500, "transpose-folding": 700, "algsimp": 550, "dce": 550, "constant-folding": 20,
}

// orderCase is a zoo model on which running pass a then b leaves a different OpCount
// than b then a (each pass once).
type orderCase struct {
	model, a, b string
	ab, ba      int
}

// orderCases are the order dependences found by running every pair of passes both ways
// on every zoo model (see the report): pad-add-to-concat needs the pads it merges to
// die, and CSE run first shares pads between two gradient sums; algsimp turns 1·c into
// c itself while constant folding makes a new constant CSE must merge later; CSE run
// first lets constant folding see merged operands.
var orderCases = []orderCase{
	{"wavernn_h896_t32_b8_train", "pad-add-to-concat", "cse", 1656, 1848},
	{"mlp_1000x4_b64_train", "algsimp", "constant-folding", 146, 147},
	{"bert_base_s128_b8_train", "constant-folding", "cse", 5404, 5406},
}

func TestOrderMatters(t *testing.T) {
	for _, c := range orderCases {
		m, err := zoo.Build(c.model)
		if err != nil {
			t.Fatal(err)
		}
		a, b := mustLookup(t, c.a), mustLookup(t, c.b)
		m1, m2 := m.Clone(), m.Clone()
		if _, err := Run(m1, a, b); err != nil {
			t.Fatal(err)
		}
		if _, err := Run(m2, b, a); err != nil {
			t.Fatal(err)
		}
		if got1, got2 := OpCount(m1), OpCount(m2); got1 != c.ab || got2 != c.ba {
			t.Errorf("%s: %s then %s leaves %d ops (want %d), %s then %s %d (want %d)",
				c.model, c.a, c.b, got1, c.ab, c.b, c.a, got2, c.ba)
		}
	}
}
