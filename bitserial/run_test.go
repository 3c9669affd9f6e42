package bitserial

import (
	"context"
	"encoding/json"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/bitserial/mnist"
)

// minCompression is the storage ratio the pool must reach on DefaultArch at P=64, z=8:
// the 7× (indices are 6 bits per 8 weights; the pool, first layer, scales and
// bias are overhead).
const minCompression = 7

// tinyConfig trains on a few hundred images for one epoch and times a handful: a smoke
// test of relative properties, not paper accuracy.
func tinyConfig(t *testing.T) Config {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mnist.Module).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("module %s not in the module cache (go mod download %s): %v", mnist.Module, mnist.Module, err)
	}
	c := DefaultConfig()
	c.MNISTDir = filepath.Join(dir, "data")
	c.Train.Images, c.Train.Epochs = 640, 1
	c.Pool.KMeansIters, c.Pool.TuneSteps = 10, 10
	c.Bits = []int{1, 8}
	c.TestImages, c.CalibImages, c.TimeImages, c.Repeats = 300, 50, 10, 2
	return c
}

// fixedPlanner plans every layer's int8 kernel as block 2, unroll 4 and every pooled
// layer's LUT kernel as the channel order, block 2, unroll 2, at every b.
type fixedPlanner struct{ calls *int }

func (f fixedPlanner) Plan(_ context.Context, n *Net, bits []int) (*Plan, error) {
	*f.calls++
	p := &Plan{}
	for i := range n.Layers {
		p.Int8 = append(p.Int8, Int8Variant{Block: 2, Unroll: 4})
		p.Choices = append(p.Choices, VariantChoice{Kernel: "int8", Layer: i + 1, B: 8, Variant: p.Int8[i].String()})
	}
	for _, b := range bits {
		p.LUT[b] = []LUTVariant{{}, {Order: OrderChannel, Block: 2, Unroll: 2}, {Order: OrderChannel, Block: 2, Unroll: 2}, {Order: OrderChannel, Block: 2, Unroll: 2}}
	}
	return p, nil
}

// TestRunTiny: a tiny end-to-end run with a Planner (its variants time and classify the
// network; the LUT at b = 8 still classifies exactly as the 8-bit pool kernel).
func TestRunTiny(t *testing.T) {
	c := tinyConfig(t)
	calls := 0
	c.Planner = fixedPlanner{&calls}
	rep, err := Run(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || rep.Kernels != "planned" || len(rep.KernelVariants) != 4 {
		t.Errorf("planner called %d times, kernels %q, %d variant choices: want 1, planned, 4", calls, rep.Kernels, len(rep.KernelVariants))
	}
	if rep.CompressionVsInt8 < minCompression {
		t.Errorf("compression %.2fx, want at least %dx", rep.CompressionVsInt8, minCompression)
	}
	// The LUT kernel at 8 bits is bit-exact with the 8-bit pool kernel, so it classifies
	// exactly the same images.
	if b8 := rep.Bits[1]; b8.B != 8 || b8.Accuracy != rep.Accuracy.Pool {
		t.Errorf("b=8 LUT accuracy %v, pool kernel %v: want equal", b8.Accuracy, rep.Accuracy.Pool)
	}
	if rep.Bits[0].Accuracy > rep.Bits[1].Accuracy {
		t.Errorf("1-bit activations (%.3f) beat 8-bit ones (%.3f)", rep.Bits[0].Accuracy, rep.Bits[1].Accuracy)
	}
	if rep.Accuracy.Float32 < 0.3 {
		t.Errorf("float32 accuracy %.3f after a tiny training: is it learning?", rep.Accuracy.Float32)
	}
	dir := t.TempDir()
	if err := rep.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	var js map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"accuracy", "compression_vs_int8", "bits", "kernel_plan", "kernel_variants"} {
		if _, ok := js[k]; !ok {
			t.Errorf("report.json has no %s", k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}
	// The plots are PNG images of a readable size (the accuracy, time, speedup
	// and storage plots).
	for _, name := range PlotFiles() {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < minPlotPixels || cfg.Height < minPlotPixels {
			t.Errorf("%s: %dx%d, %v: want a PNG of at least %d pixels a side", name, cfg.Width, cfg.Height, err, minPlotPixels)
		}
	}
}

// minPlotPixels: the plots are drawn at 4.5 to 7 inches and gonum renders PNGs at 96 dpi,
// so each side is over 400 pixels; 300 leaves room for a change of size.
const minPlotPixels = 300

// TestPoolDeterministic: the same seed gives the same pool and assignment.
func TestPoolDeterministic(t *testing.T) {
	c := tinyConfig(t)
	train, _, err := mnist.Load(c.MNISTDir)
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(DefaultArch, 1)
	cfg := PoolConfig{P: 16, Z: 8, KMeansIters: 10, TuneSteps: 3, TuneLR: 1e-3, Batch: 16, Seed: 4}
	small := train.Head(64)
	a, err := BuildPool(m, cfg, small, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildPool(m, cfg, small, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Net.Pool, b.Net.Pool) {
		t.Error("same seed, different pools")
	}
	for i := range a.Net.Idx {
		if !slices.Equal(a.Net.Idx[i], b.Net.Idx[i]) {
			t.Errorf("layer %d: same seed, different assignments", i+1)
		}
	}
}
