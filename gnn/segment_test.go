package gnn

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/nn"
)

// segTol: the segmented and unsegmented forward passes add the same float32 numbers in
// another order (a segment's sum, then the others'; mean as (Σ)·(1/n) instead of Σ/n):
// relative differences of a few ε₃₂ ≈ 1e-7 per layer, amplified by the head; 1e-4 on
// outputs of order 1 leaves room and still catches a missing or doubled segment (an
// error of order 1/q).
const segTol = 1e-4

func TestSegmentsPartition(t *testing.T) {
	for _, c := range []struct{ n, s int }{{1, 8}, {8, 8}, {9, 8}, {100, 8}, {17, 16}, {1000, 33}} {
		b := segments(c.n, c.s)
		if b[0] != 0 || b[len(b)-1] != c.n {
			t.Errorf("n %d, S %d: bounds %v", c.n, c.s, b)
		}
		want := (c.n + c.s - 1) / c.s
		if len(b)-1 != want {
			t.Errorf("n %d, S %d: %d segments, want %d", c.n, c.s, len(b)-1, want)
		}
		for j := 0; j+1 < len(b); j++ {
			if sz := b[j+1] - b[j]; sz < 1 || sz > c.s {
				t.Errorf("n %d, S %d: segment %d has %d nodes", c.n, c.s, j, sz)
			}
		}
	}
	if b := segments(100, 0); len(b) != 2 {
		t.Errorf("off: %v", b)
	}
}

// bigRows are tile rows of kernels with more than 2·segTestNodes nodes (mlp_768x3_b8 has
// three, of 24 nodes: three segments each).
func bigRows(t *testing.T) []dataset.Row {
	t.Helper()
	var out []dataset.Row
	for _, r := range cachedRows(t, "mlp_768x3_b8", dataset.TaskTile, 16) {
		if r.Graph.Nodes() > 2*segTestNodes && len(r.Configs) >= 4 {
			out = append(out, r)
		}
	}
	if len(out) < 2 {
		t.Fatalf("only %d kernels with more than %d nodes", len(out), 2*segTestNodes)
	}
	return out[:min(len(out), 4)]
}

// segTestNodes is the segment size of the tests.
const segTestNodes = MinSegmentNodes

// TestSegmentedModelIsTheModel: with segments at least as large as every kernel, a
// segmented model predicts what the unsegmented one does (same parameters); with small
// segments, the training graph's loss for one sampled segment (the others detached) is
// the host loss of the predictions, i.e. training sees the model prediction computes.
func TestSegmentedModelIsTheModel(t *testing.T) {
	rows := bigRows(t)
	for _, perNode := range []bool{false, true} {
		cfg := DefaultConfig()
		if perNode {
			cfg.NodeConfigWidth = perNodeWidth
		}
		m := testModel(t, cfg, dataset.TaskTile, LossListMLE, rows, 3)
		items := perNodeItems(t, m, rows, 4, rand.New(rand.NewPCG(2, 2)))
		ks := make([]*kernel, len(items))
		for i := range items {
			ks[i] = items[i].k
		}
		predict := func(m *Model) [][]float64 {
			e := newEngine(m, false, true, 4)
			defer e.close()
			o, err := e.predict(ks, 8)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		whole := predict(m)
		large := *m
		large.Config.MaxSegmentNodes = 1 << 20
		same := predict(&large)
		small := *m
		small.Config.MaxSegmentNodes = segTestNodes
		seg := predict(&small)
		differs := false
		for i := range whole {
			for j := range whole[i] {
				if math.Abs(whole[i][j]-same[i][j]) > segTol*math.Max(1, math.Abs(whole[i][j])) {
					t.Errorf("per-node %t: kernel %d config %d: segmented (one segment) %g, unsegmented %g", perNode, i, j, same[i][j], whole[i][j])
				}
				differs = differs || math.Abs(whole[i][j]-seg[i][j]) > segTol
			}
		}
		if !differs {
			t.Errorf("per-node %t: cutting kernels into segments changed no prediction: the segments are not used", perNode)
		}
		// Training on one segment per kernel sees the predicted model's loss.
		eng := newEngine(&small, true, true, 2)
		tr := &trainer{opts: TrainOptions{BatchKernels: 4, MaxConfigs: 4}, m: &small, eng: eng}
		rng := rand.New(rand.NewPCG(1, 1))
		var batchItems []item
		for _, k := range ks {
			it, _ := tr.sample(k, rng)
			batchItems = append(batchItems, it)
		}
		if err := tr.detach(batchItems); err != nil {
			t.Fatal(err)
		}
		b, err := newBatch(small.Config, batchItems, true, 4, small.Loss, small.Target, true)
		if err != nil {
			t.Fatal(err)
		}
		// Memory is bounded by the segment: at most S nodes per kernel (per config for a
		// per-node model) in the training batch, whatever the kernel's size.
		limit := len(ks) * segTestNodes
		if perNode {
			limit *= 4
		}
		if b.real.N > limit || b.real.M > segTestNodes {
			t.Errorf("per-node %t: training batch holds %d nodes (%d per pool group), want at most %d (%d)", perNode, b.real.N, b.real.M, limit, segTestNodes)
		}
		_, _, l, err := eng.run(b)
		if err != nil {
			t.Fatal(err)
		}
		eng.close()
		tr.val.close()
		var packed []float64
		for _, o := range seg {
			packed = append(packed, o...)
		}
		if host := b.lossOf(packed); math.Abs(host-l) > segTol*math.Max(1, math.Abs(l)) {
			t.Errorf("per-node %t: training loss on sampled segments %.6g, loss of the predictions %.6g", perNode, l, host)
		}
	}
}

// TestSegmentGradients checks the gradients through the segment combination against
// finite differences (float64; tolerances of grad_test.go), with the other segments'
// statistics as constants.
func TestSegmentGradients(t *testing.T) {
	rows := bigRows(t)
	cfg := tinyConfig()
	cfg.MaxSegmentNodes = segTestNodes
	m := testModel(t, cfg, dataset.TaskTile, LossRankLogistic, rows, 7)
	jitter(m.Params, rand.New(rand.NewPCG(5, 6)), 0.1)
	items := itemsOf(t, m, rows)
	tr := &trainer{opts: TrainOptions{BatchKernels: 4}, m: m, eng: newEngine(m, true, true, 2)}
	defer tr.eng.close()
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range items {
		segs := segments(items[i].k.nodes(), segTestNodes)
		j := rng.IntN(len(segs) - 1)
		items[i].lo, items[i].hi = segs[j], segs[j+1]
	}
	if err := tr.detach(items); err != nil {
		t.Fatal(err)
	}
	defer tr.val.close()
	b, err := newBatch(m.Config, items, true, 4, m.Loss, m.Target, true)
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNet(m.Config, m.Loss, m.Params, b.shape, true, tensor.Float64)
	if err != nil {
		t.Fatal(err)
	}
	defer n.close()
	if _, _, err := n.run(b); err != nil {
		t.Fatal(err)
	}
	grads := make([][]float64, len(n.params))
	for i, p := range n.params {
		gv, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		grads[i] = append([]float64(nil), gv.Data().([]float64)...)
	}
	checked, nonzero := 0, 0
	prng := rand.New(rand.NewPCG(3, 4))
	for i, p := range n.params {
		if m.Params[i].Name == "embed" {
			continue
		}
		data := p.Value().Data().([]float64)
		for range min(6, len(data)) {
			j := prng.IntN(len(data))
			orig := data[j]
			data[j] = orig + fdStep
			_, lp, _ := n.run(b)
			data[j] = orig - fdStep
			_, lm, _ := n.run(b)
			data[j] = orig
			fd := (lp - lm) / (2 * fdStep)
			if a := grads[i][j]; math.Abs(a-fd) > fdAbsTol+fdRelTol*math.Max(math.Abs(a), math.Abs(fd)) {
				t.Errorf("%s[%d]: analytic %.10g, finite difference %.10g", m.Params[i].Name, j, a, fd)
			}
			checked++
			if grads[i][j] != 0 {
				nonzero++
			}
		}
	}
	if nonzero < checked/2 {
		t.Errorf("only %d of %d checked gradients are nonzero", nonzero, checked)
	}
}

// TestSegmentTrainingDeterministicAndRecorded: Train with MaxSegmentNodes gives the same
// weights for the same seed, records the option in the checkpoint, and refuses to resume
// with another value; invalid values name the option.
func TestSegmentTrainingDeterministicAndRecorded(t *testing.T) {
	rows := bigRows(t)
	run := func(dir string) ([]byte, *TrainResult) {
		o := smallOptions(dir)
		o.Epochs, o.MaxSegmentNodes, o.Loss = 2, segTestNodes, LossListMLE
		r, err := trainSources(context.Background(), sliceSource(rows), nil, o)
		if err != nil {
			t.Fatal(err)
		}
		return r.Model.Params.Bytes(), r
	}
	dir := filepath.Join(t.TempDir(), "seg")
	a, r := run(dir)
	b, _ := run("")
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different weights with segment training")
	}
	if r.Checkpoint.Config.MaxSegmentNodes != segTestNodes {
		t.Errorf("checkpoint records max_segment_nodes %d", r.Checkpoint.Config.MaxSegmentNodes)
	}
	o := smallOptions(dir)
	o.Resume, o.MaxSegmentNodes, o.Model = true, 64, Config{}
	if _, err := CheckResume(dir, o); err == nil || !strings.Contains(err.Error(), "max_segment_nodes is 64") {
		t.Errorf("resume with another max_segment_nodes: %v", err)
	}
	for _, v := range []int{-1, 1, MinSegmentNodes - 1, MaxSegmentNodes + 1} {
		o := smallOptions("")
		o.MaxSegmentNodes = v
		err := o.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "max_segment_nodes" {
			t.Errorf("max_segment_nodes %d: %v", v, err)
		}
	}
}

// bigGraphRow chains copies of row r's graph into one graph of copies·n nodes (an edge
// joins each copy's last node to the next copy's first): a layout-sized program.
func bigGraphRow(r dataset.Row, copies int) dataset.Row {
	g := r.Graph
	n := g.Nodes()
	var out features.Graph
	out.KernelFeats = slices.Clone(g.KernelFeats)
	for c := range copies {
		off := int32(c * n)
		out.Opcodes = append(out.Opcodes, g.Opcodes...)
		out.NodeFeats = append(out.NodeFeats, g.NodeFeats...)
		for j := range g.EdgeSrc {
			out.EdgeSrc = append(out.EdgeSrc, g.EdgeSrc[j]+off)
			out.EdgeDst = append(out.EdgeDst, g.EdgeDst[j]+off)
		}
		if c > 0 {
			out.EdgeSrc = append(out.EdgeSrc, off)
			out.EdgeDst = append(out.EdgeDst, off-1)
		}
	}
	r.Graph = out
	r.KernelKey += "-big"
	return r
}

// TestSegmentTrainingBoundsLargeGraphs: kernels of 4800 nodes train with segments of 256:
// every net built (training, and the detached statistics) holds at most a ladder step
// above BatchKernels·S nodes, never the kernels' size, and the loss is finite.
func TestSegmentTrainingBoundsLargeGraphs(t *testing.T) {
	const S, copies, batchKernels = 256, 200, 2
	base := rowsWithConfigs(cachedRows(t, "mlp_768x3_b8", dataset.TaskTile, 16), 8, 2)
	var rows []dataset.Row
	for _, r := range base {
		rows = append(rows, bigGraphRow(r, copies))
	}
	cfg := DefaultConfig()
	cfg.MaxSegmentNodes = S
	m := testModel(t, cfg, dataset.TaskTile, LossListMLE, rows, 1)
	eng := newEngine(m, true, true, defaultNetCache)
	defer eng.close()
	tr := &trainer{opts: TrainOptions{BatchKernels: batchKernels, MaxConfigs: 8}, m: m, adam: nn.NewAdam(m.Params, 1e-3), eng: eng}
	rng := rand.New(rand.NewPCG(1, 1))
	for range 3 {
		var items []item
		for _, k := range itemsOf(t, m, rows) {
			it, _ := tr.sample(k.k, rng)
			items = append(items, it)
		}
		l, err := tr.step(items)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(l) || math.IsInf(l, 0) {
			t.Fatalf("loss %g", l)
		}
	}
	defer tr.val.close()
	nodes := rows[0].Graph.Nodes()
	for _, e := range []*engine{eng, tr.val} {
		for s := range e.nets {
			if s.N > ladder(batchKernels*S) || s.M > ladder(S) {
				t.Errorf("a net of shape %v for kernels of %d nodes: not bounded by the segment size %d", s, nodes, S)
			}
		}
		if len(e.nets) == 0 {
			t.Error("no net was built")
		}
	}
}
