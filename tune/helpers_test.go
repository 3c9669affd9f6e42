package tune

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"math"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/tpusim"
)

// testChip is the default preset.
func testChip(t testing.TB) tpusim.Chip {
	t.Helper()
	c, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// smallModule is a two-layer block with a softmax-like tail: a few layout nodes and
// fusion edges, so that its layout x fusion space can be enumerated in a test.
func smallModule(t testing.TB) *hlo.Module {
	t.Helper()
	b := hlo.NewBuilder("small")
	x := b.Param(hlo.BF16, 64, 256)
	w1 := b.Param(hlo.BF16, 256, 512)
	w2 := b.Param(hlo.BF16, 512, 128)
	h := b.Tanh(b.MatMul(x, w1))
	y := b.Convert(b.MatMul(h, w2), hlo.F32)
	e := b.Exp(y)
	s := b.ReduceSum(e, 1)
	m, err := b.Build(b.Div(e, b.Broadcast(s, []int{0}, 64, 128)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// truth is the noiseless simulated time of a program.
func truth(t testing.TB, p *compiler.Program, c tpusim.Chip) float64 {
	t.Helper()
	r, err := tpusim.Simulate(p, c)
	if err != nil {
		t.Fatal(err)
	}
	return r.TotalNs
}

// simModel is a fake learned model: the simulator's noiseless kernel time with a
// deterministic multiplicative error of up to +-err per configuration. As a relative
// model it returns the log of that.
type simModel struct {
	chip     tpusim.Chip
	err      float64
	relative bool
}

func (m simModel) ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error) {
	out := make([]float64, len(choices))
	for i, c := range choices {
		kt, err := tpusim.SimulateChoice(c, m.chip)
		if err != nil {
			out[i] = math.Inf(1)
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(c.ID()))
		u := float64(h.Sum64()%10001)/5000 - 1 // in [-1, 1]
		v := kt.Ns * (1 + m.err*u)
		if m.relative {
			v = math.Log(v)
		}
		out[i] = v
	}
	return out, nil
}

func (m simModel) Relative() bool { return m.relative }

// reportJSON renders a report without its wall time, for determinism checks.
func reportJSON(t testing.TB, r *Report) string {
	t.Helper()
	c := *r
	c.WallS = 0
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.Config.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + string(cfg)
}

func mustRun(t testing.TB, m *hlo.Module, o Options) *Report {
	t.Helper()
	r, err := Run(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// forStrategy fills what strategy st needs beyond the common options: rl gets an untrained
// policy (seeded, so deterministic) and fusion-only kinds, which is all it decides.
func forStrategy(st Strategy, o Options) Options {
	o.Strategy = st
	if st == RL {
		o.Policy, o.Kinds = NewPolicy(1), fusionOnly
	}
	return o
}

// spreadModel is simModel as an ensemble that reports spread for every choice: a
// SpreadModel.
type spreadModel struct {
	simModel
	spread float64
}

func (m spreadModel) ScoreKernelSpread(k *compiler.Kernel, choices []cost.Planned) ([]float64, []float64, error) {
	s, err := m.ScoreKernel(k, choices)
	sp := make([]float64, len(s))
	for i := range sp {
		sp[i] = m.spread
	}
	return s, sp, err
}
