package dataset

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// BenchmarkGenerate measures generation throughput (samples = timed kernel configs per
// second) for 1 and 2 workers on the tile and fusion tasks, and the bytes per sample on
// disk. Compare the worker counts within one run (the machine is shared).
func BenchmarkGenerate(b *testing.B) {
	chip, _ := tpusim.Preset("v4")
	models := []string{"resnet50_b32", "bert_base_s128_b8", "mobilenet_v2_100_224_b32", "gpt2_small_s128_b8", "dlrm_criteo_b64", "unet_d4_c64_r256_b1",
		"vit_s16_224_b16", "ssd300_voc_b32", "lstm2_lm_h650_t20_b32", "wavernn_h512_t24_b16", "convdraw_s8_c128_r64_b1", "resnet18v2_b16"}
	for _, task := range []Task{TaskTile, TaskFusion} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", task, workers), func(b *testing.B) {
				var samples, bytes int64
				for i := 0; i < b.N; i++ {
					dir := b.TempDir()
					configs := 64
					if task == TaskFusion {
						configs = 4
					}
					res, err := Generate(context.Background(), GenOptions{Task: task, Models: models, Out: dir, Configs: configs, Variants: 2, Workers: workers, Seed: 1, Chip: chip})
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
