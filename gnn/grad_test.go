package gnn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
)

// tinyConfig is a small architecture that exercises every part of the model: two
// GraphSAGE layers, every reduction, L2 normalization, a two-layer head and a degree cap
// that truncates some neighbour lists.
func tinyConfig() Config {
	c := DefaultConfig()
	c.EmbedDim, c.Hidden, c.Layers = 3, 4, 2
	c.Reduce = []nn.Reduction{nn.ReduceSum, nn.ReduceMean, nn.ReduceMax}
	c.Head = []int{5, 3}
	c.MaxDegree = 2
	return c
}

// testModel fits statistics on rows and returns a model for them.
func testModel(tb testing.TB, cfg Config, task dataset.Task, loss Loss, rows []dataset.Row, seed int64) *Model {
	tb.Helper()
	st, ts, err := fitStats(sliceSource(rows))
	if err != nil {
		tb.Fatal(err)
	}
	m, err := NewModel(cfg, task, loss, st, ts, seed)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// itemsOf prepares rows as batch items with all their configurations.
func itemsOf(tb testing.TB, m *Model, rows []dataset.Row) []item {
	tb.Helper()
	var items []item
	for i := range rows {
		k, err := m.prepare(&rows[i])
		if err != nil {
			tb.Fatal(err)
		}
		cfgs := make([]int, k.configs())
		for j := range cfgs {
			cfgs[j] = j
		}
		items = append(items, item{k: k, cfgs: cfgs})
	}
	return items
}

// jitter adds uniform noise of the given amplitude to every parameter.
func jitter(ps nn.Params, rng *rand.Rand, amp float64) {
	for _, p := range ps {
		for i := range p.Data {
			p.Data[i] += float32((2*rng.Float64() - 1) * amp)
		}
	}
}

// Gradient check tolerances. The check runs in float64 with central differences of step
// fdStep: the truncation error is O(fdStep²·f”') ≈ 1e-12 and the rounding error
// O(ε₆₄·|f|/fdStep) ≈ 1e-10 for losses of order 1, so a relative error above fdRelTol
// (or an absolute one above fdAbsTol for near-zero gradients) is a wrong gradient, not
// noise. (A kink of ReLU, hinge or max between θ±fdStep would also fail it; with random
// weights that has probability ~0.)
const (
	fdStep   = 1e-6
	fdRelTol = 1e-5
	fdAbsTol = 1e-8
	// hostTol: targets and weights are stored as float32 (relative rounding 6e-8 each).
	hostTol = 1e-6
	// liveBias shifts every bias so that ReLUs start active (see its use): large enough to
	// wake them, small enough that most hinge pairs stay inside the margin, where the
	// hinge has a gradient (at 0.1 the paper set's hinge already has too few).
	liveBias = 0.05
)

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	rows := rowsWithConfigs(cachedRows(t, "mlp_768x3_b8", dataset.TaskTile, 16), 4, 3)
	if len(rows) < 2 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, fs := range []struct {
		set  features.ConfigSet
		seed int64
	}{{features.ConfigPlan, 7}, {features.ConfigPaper, 7}} {
		for _, loss := range Losses() {
			t.Run(string(fs.set)+"/"+string(loss), func(t *testing.T) {
				m := testModel(t, tinyConfig().WithFeatures(fs.set), dataset.TaskTile, loss, rows, fs.seed)
				wakeUp(m)
				checkGradients(t, m, itemsOf(t, m, rows), loss)
			})
		}
	}
}

// wakeUp moves m away from its initialization for a gradient check: uniform noise on
// every parameter, so that no node sits exactly on a ReLU kink (with the initial zero
// biases, a node whose inputs are all zero does, and finite differences average the two
// one-sided derivatives), and biases shifted by liveBias, so that the tiny networks'
// narrow ReLU layers do not start dead (every gradient 0 makes the check reject itself
// as weak).
func wakeUp(m *Model) {
	jitter(m.Params, rand.New(rand.NewPCG(5, 6)), 0.1)
	for _, p := range m.Params {
		if strings.HasSuffix(p.Name, ".b") {
			for i := range p.Data {
				p.Data[i] += liveBias
			}
		}
	}
}

// checkGradients compares the gradients of the training graph of a padded batch of items
// with central finite differences (in float64), for up to 12 entries of every parameter
// (the embedding rows of the opcodes the batch uses), and checks that the graph's loss
// is the host formula's. It returns the analytic gradients by parameter name.
func checkGradients(t *testing.T, m *Model, items []item, loss Loss) map[string][]float64 {
	t.Helper()
	// A padded batch: the check covers padding too.
	b, err := newBatch(m.Config, items, true, 4, loss, m.Target, true)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNet(m.Config, loss, m.Params, b.shape, true, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	_, l0, err := n.run(b)
	if err != nil {
		t.Fatal(err)
	}
	// The graph's loss is the host formula's (up to the float32 rounding of the
	// batch's targets and weights: hostTol).
	pn, err := newNet(m.Config, loss, m.Params, b.shape, false, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := pn.run(b)
	pn.close()
	if err != nil {
		t.Fatal(err)
	}
	if host := b.lossOf(out); math.Abs(host-l0) > hostTol*math.Max(1, math.Abs(l0)) {
		t.Fatalf("graph loss %.15g, host loss %.15g", l0, host)
	}
	analytic := make([][]float64, len(n.params))
	for i, p := range n.params {
		gv, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		analytic[i] = append([]float64(nil), gv.Data().([]float64)...)
	}
	used := slices.Compact(slices.Sorted(slices.Values(b.opcodes)))
	rng := rand.New(rand.NewPCG(3, 4))
	checked, nonzero := 0, 0
	for i, p := range n.params {
		data := p.Value().Data().([]float64)
		var entries []int
		if m.Params[i].Name == "embed" {
			for _, op := range used {
				for e := 0; e < m.Config.EmbedDim; e++ {
					entries = append(entries, op*m.Config.EmbedDim+e)
				}
			}
			entries = entries[:min(len(entries), 12)]
		} else {
			for range min(12, len(data)) {
				entries = append(entries, rng.IntN(len(data)))
			}
		}
		for _, j := range entries {
			orig := data[j]
			data[j] = orig + fdStep
			_, lp, err := n.run(b)
			if err != nil {
				t.Fatal(err)
			}
			data[j] = orig - fdStep
			_, lm, err := n.run(b)
			if err != nil {
				t.Fatal(err)
			}
			data[j] = orig
			fd := (lp - lm) / (2 * fdStep)
			a := analytic[i][j]
			if math.Abs(a-fd) > fdAbsTol+fdRelTol*math.Max(math.Abs(a), math.Abs(fd)) {
				t.Errorf("%s[%d]: analytic %.10g, finite difference %.10g", m.Params[i].Name, j, a, fd)
			}
			checked++
			if a != 0 {
				nonzero++
			}
		}
	}
	if nonzero < checked/2 {
		t.Errorf("only %d of %d checked gradients are nonzero: the check is weak", nonzero, checked)
	}
	t.Logf("loss %.6g: %d gradient entries checked, %d nonzero", l0, checked, nonzero)
	byName := map[string][]float64{}
	for i := range n.params {
		byName[m.Params[n.paramIdx[i]].Name] = analytic[i]
	}
	return byName
}
