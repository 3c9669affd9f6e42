package gen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/tpusim"
)

// BenchmarkGenerate measures generation throughput (samples = timed kernel configs per
// second) for 1 and 2 workers on the tile and fusion tasks, and the bytes per sample on
// disk. "cpus=1" runs the single worker with GOMAXPROCS=1 (the writer and the garbage
// collector share its core: a one-core machine), the others use every core. Compare the
// rows within one run (the machine is shared).
func BenchmarkGenerate(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(GCPercent)) // as tpucost gen runs
	chip, _ := tpusim.Preset("v4")
	models := []string{"resnet50_b32", "bert_base_s128_b8", "mobilenet_v2_100_224_b32", "gpt2_small_s128_b8", "dlrm_criteo_b64", "unet_d4_c64_r256_b1",
		"vit_s16_224_b16", "ssd300_voc_b32", "lstm2_lm_h650_t20_b32", "wavernn_h512_t24_b16", "convdraw_s8_c128_r64_b1", "resnet18v2_b16",
		"resnet34_b8", "bert_mini_s128_b16", "mobilenet_v1_075_192_b8", "transformer_small_s64_b32", "dlrm_small_b32", "unet_d3_c32_r128_b8",
		"vit_ti16_224_b32", "ssdlite320_coco_b16", "nmt_lstm_h512_s24_b32", "mlp_1000x4_b64", "gpt2_medium_s256_b2", "resnet56v2_cifar_b32"}
	for _, task := range []dataset.Task{dataset.TaskTile, dataset.TaskFusion} {
		for _, c := range []struct{ workers, procs int }{{1, 1}, {1, 0}, {2, 0}} {
			workers := c.workers
			name := fmt.Sprintf("%s/workers=%d", task, workers)
			if c.procs > 0 {
				name += fmt.Sprintf("/cpus=%d", c.procs)
			}
			b.Run(name, func(b *testing.B) {
				if c.procs > 0 {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
				}
				var samples, bytes int64
				for i := 0; i < b.N; i++ {
					dir := b.TempDir()
					configs, variants := 64, 2
					if task == dataset.TaskFusion {
						configs, variants = 4, 1
					}
					res, err := Generate(context.Background(), Options{Task: task, Models: models, Out: dir, Configs: configs, Variants: variants, Workers: workers, Seed: 1, Chip: chip})
					if err != nil {
						b.Fatal(err)
					}
					samples += res.Samples
					files, _ := filepath.Glob(filepath.Join(dir, "*"))
					for _, f := range files {
						if st, err := os.Stat(f); err == nil {
							bytes += st.Size()
						}
					}
				}
				b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(float64(bytes)/float64(samples), "bytes/sample")
			})
		}
	}
}
