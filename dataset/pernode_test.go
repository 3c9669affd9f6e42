package dataset

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/features"
)

// foreignProv is the provenance of an imported dataset with its own feature set and
// per-node configs (as tpucost import tpugraphs writes for the layout collection).
func foreignProv() Provenance {
	names := func(prefix string, n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = prefix + string(rune('a'+i))
		}
		return s
	}
	return Provenance{SchemaVersion: SchemaVersion, Task: TaskLayout, ShardCount: 1,
		FeatureSchema: features.Schema{Version: 1, Node: names("n", 3), Config: names("c", 2)},
		FeatureSet:    FeatureSetTpuGraphs, PerNodeConfigs: true, Source: "tpugraphs",
		Collection: "layout/xla/random", Split: "valid", SourceFiles: 1}
}

func TestPerNodeConfigsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(WriterOptions{Dir: dir, Provenance: foreignProv()})
	if err != nil {
		t.Fatal(err)
	}
	row := Row{Program: "p", Task: TaskLayout, KernelKey: "k", KernelName: "p.npz",
		Graph: features.Graph{Opcodes: []int32{1, 2}, NodeFeats: make([]float32, 6), EdgeSrc: []int32{1}, EdgeDst: []int32{0},
			KernelFeats: []float32{}},
		Configs: []string{"a", "b"}, ConfigFeats: [][]float32{{1, 2, 3, 4}, {5, 6, 7, 8}},
		RuntimesNs: []float64{10, 20}, AnalyticalNs: []float64{math.NaN(), math.NaN()}, ConfigNodes: []int32{0, 1}}
	bad := row.Clone()
	bad.ConfigFeats = [][]float32{{1, 2}, {3, 4}} // one node's worth for two nodes
	if err := w.WritePart(0, 0, []Row{bad}, nil); err == nil || !strings.Contains(err.Error(), "config 0 has 2 features, want 4") {
		t.Errorf("short per-node config: %v", err)
	}
	if err := w.WritePart(0, 0, []Row{row}, []Occurrence{{Unit: 0, Program: "p", KernelKey: "k", Count: 1}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Provenance; p.FeatureSet != FeatureSetTpuGraphs || !p.PerNodeConfigs || p.Collection != "layout/xla/random" {
		t.Errorf("provenance %+v", p)
	}
	if n, k, c := d.Provenance.Widths(); n != 3 || k != 0 || c != 2 {
		t.Errorf("widths %d %d %d, want 3 0 2", n, k, c)
	}
	var got []Row
	if err := d.Rows(ReadOptions{}, func(r *Row) error { got = append(got, r.Clone()); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0].ConfigNodes, row.ConfigNodes) || !reflect.DeepEqual(got[0].ConfigFeats, row.ConfigFeats) ||
		!math.IsNaN(got[0].AnalyticalNs[1]) {
		t.Errorf("read back %+v", got)
	}
}

func TestConfigNodesNeedPerNodeDataset(t *testing.T) {
	w, err := NewWriter(WriterOptions{Dir: t.TempDir(), Provenance: testProv(TaskTile, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := rowGen{task: TaskTile, maxNodes: 3, configs: 2}.row("p", 0, "k")
	r.Graph.Opcodes, r.Graph.NodeFeats, r.Graph.EdgeSrc, r.Graph.EdgeDst = []int32{1}, make([]float32, features.NodeWidth), nil, nil
	r.ConfigNodes = []int32{0}
	if err := w.WritePart(0, 0, []Row{r}, nil); err == nil {
		t.Error("a row with configurable nodes was written to a dataset without per-node configs")
	}
}

// TestRuntimeNormalizersRoundTrip: a dataset recording runtime normalizers (TpuGraphs'
// tile collection) keeps them per config in both formats, a row must carry them exactly
// when the dataset records them, and they must be positive; TargetTimes divides by them.
func TestRuntimeNormalizersRoundTrip(t *testing.T) {
	for _, format := range []Format{FormatArrow, FormatParquet} {
		p := foreignProv()
		p.Task, p.PerNodeConfigs, p.RuntimeNormalizers, p.Collection = TaskTile, false, true, "tile/xla"
		p.FeatureSchema.Config = p.FeatureSchema.Config[:2]
		dir := t.TempDir()
		w, err := NewWriter(WriterOptions{Dir: dir, Format: format, Provenance: p})
		if err != nil {
			t.Fatal(err)
		}
		row := Row{Program: "p", Task: TaskTile, KernelKey: "k", KernelName: "p.npz",
			Graph:   features.Graph{Opcodes: []int32{1}, NodeFeats: make([]float32, 3), KernelFeats: []float32{}},
			Configs: []string{"a", "b"}, ConfigFeats: [][]float32{{1, 2}, {3, 4}},
			RuntimesNs: []float64{10, 30}, AnalyticalNs: []float64{math.NaN(), math.NaN()}, Normalizers: []float64{10, 20}}
		for _, c := range []struct {
			norms []float64
			want  string
		}{{nil, "runtime normalizers"}, {[]float64{10}, "1 runtime normalizers for 2 configs"}, {[]float64{10, 0}, "runtime normalizer 0"}} {
			bad := row.Clone()
			bad.Normalizers = c.norms
			if err := w.WritePart(0, 0, []Row{bad}, nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: normalizers %v: %v, want %q", format, c.norms, err, c.want)
			}
		}
		if err := w.WritePart(0, 0, []Row{row}, []Occurrence{{Unit: 0, Program: "p", KernelKey: "k", Count: 1}}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []Row
		if err := d.Rows(ReadOptions{}, func(r *Row) error { got = append(got, r.Clone()); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0].Normalizers, row.Normalizers) || !reflect.DeepEqual(got[0].TargetTimes(), []float64{1, 1.5}) {
			t.Errorf("%s: read back %+v", format, got)
		}
	}
	// Without normalizers, the target times are the runtimes.
	r := Row{RuntimesNs: []float64{5, 6}}
	if !reflect.DeepEqual(r.TargetTimes(), r.RuntimesNs) {
		t.Errorf("target times %v", r.TargetTimes())
	}
}
