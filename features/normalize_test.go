package features

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// normTol bounds the error of float32 normalized values computed from float64 statistics.
const normTol = 1e-5

func syntheticGraph(nodes int, base float32) Graph {
	g := Graph{Opcodes: make([]int32, nodes), NodeFeats: make([]float32, nodes*NodeWidth), KernelFeats: make([]float32, KernelWidth)}
	for i := range g.NodeFeats {
		g.NodeFeats[i] = base + float32(i%NodeWidth) + float32(i/NodeWidth)
	}
	for i := range g.KernelFeats {
		g.KernelFeats[i] = base * float32(i)
	}
	return g
}

func TestFitApplyStandardizes(t *testing.T) {
	graphs := []Graph{syntheticGraph(3, 1), syntheticGraph(5, 2), syntheticGraph(1, 7)}
	configs := [][]float32{make([]float32, ConfigWidth), make([]float32, ConfigWidth)}
	for j := range configs[1] {
		configs[1][j] = float32(j)
	}
	s, err := Fit(func(add func(*Graph, [][]float32)) error {
		for i := range graphs {
			add(&graphs[i], configs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.Node.Count != 9 || s.Kernel.Count != 3 || s.Config.Count != 6 {
		t.Fatalf("counts node %d kernel %d config %d", s.Node.Count, s.Kernel.Count, s.Config.Count)
	}
	// Normalized node features have mean 0 and standard deviation 1 per column (or 0 for
	// constant columns).
	var all []float32
	for i := range graphs {
		all = append(all, s.ApplyGraph(&graphs[i]).NodeFeats...)
	}
	for j := 0; j < NodeWidth; j++ {
		var sum, sq float64
		n := 0
		for i := j; i < len(all); i += NodeWidth {
			sum += float64(all[i])
			sq += float64(all[i]) * float64(all[i])
			n++
		}
		mean := sum / float64(n)
		std := math.Sqrt(sq/float64(n) - mean*mean)
		if math.Abs(mean) > normTol || math.Abs(std-1) > normTol {
			t.Fatalf("node column %d: mean %g std %g after normalization", j, mean, std)
		}
	}
	// Kernel column 0 is constant (0): centred, not scaled.
	if s.Kernel.Std[0] != 0 || s.ApplyGraph(&graphs[0]).KernelFeats[0] != 0 {
		t.Errorf("constant column: std %g", s.Kernel.Std[0])
	}
	// Config column 3 takes values 0 and 3: mean 1.5, std 1.5.
	if math.Abs(s.Config.Mean[3]-1.5) > normTol || math.Abs(s.Config.Std[3]-1.5) > normTol {
		t.Errorf("config column 3: mean %g std %g", s.Config.Mean[3], s.Config.Std[3])
	}
	if got := s.ApplyConfig(configs[1])[3]; math.Abs(float64(got)-1) > normTol {
		t.Errorf("normalized config value %g, want 1", got)
	}
	// The input is not modified.
	if graphs[0].NodeFeats[1] != 2 {
		t.Error("ApplyGraph modified its input")
	}
}

func TestStatsJSONRoundTrip(t *testing.T) {
	g := syntheticGraph(4, 3)
	f := NewFitter()
	f.AddGraph(&g)
	f.AddConfig(make([]float32, ConfigWidth))
	s, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Error("statistics changed through JSON")
	}
	if err := back.Validate(); err != nil {
		t.Error(err)
	}
	back.SchemaVersion = SchemaVersion + 1
	if err := back.Validate(); err == nil || !strings.Contains(err.Error(), "schema version") {
		t.Errorf("foreign schema accepted: %v", err)
	}
}

func TestFitterRejectsMalformedInput(t *testing.T) {
	f := NewFitter()
	f.AddConfig(make([]float32, ConfigWidth-1))
	if _, err := f.Stats(); err == nil {
		t.Error("short config vector accepted")
	}
	f = NewFitter()
	g := syntheticGraph(2, 1)
	g.KernelFeats = g.KernelFeats[:3]
	f.AddGraph(&g)
	if _, err := f.Stats(); err == nil {
		t.Error("malformed graph accepted")
	}
}

// TestApplyClampsToFittedRange: a value beyond the range the statistics were fitted on
// reaches the model as the range's end (a kernel with 26 gathered inputs where training
// saw 0-2 is read as 2), and statistics saved without a range clamp nothing.
func TestApplyClampsToFittedRange(t *testing.T) {
	f := NewFitterFor(SchemaVersion, Widths{Node: 1, Kernel: 2, Config: 0})
	for _, k := range [][]float32{{0, -1}, {1, 0}, {2, 1}} {
		f.AddGraph(&Graph{Opcodes: []int32{1}, NodeFeats: []float32{k[0]}, KernelFeats: k})
	}
	s, err := f.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Kernel.Min, []float64{0, -1}) || !reflect.DeepEqual(s.Kernel.Max, []float64{2, 1}) {
		t.Fatalf("kernel range [%v, %v], want [[0 -1], [2 1]]", s.Kernel.Min, s.Kernel.Max)
	}
	if err := s.ValidateFor(SchemaVersion, Widths{Node: 1, Kernel: 2}); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 4)
	s.Kernel.Apply(got, []float32{26, -5, 1, 0.5})
	std := math.Sqrt(2.0 / 3) // of {0, 1, 2} and of {-1, 0, 1}
	want := []float64{(2 - 1) / std, (-1 - 0) / std, 0, 0.5 / std}
	for i := range want {
		if math.Abs(float64(got[i])-want[i]) > normTol {
			t.Errorf("value %d normalized to %g, want %g", i, got[i], want[i])
		}
	}
	old := s.Kernel
	old.Min, old.Max = nil, nil
	old.Apply(got[:2], []float32{26, -5})
	if math.Abs(float64(got[0])-(26-1)/std) > normTol {
		t.Errorf("statistics without a range clamped 26 to %g", float64(got[0])*std+1)
	}
	bad := s
	bad.Kernel.Min = []float64{3, -1}
	if err := bad.ValidateFor(SchemaVersion, Widths{Node: 1, Kernel: 2}); err == nil || !strings.Contains(err.Error(), "range [3, 2]") {
		t.Errorf("inverted range accepted: %v", err)
	}
}
