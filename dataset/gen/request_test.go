package gen

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/tpusim"
)

// genRequest is a request as `tpucost gen` builds it with the flags' defaults.
func genRequest() Request {
	return Request{Task: "tile", Models: "mlp_96x2_b1", Out: "out", Configs: 32, Variants: 1, Seed: 1, Format: "arrow",
		Shard: "0/1", NoiseRuns: 3, PartRows: 2048, Fusion: compiler.FusionXLA}
}

// TestRequestOptions: the flags resolve into Options as given; a bad value or combination
// is one error naming the flag.
func TestRequestOptions(t *testing.T) {
	chip, err := tpusim.Preset(tpusim.DefaultChip)
	if err != nil {
		t.Fatal(err)
	}
	r := genRequest()
	r.Models, r.Shard, r.Seed, r.NoiseSigma, r.ToolVersion = "mlp_96x2_b1, resnet50_b32", "2/4", 7, 0.1, "v"
	o, err := r.Options(chip)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Models) != 2 || o.Models[1] != "resnet50_b32" || o.ShardIndex != 2 || o.ShardCount != 4 || o.Noise.Seed != 7 ||
		o.Noise.NoiseSigma != 0.1 || o.Noise.Runs != 3 || o.Task != dataset.TaskTile || o.Chip.Name != chip.Name || o.ToolVersion != "v" {
		t.Errorf("options %+v: want the request's models, shard 2/4, noise seeded by --seed", o)
	}
	for _, c := range []struct {
		name string
		edit func(*Request)
		want string
	}{
		{"models and all", func(r *Request) { r.All = true }, "--all and --models"},
		{"bad shard", func(r *Request) { r.Shard = "4/4" }, `--shard "4/4": want i/n`},
		{"zero configs", func(r *Request) { r.Configs = 0 }, "--configs 0: want an integer in [1, "},
		{"bad format", func(r *Request) { r.Format = "csv" }, `--format "csv": want arrow or parquet`},
		{"bad task", func(r *Request) { r.Task = "speed" }, `--task "speed": want tile, flags, fusion or layout`},
		{"zero part rows", func(r *Request) { r.PartRows = 0 }, "--part-rows 0"},
	} {
		r := genRequest()
		c.edit(&r)
		if _, err := r.Options(chip); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestReportText: the summary names the directory and gives the dataset's counts (every
// run's), then this run's share, labelled, then the failed units, one line each.
func TestReportText(t *testing.T) {
	r := &Report{Result: &Result{Units: 4, Resumed: 1, Rows: 30, Samples: 900, FailedUnits: 1,
		Failures: []dataset.FailedUnit{{Unit: 2, Program: "m", Variant: 0, Error: "unit 2 (m variant 0): pass tiling: boom"}},
		RunUnits: 3, RunRows: 10, RunSamples: 300, RunFailedUnits: 1,
		DuplicateKernels: 2, Parts: 1, Elapsed: 1500 * time.Millisecond, SamplesPerSecond: 200}, out: "d"}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "d: 4 units, 1 failed, 30 rows, 900 samples\n" +
		"this run: 3 units (1 resumed from earlier runs), 1 failed, 10 rows, 300 samples, 2 duplicate kernels dropped, 1 parts in 1.5s (200 samples/s)\n" +
		"failed: unit 2 (m variant 0): pass tiling: boom\n"; b.String() != want {
		t.Errorf("text %q, want %q", b.String(), want)
	}
}
