package gnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/nn"
)

// peakFlops is this machine's float32 peak: 2 cores × ~135 GFLOP/s (AVX-512, 2 FMA units
// × 16 lanes × 2 flops × ~2.1 GHz).
const peakFlops = 2 * 135e9

// benchModels are the zoo models whose kernels the benchmarks use (tile task, up to 32
// configurations per kernel): inference and training graphs of several families.
var benchModels = []string{"resnet18_b1", "unet_d4_c64_r256_b1", "mobilenet_v1_075_192_b8", "distilgpt2_s256_b4",
	"transformer_small_s64_b32", "mlp_1000x4_b64_train", "lstm_cls_h300_t32_b8", "resnet18_b32_train"}

func benchRows(b *testing.B) []dataset.Row {
	b.Helper()
	var rows []dataset.Row
	for _, m := range benchModels {
		rows = append(rows, cachedRows(b, m, dataset.TaskTile, 32)...)
	}
	return rows
}

// batchFlops is the useful forward FLOPs of a batch's items (see Model.FlopsPerKernel).
func batchFlops(m *Model, items []item) float64 {
	var f float64
	for _, it := range items {
		f += m.FlopsPerKernel(it.k.nodes()) + float64(len(it.cfgs))*m.FlopsPerConfig()
	}
	return f
}

// backendName is the name segment of the training benchmarks saying which BLAS backend
// the build runs on (backend=openblas or backend=go).
const backendName = "backend=" + nn.BLASBackend

// BenchmarkTrainStep measures training throughput (forward, backward, Adam) on batches of
// 32 zoo kernels × up to 32 configurations, with batches padded to cached bucket shapes
// and with a graph built for every batch's exact shape. A training step is counted as 3×
// the forward FLOPs.
func BenchmarkTrainStep(b *testing.B) {
	rows := benchRows(b)
	for _, loss := range []Loss{LossRankHinge, LossMSE} {
		for _, bucket := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/%s/bucket=%t", backendName, loss, bucket), func(b *testing.B) {
				m := testModel(b, DefaultConfig(), dataset.TaskTile, loss, rows, 1)
				eng := newEngine(m, true, bucket, defaultNetCache)
				defer eng.close()
				tr := &trainer{opts: TrainOptions{BatchKernels: 32, MaxConfigs: 32, NoBucketing: !bucket}, m: m, adam: nn.NewAdam(m.Params, 1e-3), eng: eng}
				var ks []*kernel
				for i := range rows {
					k, err := m.prepare(&rows[i])
					if err != nil {
						b.Fatal(err)
					}
					if k.configs() >= 2 || !loss.Rank() {
						ks = append(ks, k)
					}
				}
				rng := rand.New(rand.NewPCG(1, 2))
				rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
				batches := make([][]item, 0)
				for i := 0; i+32 <= len(ks); i += 32 {
					var items []item
					for _, k := range ks[i : i+32] {
						it, _ := tr.sample(k, rng)
						items = append(items, it)
					}
					batches = append(batches, items)
				}
				// Warm up: build the nets of every bucket shape once.
				for _, items := range batches {
					if _, err := tr.step(items); err != nil {
						b.Fatal(err)
					}
				}
				builds := eng.builds
				var kernels, samples int
				var flops float64
				b.ResetTimer()
				start, cpu0 := time.Now(), cpuSeconds()
				for i := 0; i < b.N; i++ {
					items := batches[i%len(batches)]
					if _, err := tr.step(items); err != nil {
						b.Fatal(err)
					}
					kernels += len(items)
					for _, it := range items {
						samples += len(it.cfgs)
					}
					flops += 3 * batchFlops(m, items)
				}
				sec := time.Since(start).Seconds()
				b.ReportMetric(float64(kernels)/(cpuSeconds()-cpu0), "kernels/cpu-s")
				b.ReportMetric(float64(kernels)/sec, "kernels/s")
				b.ReportMetric(float64(samples)/sec, "samples/s")
				b.ReportMetric(flops/sec/1e9, "GFLOP/s")
				b.ReportMetric(100*flops/sec/peakFlops, "%peak")
				b.ReportMetric(float64(eng.builds-builds)/float64(b.N), "builds/op")
			})
		}
	}
}

// BenchmarkPredict measures inference throughput: Predictor.Score on every tile option
// of the benchmark models' kernels (the tuner's use), in batches of 64 kernels.
func BenchmarkPredict(b *testing.B) {
	rows := benchRows(b)
	chip := testChip(b)
	var reqs []ScoreRequest
	for _, name := range benchModels {
		prog := compileZoo(b, name)
		seen := map[string]bool{}
		for _, k := range prog.Kernels {
			if seen[k.Key] {
				continue
			}
			seen[k.Key] = true
			reqs = append(reqs, ScoreRequest{Kernel: k, Choices: k.Info.Options(k.Key, chip.Target, k.Choice.Config.Flags)})
		}
	}
	for _, bucket := range []bool{true, false} {
		b.Run(fmt.Sprintf("bucket=%t", bucket), func(b *testing.B) {
			m := testModel(b, DefaultConfig(), dataset.TaskTile, LossRankHinge, rows, 1)
			p, err := NewPredictor(m, chip.Target, PredictorOptions{NoBucketing: !bucket})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			var preds int
			var flops float64
			for _, r := range reqs {
				preds += len(r.Choices)
				flops += m.FlopsPerKernel(len(r.Kernel.Comp.Instructions)) + float64(len(r.Choices))*m.FlopsPerConfig()
			}
			if _, _, err := p.ScoreKernels(reqs); err != nil { // warm up the bucket nets
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if _, _, err := p.ScoreKernels(reqs); err != nil {
					b.Fatal(err)
				}
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N*preds)/sec, "predictions/s")
			b.ReportMetric(float64(b.N*len(reqs))/sec, "kernels/s")
			b.ReportMetric(float64(b.N)*flops/sec/1e9, "GFLOP/s")
			b.ReportMetric(100*float64(b.N)*flops/sec/peakFlops, "%peak")
		})
	}
}

// cycleSource streams n rows cycled from a pool, each with a distinct kernel key: a
// large dataset that never exists in memory at once.
type cycleSource struct {
	pool []dataset.Row
	n    int
}

func (c cycleSource) Rows(fn func(*dataset.Row) error) error {
	for i := 0; i < c.n; i++ {
		r := c.pool[i%len(c.pool)]
		r.KernelKey = fmt.Sprintf("%s/%d", r.KernelKey, i)
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkTrainEpoch trains one epoch (plus the normalization pass and validation on
// 10k samples) on streamed datasets of 100k and one million (kernel, config) samples and
// reports the peak Go heap in use and the process's peak resident set: memory is bounded
// by the shuffle buffer and the cached nets, not by the dataset (both sizes peak alike).
// Run it alone, once: go test -run '^$' -bench TrainEpoch -benchtime 1x ./gnn (-short
// skips the 1M size).
func BenchmarkTrainEpoch(b *testing.B) {
	pool := benchRows(b)
	var perRow float64
	for _, r := range pool {
		perRow += float64(len(r.Configs))
	}
	perRow /= float64(len(pool))
	for _, samples := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("samples=%d", samples), func(b *testing.B) {
			if testing.Short() && samples > 100_000 {
				b.Skip("the 1M-sample epoch takes about 20 s per iteration")
			}
			runtime.GC()
			rows := int(float64(samples) / perRow)
			train := cycleSource{pool: pool, n: rows}
			val := cycleSource{pool: pool, n: int(1e4 / perRow)}
			var peakHeap uint64
			done := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var ms runtime.MemStats
				for {
					runtime.ReadMemStats(&ms)
					peakHeap = max(peakHeap, ms.HeapInuse)
					select {
					case <-done:
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r, err := trainSources(context.Background(), train, val, TrainOptions{Task: dataset.TaskTile, Epochs: 1, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(r.History[0].Samples), "samples/epoch")
				b.ReportMetric(r.History[0].KernelsPerS, "kernels/s")
				b.ReportMetric(float64(r.History[0].GraphBuilds), "graph-builds")
			}
			sec := time.Since(start).Seconds()
			close(done)
			<-sampled
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			b.ReportMetric(float64(rows*b.N)/sec, "rows/s")
			b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
		})
	}
}

// tpuGraphsTileTrain is the number of kernels (npz files) in the train split of
// TpuGraphs' tile collection (npz/tile/xla/train of the release).
const tpuGraphsTileTrain = 5709

// BenchmarkTpuGraphsTileEpoch trains one epoch (Train, default model, rank-hinge, 32
// sampled configurations per kernel, batches of 32 kernels) over 512 synthetic files of
// TpuGraphs' tile collection (tpugraphs.Synthetic: 140 node features, 24 config
// features, 20–60 nodes per kernel, 64 configurations) and reports the throughput and
// the time one epoch over the collection's train split would take at that rate.
func BenchmarkTpuGraphsTileEpoch(b *testing.B) {
	p := foreignProv(tpugraphs.CollectionTile)
	rows := foreignRows(b, tpugraphs.CollectionTile, 0, 512, 40, 64)
	cfg, err := DefaultConfig().ForData(p)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(backendName, func(b *testing.B) { tileEpochs(b, rows, cfg, p) })
}

func tileEpochs(b *testing.B, rows []dataset.Row, cfg Config, p dataset.Provenance) {
	var kernels int
	cpu0 := cpuSeconds()
	for b.Loop() {
		r, err := trainSources(context.Background(), sliceSource(rows), nil, TrainOptions{Task: dataset.TaskTile, Model: cfg, Epochs: 1, Seed: 1, Schema: p.FeatureSchema})
		if err != nil {
			b.Fatal(err)
		}
		kps := r.History[0].KernelsPerS
		kernels += r.History[0].Kernels
		b.ReportMetric(kps, "kernels/s")
		b.ReportMetric(tpuGraphsTileTrain/kps, "s/tile-train-epoch")
	}
	b.ReportMetric(float64(kernels)/(cpuSeconds()-cpu0), "kernels/cpu-s")
}

// cpuSeconds is the CPU time (user and system, every thread) the process has used: on a
// shared machine, kernels per CPU second compare two builds more steadily than wall
// time, which counts the time other processes held the cores.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
