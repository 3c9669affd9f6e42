package gnn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// TestIgnoreKernel checks Config.IgnoreKernel: a model that ignores a kernel feature
// scores a row the same whatever that feature holds, one that reads it does not, and
// unknown names are refused.
func TestIgnoreKernel(t *testing.T) {
	rows := rowsFor(t, "resnet20_cifar_b64", dataset.TaskFusion, 1, rand.New(rand.NewPCG(1, 1)))
	idx := slices.Index(features.CurrentSchema().Kernel, "mxu_pad_log")
	if idx < 0 {
		t.Fatal("no kernel feature mxu_pad_log")
	}
	changed := make([]dataset.Row, len(rows))
	for i, r := range rows {
		changed[i] = r
		changed[i].Graph.KernelFeats = slices.Clone(r.Graph.KernelFeats)
		changed[i].Graph.KernelFeats[idx] += 3
	}
	predict := func(m *Model, rs []dataset.Row) [][]float64 {
		p, err := NewRowPredictor(m, PredictorOptions{BatchKernels: 16})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ptrs := make([]*dataset.Row, len(rs))
		for i := range rs {
			ptrs[i] = &rs[i]
		}
		out, err := p.PredictRows(ptrs)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, ignore := range []bool{true, false} {
		cfg := DefaultConfig()
		if ignore {
			cfg.IgnoreKernel = []string{"mxu_pad_log"}
		}
		m := testModel(t, cfg, dataset.TaskFusion, LossMSE, rows, 3)
		a, b := predict(m, rows), predict(m, changed)
		same := true
		for i := range a {
			if a[i][0] != b[i][0] {
				same = false
			}
		}
		if same != ignore {
			t.Errorf("ignore %v: predictions unchanged by the feature: %v", ignore, same)
		}
	}
	bad := DefaultConfig()
	bad.IgnoreKernel = []string{"no_such_feature"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "no_such_feature") {
		t.Errorf("unknown ignored feature: got %v, want a refusal naming it", err)
	}
	for _, tc := range []struct {
		task dataset.Task
		want []string
	}{{dataset.TaskTile, []string{"mxu_pad_log"}}, {dataset.TaskFlags, []string{"mxu_pad_log"}}, {dataset.TaskFusion, nil}, {dataset.TaskLayout, nil}} {
		if got := DefaultIgnoreKernel(tc.task, DefaultConfig()); !slices.Equal(got, tc.want) {
			t.Errorf("DefaultIgnoreKernel(%s) = %v, want %v", tc.task, got, tc.want)
		}
	}
}
