package zoo

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// dotForms counts the dots of every computation of a module by the forms that tell a
// JAX (Flax) training step from a Keras-style one.
type dotForms struct {
	dots int
	// nonCanonical: dots XLA's DotDecomposer rewrites (opt.DotCanonical false: batch
	// dimensions 0..b-1 on both sides, one contracting dimension and at most one
	// non-contracting dimension per side).
	nonCanonical int
	// dense3D: [B,S,D]·[D,O] contracting {2} with {0}, no batch dimensions.
	dense3D int
	// batch02: batch dimensions {0,2} on the lhs (the scores einsum '...qhd,...khd').
	batch02 int
	// weightGrad01: a rank-2 result of two rank-3 operands contracting {0,1} with {0,1}
	// (a 3-D dense layer's weight gradient).
	weightGrad01 int
	// contract01: any dot contracting {0,1} with {0,1} (weight gradients of 3-D and 4-D
	// dense layers).
	contract01 int
}

func countDotForms(m *hlo.Module) dotForms {
	var f dotForms
	for _, c := range m.Computations {
		for _, x := range c.Instructions {
			if x.Opcode != hlo.OpDot {
				continue
			}
			f.dots++
			if !opt.DotCanonical(x) {
				f.nonCanonical++
			}
			d := x.Dot
			if d == nil {
				continue
			}
			lr, rr := x.Operands[0].Shape.Rank(), x.Operands[1].Shape.Rank()
			if len(d.LhsBatch) == 0 && lr == 3 && rr == 2 && slices.Equal(d.LhsContracting, []int{2}) && slices.Equal(d.RhsContracting, []int{0}) {
				f.dense3D++
			}
			if slices.Equal(d.LhsBatch, []int{0, 2}) {
				f.batch02++
			}
			if len(d.LhsBatch) == 0 && slices.Equal(d.LhsContracting, []int{0, 1}) && slices.Equal(d.RhsContracting, []int{0, 1}) {
				f.contract01++
			}
			if len(d.LhsBatch) == 0 && lr == 3 && rr == 3 && x.Shape.Rank() == 2 &&
				slices.Equal(d.LhsContracting, []int{0, 1}) && slices.Equal(d.RhsContracting, []int{0, 1}) {
				f.weightGrad01++
			}
		}
	}
	return f
}

func buildNamed(t *testing.T, name string) *hlo.Module {
	t.Helper()
	m, err := Build(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFlaxDotForms: the Flax-style GPT-2 step has the dot forms of a real JAX training
// step (3-D dense layers, attention with batch dimensions {0,2}, weight gradients
// contracting {0,1}), one of each kind per dense layer or attention, and the Keras-style
// step has no 3-D dense layer and no {0,1} weight gradient.
func TestFlaxDotForms(t *testing.T) {
	const layers = 12
	// Dense layers per GPT-2 layer: c_attn, attention c_proj, c_fc, mlp c_proj; plus
	// the tied LM head.
	const dense = 4*layers + 1
	f := countDotForms(buildNamed(t, "flax_gpt2_small_s128_b8_train"))
	if f.dense3D < dense {
		t.Errorf("flax: %d 3-D dense dots, want >= %d (the forward layers)", f.dense3D, dense)
	}
	if f.weightGrad01 != dense {
		t.Errorf("flax: %d weight gradients contracting {0,1}, want %d (one per dense layer)", f.weightGrad01, dense)
	}
	if f.batch02 < layers {
		t.Errorf("flax: %d dots with batch dimensions {0,2}, want >= %d (the scores einsum)", f.batch02, layers)
	}
	if 2*f.nonCanonical < f.dots {
		t.Errorf("flax: %d of %d dots non-canonical, want most", f.nonCanonical, f.dots)
	}
	k := countDotForms(buildNamed(t, "gpt2_small_s128_b8_train"))
	if k.dense3D != 0 || k.weightGrad01 != 0 {
		t.Errorf("keras: %d 3-D dense dots and %d {0,1} weight gradients, want none", k.dense3D, k.weightGrad01)
	}
	if k.nonCanonical >= f.nonCanonical {
		t.Errorf("keras: %d non-canonical dots, flax %d; want fewer", k.nonCanonical, f.nonCanonical)
	}
}

// TestGradJAXWeightGradient: the weight gradient of a 3-D dense layer is JAX's
// dot_general(g, x) contracting {0,1} with {0,1} into [O, D], then a transpose to [D, O];
// Grad's is dot(x, g) into [D, O].
func TestGradJAXWeightGradient(t *testing.T) {
	for _, c := range []struct {
		grad  gradFunc
		first int // the operand of the weight-gradient dot that is x (0 or 1)
		dims  []int
		trans bool
	}{{GradJAX, 1, []int{5, 4}, true}, {Grad, 0, []int{4, 5}, false}} {
		b := hlo.NewBuilder("dense3d")
		x := b.Param(hlo.F32, 2, 3, 4)
		w := b.Param(hlo.F32, 4, 5)
		y := b.Dot(x, w, hlo.DotDims{LhsContracting: []int{2}, RhsContracting: []int{0}})
		loss := b.ReduceSum(b.Mul(y, y), 0, 1, 2)
		gs, err := c.grad(b, loss, []*hlo.Instruction{w})
		if err != nil {
			t.Fatal(err)
		}
		g := gs[0]
		if c.trans {
			if g.Opcode != hlo.OpTranspose || !slices.Equal(g.Dimensions, []int{1, 0}) {
				t.Fatalf("weight gradient is %s, want a transpose {1,0}", g)
			}
			g = g.Operands[0]
		}
		if g.Opcode != hlo.OpDot || g.Operands[c.first] != x || !slices.Equal(g.Shape.Dims, c.dims) ||
			!slices.Equal(g.Dot.LhsContracting, []int{0, 1}) || !slices.Equal(g.Dot.RhsContracting, []int{0, 1}) {
			t.Errorf("weight-gradient dot is %s, want x as operand %d contracting {0,1} into %v", g, c.first, c.dims)
		}
	}
}

// TestFlaxGPT2GradFiniteDifferences checks the gradient GradJAX emits for a tiny
// Flax-style GPT-2 (every rule its training step uses: gathers, slices, the 3-D dense
// dots, the attention einsums, layer norm, GELU, the softmax cross-entropy) against
// central finite differences of the reference evaluator (tolerances: grad_test.go).
func TestFlaxGPT2GradFiniteDifferences(t *testing.T) {
	cfg := flaxGPT2Config{batch: 2, seq: 4, layers: 1, hidden: 8, heads: 2, vocab: 11, maxPos: 6}
	checkFlaxGrad(t, cfg.graph, func(p *hlo.Instruction, rng *rand.Rand) float64 { return float64(rng.IntN(cfg.vocab)) }, cfg.vocab, cfg.maxPos)
}

// TestFlaxBERTGradFiniteDifferences does the same for a tiny Flax-style BERT
// pre-training step (three embeddings, the padding-mask bias, exact GELU by erf, the
// gathered masked-LM positions, next-sentence prediction). Integer inputs: ids and
// labels below the vocabulary, token types and next-sentence labels 0 or 1, the
// padding mask 1 with probability ¾ (a masked key is then one of several per query), masked
// positions below B·S.
func TestFlaxBERTGradFiniteDifferences(t *testing.T) {
	cfg := flaxBERTConfig{batch: 2, seq: 4, layers: 1, hidden: 8, heads: 2, vocab: 11, maxPos: 6, preds: 3}
	checkFlaxGrad(t, cfg.graph, func(p *hlo.Instruction, rng *rand.Rand) float64 {
		switch p.ParamNum {
		case 1: // token types
			return float64(rng.IntN(2))
		case 2: // padding mask
			return float64(min(1, rng.IntN(4)))
		}
		if p.Shape.Rank() == 1 && p.Shape.Dims[0] == cfg.batch { // next-sentence labels
			return float64(rng.IntN(2))
		}
		if p.Shape.Rank() == 1 { // masked positions into [B·S]
			return float64(rng.IntN(cfg.batch * cfg.seq))
		}
		return float64(rng.IntN(cfg.vocab))
	}, cfg.vocab, cfg.maxPos)
}

// checkFlaxGrad builds graph's loss and its GradJAX gradient, fills the s32 inputs with
// intIn and the rest with N(0, ½²) values, and checks every parameter's gradient at up to
// fdMaxChecks elements against central finite differences. The gradient of a parameter
// whose first dimension is one of tables (embedding rows few tokens use) may be 0 at the
// checked elements; any other parameter's must not be.
func checkFlaxGrad(t *testing.T, graph graphFn, intIn func(p *hlo.Instruction, rng *rand.Rand) float64, tables ...int) {
	t.Helper()
	b := hlo.NewBuilder("flax_fd")
	n := newNet(b, true, hlo.F32)
	loss := graph(n)[0]
	grads, err := GradJAX(b, loss, n.params, n.stops...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := b.Build(append([]*hlo.Instruction{loss}, grads...)...)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 42))
	ps := m.Entry.Parameters()
	vals := make([]tensor, len(ps))
	for i, p := range ps {
		vals[i] = newTensor(p.Shape.Dims)
		for j := range vals[i].data {
			if p.Shape.Elem == hlo.S32 {
				vals[i].data[j] = intIn(p, rng)
			} else {
				vals[i].data[j] = 0.5 * rng.NormFloat64()
			}
		}
	}
	for k, nz := range checkFiniteDifferences(t, m, vals, n.params) {
		if p := n.params[k]; !nz && !slices.Contains(tables, p.Shape.Dims[0]) {
			t.Errorf("param %d (%s): every checked gradient element is 0", k, p.Shape.StringNoLayout())
		}
	}
}

// existingModelHashes pins the module text of existing models (sha256 of
// Module.String()) as built before the Flax-style models and GradJAX were added: adding
// them must not change any existing model's graph. (A change to the HLO printer changes
// these hashes too; re-pin them only after comparing the modules' instructions.)
var existingModelHashes = map[string]string{
	"gpt2_small_s128_b8_train": "6750b20fc64b1bcd3291c3232927e6605500577883d584f599d051b499320f8c",
	"bert_base_s128_b8_train":  "62221d8a51b4786a86f74f3a22323aa9e748b82b16a98cb63889618004068ff7",
	"vit_s16_224_b16_train":    "ff7d40f6a699b69f90737e1830988bba8bd1d550ad0e3d8a49f3adcae344b4ee",
}

func TestExistingModelsUnchanged(t *testing.T) {
	for name, want := range existingModelHashes {
		got := fmt.Sprintf("%x", sha256.Sum256([]byte(buildNamed(t, name).String())))
		if got != want {
			t.Errorf("%s: module text hash %s, want %s", name, got, want)
		}
	}
}

// withoutPass is stages with every pass named name removed.
// realTrainEnv names the environment variable that gives the path of a real JAX training
// step's HLO (XLA's nv_maxtext_1n1g_jit_train_step_before_optimization.hlo) for
// TestDotDecomposerTable's first row.
const realTrainEnv = "TPUCOST_REAL_TRAIN_HLO"

// (The variable may list several paths, separated as in PATH.)

// TestDotDecomposerTable measures, per program, the dots, the non-canonical ones, and the
// op count after XLA's CPU order (opt.XLAPipeline) and after the same order without its
// two dot-decomposer runs; with -v it logs the table of docs/compiler.md. It checks the claim
// the table supports: in the Flax-style steps most dots are non-canonical and XLA's order
// ends with more ops than the order without dot-decomposer; the Keras-style steps have
// fewer non-canonical dots.
func TestDotDecomposerTable(t *testing.T) {
	type row struct {
		name string
		m    *hlo.Module
	}
	var rows []row
	for _, path := range filepath.SplitList(os.Getenv(realTrainEnv)) {
		m, err := hlo.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{filepath.Base(path), m})
	}
	for _, name := range []string{"gpt2_small_s128_b8_train", "flax_gpt2_small_s128_b8_train", "bert_base_s128_b8_train", "flax_bert_base_s128_b8_train"} {
		rows = append(rows, row{name, buildNamed(t, name)})
	}
	var lines []string
	lines = append(lines, "| program | dots | non-canonical | 3-D dense | batch {0,2} | contracting {0,1} | ops before | after XLA order | without dot-decomposer | difference |",
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	forms := map[string]dotForms{}
	diff := map[string]int{}
	for _, r := range rows {
		f := countDotForms(r.m)
		forms[r.name] = f
		before := opt.OpCount(r.m)
		counts := [2]int{}
		for i, stages := range [][]opt.Stage{opt.XLAPipeline(), opt.WithoutPasses(opt.XLAPipeline(), "dot-decomposer")} {
			m := r.m.Clone()
			if _, err := opt.RunStages(m, stages, nil); err != nil {
				t.Fatalf("%s: %v", r.name, err)
			}
			counts[i] = opt.OpCount(m)
		}
		diff[r.name] = counts[0] - counts[1]
		lines = append(lines, fmt.Sprintf("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %+d |", r.name, f.dots, f.nonCanonical,
			f.dense3D, f.batch02, f.contract01, before, counts[0], counts[1], counts[0]-counts[1]))
	}
	t.Log("\n" + strings.Join(lines, "\n"))
	for _, pair := range [][2]string{{"gpt2_small_s128_b8_train", "flax_gpt2_small_s128_b8_train"}, {"bert_base_s128_b8_train", "flax_bert_base_s128_b8_train"}} {
		k, f := forms[pair[0]], forms[pair[1]]
		if 2*f.nonCanonical < f.dots || k.nonCanonical >= f.nonCanonical {
			t.Errorf("%s: %d of %d dots non-canonical; %s: %d of %d", pair[1], f.nonCanonical, f.dots, pair[0], k.nonCanonical, k.dots)
		}
		if diff[pair[1]] <= 0 || diff[pair[1]] <= diff[pair[0]] {
			t.Errorf("dot-decomposer's cost: %s %+d ops, %s %+d; want the Flax-style step's positive and larger", pair[1], diff[pair[1]], pair[0], diff[pair[0]])
		}
	}
}
