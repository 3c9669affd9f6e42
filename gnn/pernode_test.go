package gnn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/metric"
	"github.com/tpucost/tpucost/nn"
)

// perNodeWidth is the per-node configuration width of the synthetic fixtures.
const perNodeWidth = 2

// perNodeItems turns rows into per-node configuration items: every row gets nconf
// configurations that configure up to 4 of its nodes with random features in {0,1,2,3},
// the same global config vector (so only the per-node features tell configurations
// apart), and the runtime 1000·(1 + Σ_i f_i0 + 0.5·f_i1) + i (distinct runtimes) ns.
func perNodeItems(tb testing.TB, m *Model, rows []dataset.Row, nconf int, rng *rand.Rand) []item {
	tb.Helper()
	var items []item
	for ri := range rows {
		r := rows[ri]
		n := r.Graph.Nodes()
		nodes := rng.Perm(n)[:min(4, n)]
		nc := &nodeConfigs{Width: perNodeWidth}
		for _, v := range nodes {
			nc.Nodes = append(nc.Nodes, int32(v))
		}
		r.ConfigFeats = make([][]float32, nconf)
		r.RuntimesNs = make([]float64, nconf)
		r.AnalyticalNs = nil
		for c := range nconf {
			r.ConfigFeats[c] = slices.Clone(rows[ri].ConfigFeats[0])
			f := make([]float32, len(nodes)*perNodeWidth)
			t := 1.0
			for i := range nodes {
				f[i*perNodeWidth] = float32(rng.IntN(4))
				f[i*perNodeWidth+1] = float32(rng.IntN(4))
				t += float64(f[i*perNodeWidth]) + 0.5*float64(f[i*perNodeWidth+1])
			}
			nc.Feats = append(nc.Feats, f)
			r.RuntimesNs[c] = 1000*t + float64(c)
		}
		k, err := prepareKernel(&r.Graph, r.ConfigFeats, &m.Norm, m.Config, m.Config.storedConfigWidth())
		if err != nil {
			tb.Fatal(err)
		}
		k.key, k.program, k.runtimes = r.KernelKey, r.Program, r.RuntimesNs
		if m.Config.PerNode() {
			if err := k.attachNodeConfigs(nc, m.Config.NodeConfigWidth); err != nil {
				tb.Fatal(err)
			}
		}
		cfgs := make([]int, nconf)
		for i := range cfgs {
			cfgs[i] = i
		}
		items = append(items, item{k: k, cfgs: cfgs})
	}
	return items
}

func TestPerNodeGradientsMatchFiniteDifferences(t *testing.T) {
	rows := rowsWithConfigs(cachedRows(t, "mlp_768x3_b8", dataset.TaskTile, 16), 1, 3)
	for _, loss := range []Loss{LossListMLE, LossRankHinge, LossMSE} {
		t.Run(string(loss), func(t *testing.T) {
			cfg := tinyConfig()
			cfg.NodeConfigWidth = perNodeWidth
			m := testModel(t, cfg, dataset.TaskTile, loss, rows, 7)
			wakeUp(m)
			items := perNodeItems(t, m, rows, 4, rand.New(rand.NewPCG(9, 9)))
			b, err := newBatch(m.Config, items, true, 4, loss, m.Target, true)
			if err != nil {
				t.Fatal(err)
			}
			// Every sample has its own copy of its kernel's nodes.
			want := 0
			for _, it := range items {
				want += it.k.nodes() * len(it.cfgs)
			}
			if b.real.N != want {
				t.Fatalf("batch holds %d nodes, want %d (one copy per configuration)", b.real.N, want)
			}
			grads := checkGradients(t, m, items, loss)
			if g := grads["input.w_nc"]; slices.Max(g) == 0 && slices.Min(g) == 0 {
				t.Errorf("input.w_nc has a zero gradient: the per-node features do not reach the loss")
			}
		})
	}
}

// perNodeMinTau: the per-node model ranks the synthetic configurations after
// overfitSteps steps with a mean Kendall τ of 1.000 (observed, both losses); the
// same architecture without per-node features sees identical inputs for every
// configuration and scores them alike (see sameInputsTol).
const perNodeMinTau = 0.8

// sameInputsTol bounds how far apart a model may score configurations whose inputs are
// identical, relative to the largest score of the kernel. The scores are equal in exact
// arithmetic, but an optimized BLAS may sum identical rows of one product in different
// orders (a blocked GEMM gives the rows at a block's edge another micro-kernel), so on
// OpenBLAS they differ by float32 rounding: a few ulps (u = 2⁻²⁴ ≈ 6e-8) per product over
// the model's chain of about six products, measured under 1e-7 on OpenBLAS's Haswell kernels
// (a Kendall τ over such differences is noise, which is why this test does not use one).
// Any per-configuration signal reaching the scores moves them by far more.
const sameInputsTol = 1e-5

func TestPerNodeModelRanks(t *testing.T) {
	rows := rowsWithConfigs(cachedRows(t, "resnet18_b1", dataset.TaskTile, 16), 1, 6)
	for _, loss := range []Loss{LossListMLE, LossRankHinge} {
		for _, perNode := range []bool{true, false} {
			cfg := DefaultConfig()
			if perNode {
				cfg.NodeConfigWidth = perNodeWidth
			}
			m := testModel(t, cfg, dataset.TaskTile, loss, rows, 1)
			items := perNodeItems(t, m, rows, 8, rand.New(rand.NewPCG(1, 1)))
			eng := newEngine(m, true, true, 2)
			tr := &trainer{opts: TrainOptions{BatchKernels: 8}, m: m, adam: nn.NewAdam(m.Params, overfitLR), eng: eng}
			for range overfitSteps {
				if _, err := tr.step(items); err != nil {
					t.Fatal(err)
				}
			}
			eng.close()
			pe := newEngine(m, false, true, 2)
			ks := make([]*kernel, len(items))
			for i := range items {
				ks[i] = items[i].k
			}
			outs, err := pe.predict(ks, 8)
			pe.close()
			if err != nil {
				t.Fatal(err)
			}
			var tau, spread float64
			for i, k := range ks {
				tk, err := metric.KendallTau(outs[i], k.runtimes)
				if err != nil {
					t.Fatal(err)
				}
				tau += tk / float64(len(ks))
				scale := math.Max(math.Abs(slices.Max(outs[i])), math.Abs(slices.Min(outs[i])))
				if scale > 0 {
					spread = math.Max(spread, (slices.Max(outs[i])-slices.Min(outs[i]))/scale)
				}
			}
			t.Logf("%s, per-node %t: mean Kendall tau %.3f, largest spread of a kernel's scores %.2g of its largest", loss, perNode, tau, spread)
			if perNode && tau < perNodeMinTau {
				t.Errorf("%s: per-node model's mean Kendall tau %.3f, want >= %g", loss, tau, perNodeMinTau)
			}
			if !perNode && spread > sameInputsTol {
				t.Errorf("%s: a model without per-node features scores configurations it cannot tell apart %.2g apart (relative; tolerance %g)", loss, spread, sameInputsTol)
			}
		}
	}
}

func TestNodeConfigsValidate(t *testing.T) {
	good := nodeConfigs{Nodes: []int32{0, 2}, Width: 2, Feats: [][]float32{{1, 2, 3, 4}}}
	if err := good.Validate(3, 2); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		nc   nodeConfigs
		want string
	}{
		{"width", nodeConfigs{Nodes: []int32{0}, Width: 3, Feats: [][]float32{{1, 2, 3}}}, "model reads 2"},
		{"outside", nodeConfigs{Nodes: []int32{3}, Width: 2, Feats: [][]float32{{1, 2}}}, "outside"},
		{"twice", nodeConfigs{Nodes: []int32{1, 1}, Width: 2, Feats: [][]float32{{1, 2, 3, 4}}}, "twice"},
		{"short", nodeConfigs{Nodes: []int32{1}, Width: 2, Feats: [][]float32{{1}}}, "want 1 nodes"},
		{"nan", nodeConfigs{Nodes: []int32{1}, Width: 2, Feats: [][]float32{{1, float32(math.NaN())}}}, "non-finite"},
		{"none", nodeConfigs{Width: 2}, "no configurable"},
	} {
		if err := c.nc.Validate(3, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	cfg := DefaultConfig()
	cfg.NodeConfigWidth = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "node_config_width") {
		t.Errorf("node_config_width -1: error %v", err)
	}
}
