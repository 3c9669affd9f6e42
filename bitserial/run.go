package bitserial

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tpucost/tpucost/bitserial/mnist"
	"github.com/tpucost/tpucost/internal/atomicfile"
)

// Config is one experiment: data, network, training, pool, the activation precisions to
// evaluate and how to time them.
type Config struct {
	MNISTDir string // the four IDX files (mnist.DefaultDir())
	Arch     Arch
	Train    TrainConfig
	Pool     PoolConfig
	Bits     []int // activation precisions to evaluate, each 1..8
	// TestImages of the test set are classified (0: all 10,000); CalibImages training
	// images calibrate the activation clips; TimeImages test images are timed per kernel,
	// Repeats times after one warm-up pass.
	TestImages, CalibImages, TimeImages, Repeats int
	// Planner, if not nil, picks the kernel variants the network is timed and evaluated
	// with (lutcpu.Planner: each layer's fastest on this CPU); nil runs the plain kernels
	// (ConvInt8, ConvLUT).
	Planner Planner
}

// DefaultConfig is the documented experiment: P = 64, z = 8, b = 1..8, two epochs over
// 30,000 training images (about a minute on one core), the 10,000 test images.
func DefaultConfig() Config {
	return Config{
		MNISTDir:   mnist.DefaultDir(),
		Arch:       DefaultArch,
		Train:      TrainConfig{Images: 30000, Epochs: 2, Batch: 32, LR: 1e-3, Seed: 1},
		Pool:       PoolConfig{P: 64, Z: 8, KMeansIters: 50, TuneSteps: 2000, TuneLR: 1e-3, Batch: 32, Seed: 1},
		Bits:       []int{1, 2, 3, 4, 5, 6, 7, 8},
		TestImages: 0, CalibImages: 500, TimeImages: 300, Repeats: 7,
	}
}

// Check refuses a configuration that cannot run, in one line.
func (c Config) Check() error {
	if err := c.Arch.Check(); err != nil {
		return err
	}
	if err := CheckPool(c.Arch, c.Pool.P, c.Pool.Z); err != nil {
		return err
	}
	if len(c.Bits) == 0 {
		return fmt.Errorf("bitserial: no activation precisions: want some of 1..8")
	}
	for _, b := range c.Bits {
		if err := CheckBits(b); err != nil {
			return err
		}
	}
	if c.TimeImages < 1 || c.Repeats < 1 || c.CalibImages < 1 {
		return fmt.Errorf("bitserial: %d timed images, %d repeats, %d calibration images: want at least 1 each", c.TimeImages, c.Repeats, c.CalibImages)
	}
	return nil
}

// Accuracies are test accuracies (fractions) of the three networks at 8 bits.
type Accuracies struct {
	Float32 float64 `json:"float32"`
	Int8    float64 `json:"int8"`
	Pool    float64 `json:"pool"`
}

// Timing is a kernel's time per image: the median over repeats of a pass over the timed
// images, and the spread (max − min) / median of those passes.
type Timing struct {
	NsPerImage float64 `json:"ns_per_image"`
	SpreadPct  float64 `json:"spread_pct"`
}

// BitResult is the pool network at b-bit activations, run by the bit-serial LUT kernel.
type BitResult struct {
	B              int     `json:"b"`
	Accuracy       float64 `json:"accuracy"`
	NsPerImage     float64 `json:"ns_per_image"`
	SpreadPct      float64 `json:"spread_pct"`
	SpeedupVsInt8  float64 `json:"speedup_vs_int8"`
	SpeedupVsPool8 float64 `json:"speedup_vs_pool8"`
}

// Report is an experiment's result: accuracies, storage, kernel times and, per
// activation precision b, the pool network's accuracy and the LUT kernel's time and
// speedups against the 8-bit integer kernel and the 8-bit weight-pool kernel (all three
// time the whole network, whose first layer is the same 8-bit kernel in each).
type Report struct {
	P                 int        `json:"p"`
	Z                 int        `json:"z"`
	TestImages        int        `json:"test_images"`
	Accuracy          Accuracies `json:"accuracy"`
	CompressionVsInt8 float64    `json:"compression_vs_int8"`
	StorageInt8       Storage    `json:"storage_int8"`
	StoragePool       Storage    `json:"storage_pool"`
	Int8              Timing     `json:"int8_kernel"`
	Pool8             Timing     `json:"pool8_kernel"`
	TableBuildNs      float64    `json:"table_build_ns"`
	// Kernels is "planned" (the Planner's variants, KernelVariants) or "plain".
	Kernels        string          `json:"kernel_plan"`
	KernelVariants []VariantChoice `json:"kernel_variants"`
	Bits           []BitResult     `json:"bits"`
	KMeansMSE      float64         `json:"kmeans_mse"`
	TunedMSE       float64         `json:"tuned_mse"`
	TrainS         float64         `json:"train_s"`
}

// Run trains, compresses, evaluates and times per cfg. progress, if not nil, gets a line
// per stage. ctx is checked between stages.
func Run(ctx context.Context, cfg Config, progress func(string)) (*Report, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	say := func(f string, a ...any) {
		if progress != nil {
			progress(fmt.Sprintf(f, a...))
		}
	}
	train, test, err := mnist.Load(cfg.MNISTDir)
	if err != nil {
		return nil, err
	}
	test = test.Head(cfg.TestImages)
	calib := train.Head(cfg.CalibImages)
	start := time.Now()
	m, err := Train(cfg.Arch, train, cfg.Train, progress)
	if err != nil {
		return nil, err
	}
	rep := &Report{P: cfg.Pool.P, Z: cfg.Pool.Z, TestImages: test.N, TrainS: time.Since(start).Seconds()}
	if rep.Accuracy.Float32, err = FloatAccuracy(m, test); err != nil {
		return nil, err
	}
	q := QuantizeInt8(m, calib)
	rep.Accuracy.Int8 = Accuracy(q, test, KernelInt8, 8)
	say("accuracy: float32 %.4f, int8 %.4f", rep.Accuracy.Float32, rep.Accuracy.Int8)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pr, err := BuildPool(m, cfg.Pool, train, calib, progress)
	if err != nil {
		return nil, err
	}
	pn := pr.Net
	rep.KMeansMSE, rep.TunedMSE = pr.KMeansMSE, pr.TunedMSE
	rep.Accuracy.Pool = Accuracy(pn, test, KernelPool8, 8)
	rep.StorageInt8, rep.StoragePool = q.Storage(), pn.Storage()
	rep.CompressionVsInt8 = float64(rep.StorageInt8.Total) / float64(rep.StoragePool.Total)
	say("pool: accuracy %.4f, %d bytes vs %d (%.2fx)", rep.Accuracy.Pool, rep.StoragePool.Total, rep.StorageInt8.Total, rep.CompressionVsInt8)

	var plan *Plan
	rep.Kernels, rep.KernelVariants = "plain", []VariantChoice{}
	if cfg.Planner != nil {
		say("picking each layer's kernel variants on this CPU")
		if plan, err = cfg.Planner.Plan(ctx, pn, cfg.Bits); err != nil {
			return nil, err
		}
		if err := plan.Check(pn.Layers); err != nil {
			return nil, err
		}
		rep.Kernels, rep.KernelVariants = "planned", append(rep.KernelVariants, plan.Choices...)
		for _, c := range plan.Choices {
			say("%s layer %d b=%d: %s (%.0f ns, plain %.0f ns)", c.Kernel, c.Layer, c.B, c.Variant, c.MedianNs, c.PlainNs)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timed := test.Head(cfg.TimeImages)
	say("timing %d images, %d repeats, kernels interleaved", timed.N, cfg.Repeats)
	runs := []timedRun{{n: q, k: KernelInt8, b: 8}, {n: pn, k: KernelPool8, b: 8}}
	for _, b := range cfg.Bits {
		runs = append(runs, timedRun{n: pn, k: KernelLUT, b: b})
	}
	ts, err := timeKernels(ctx, runs, plan, timed, cfg.Repeats)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Int8, rep.Pool8 = ts[0], ts[1]
	rep.TableBuildNs = timeTable(pn, cfg.Repeats)
	lutRunner, err := NewPlannedRunner(pn, plan)
	if err != nil {
		return nil, err
	}
	for i, b := range cfg.Bits {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := ts[2+i]
		br := BitResult{B: b, Accuracy: lutRunner.Accuracy(test, KernelLUT, b), NsPerImage: t.NsPerImage, SpreadPct: t.SpreadPct,
			SpeedupVsInt8: rep.Int8.NsPerImage / t.NsPerImage, SpeedupVsPool8: rep.Pool8.NsPerImage / t.NsPerImage}
		rep.Bits = append(rep.Bits, br)
		say("b=%d: accuracy %.4f, %.0f ns/image, %.2fx vs int8", b, br.Accuracy, br.NsPerImage, br.SpeedupVsInt8)
	}
	return rep, nil
}

// timedRun is one kernel configuration to time.
type timedRun struct {
	n *Net
	k Kernel
	b int
}

// timeKernels times each run over s with plan's variants: one warm-up pass of each, then
// repeats rounds in which every run makes one pass in turn (so that a burst of other load
// on the machine falls on all of them alike); per run the median pass and the spread of
// its passes, per image.
func timeKernels(ctx context.Context, runs []timedRun, plan *Plan, s *mnist.Set, repeats int) ([]Timing, error) {
	pass := func(r *Runner, tr timedRun) float64 {
		t0 := time.Now()
		for i := 0; i < s.N; i++ {
			r.Predict(s.Image(i), tr.k, tr.b)
		}
		return float64(time.Since(t0).Nanoseconds()) / float64(s.N)
	}
	runners := make([]*Runner, len(runs))
	ts := make([][]float64, len(runs))
	for i, tr := range runs {
		r, err := NewPlannedRunner(tr.n, plan)
		if err != nil {
			return nil, err
		}
		runners[i] = r
		pass(r, tr)
	}
	for rep := 0; rep < repeats && ctx.Err() == nil; rep++ {
		for i, tr := range runs {
			ts[i] = append(ts[i], pass(runners[i], tr))
		}
	}
	out := make([]Timing, len(runs))
	for i := range out {
		if len(ts[i]) > 0 {
			out[i] = summarize(ts[i])
		}
	}
	return out, nil
}

// timeTable is the median time of one table build of n's pool.
func timeTable(n *Net, repeats int) float64 {
	const builds = 200
	var t LUT
	BuildLUT(&t, n.Pool, n.Z)
	ts := make([]float64, repeats)
	for i := range ts {
		t0 := time.Now()
		for j := 0; j < builds; j++ {
			BuildLUT(&t, n.Pool, n.Z)
		}
		ts[i] = float64(time.Since(t0).Nanoseconds()) / builds
	}
	return summarize(ts).NsPerImage
}

// summarize is the median and (max − min)/median of ts, in percent.
func summarize(ts []float64) Timing {
	s := slices.Clone(ts)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Timing{NsPerImage: med, SpreadPct: 100 * (s[len(s)-1] - s[0]) / med}
}

// WriteText writes the report as a Markdown table.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("# Bit-serial weight pools on MNIST (P=%d, z=%d)\n\n", r.P, r.Z)
	ew.printf("Accuracy on %d test images: float32 %.2f%%, int8 %.2f%%, pool (8-bit activations) %.2f%%.\n\n",
		r.TestImages, 100*r.Accuracy.Float32, 100*r.Accuracy.Int8, 100*r.Accuracy.Pool)
	ew.printf("Storage: int8 %d bytes, pool %d bytes (first layer %d, indices %d, pool %d, scales %d, bias %d): %.2fx smaller.\n\n",
		r.StorageInt8.Total, r.StoragePool.Total, r.StoragePool.Weights, r.StoragePool.Indices, r.StoragePool.Pool, r.StoragePool.Scales, r.StoragePool.Bias, r.CompressionVsInt8)
	ew.printf("Time per image (median of the repeats; spread = (max − min)/median): int8 kernel %.0f ns (spread %.0f%%), 8-bit pool kernel %.0f ns (spread %.0f%%); one table build %.0f ns (in every LUT time).\n\n",
		r.Int8.NsPerImage, r.Int8.SpreadPct, r.Pool8.NsPerImage, r.Pool8.SpreadPct, r.TableBuildNs)
	ew.printf("| b | accuracy | LUT ns/image | spread | speedup vs int8 | speedup vs pool8 |\n|---|---|---|---|---|---|\n")
	for _, b := range r.Bits {
		ew.printf("| %d | %.2f%% | %.0f | %.0f%% | %.2fx | %.2fx |\n", b.B, 100*b.Accuracy, b.NsPerImage, b.SpreadPct, b.SpeedupVsInt8, b.SpeedupVsPool8)
	}
	if len(r.KernelVariants) == 0 {
		ew.printf("\nKernels: plain (int8: block=1;unroll=1; LUT: order=bit-group;block=1;unroll=1).\n")
		return ew.err
	}
	ew.printf("\nKernels: each layer's fastest variant, measured on this CPU (ns per layer call; the LUT's include a table build):\n\n")
	ew.printf("| kernel | layer | b | variant | ns | plain variant ns | variants measured |\n|---|---|---|---|---|---|---|\n")
	for _, c := range r.KernelVariants {
		ew.printf("| %s | %d | %d | %s | %.0f | %.0f | %d |\n", c.Kernel, c.Layer, c.B, c.Variant, c.MedianNs, c.PlainNs, c.Candidates)
	}
	return ew.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(f string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, f, a...)
	}
}

// WriteFiles writes dir/report.md, dir/report.json and the plots (PlotFiles), each
// atomically (creating dir).
func (r *Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bitserial: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, "report.md"), r.WriteText); err != nil {
		return fmt.Errorf("bitserial: %w", err)
	}
	err := atomicfile.Write(filepath.Join(dir, "report.json"), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
	if err != nil {
		return fmt.Errorf("bitserial: %w", err)
	}
	return r.writePlots(dir)
}
