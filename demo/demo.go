// Package demo runs tpucost's whole loop on a small built-in default: it generates tile,
// fusion and layout datasets from a handful of zoo models, trains a tile model and a
// program-level (fusion+layout) model, evaluates both against the analytical baseline with
// tables and plots, tunes two models it did not train on with and without the learned
// models, and writes a Markdown report. Every number in the report comes from the same
// library calls `tpucost gen`, `train`, `eval` and `tune` make.
package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tune"
	"github.com/tpucost/tpucost/zoo"
)

// DefaultTrainModels are the zoo models the demo generates data from: one or two per
// family, small enough for a 2-core machine.
func DefaultTrainModels() []string {
	return []string{
		"mlp_768x3_b8", "dlrm_small_b32", "resnet18_b1", "resnet56v2_cifar_b32", "mobilenet_v1_075_192_b8",
		"unet_d3_c32_r128_b8", "ssdlite320_coco_b16", "bert_mini_s128_b16", "gpt2_tiny_s128_b8",
		"lstm_lm_h256_t16_b32", "convdraw_s8_c32_r32_b16", "vit_ti16_224_b32", "dlrm_criteo_b64", "resnet34_b8",
		"mobilenet_v2_035_96_b64", "unet_d4_c16_r96_b16", "ssd300_voc_b8", "transformer_tiny_s32_b64", "wavernn_h384_t16_b1",
		"bert_small_s128_b8", "rnn_char_h96_t24_b1",
	}
}

// DefaultTuneModels are tuned by the demo; they are not among the training models.
func DefaultTuneModels() []string { return []string{"resnet20_cifar_b64", "bert_tiny_s128_b32"} }

// Options configure a demo run. Zero values take the defaults.
type Options struct {
	Out         string // output directory (required)
	Chip        tpusim.Chip
	TrainModels []string
	TuneModels  []string
	Seed        int64
	// Quick shrinks every stage (fewer configs and epochs) for tests.
	Quick bool
	// Progress receives one line per stage (nil: none).
	Progress io.Writer
}

// Settings are the sizes of each stage.
type Settings struct {
	TileConfigs  int `json:"tile_configs"`
	TileVariants int `json:"tile_variants"`
	GraphConfigs int `json:"graph_configs"`
	TileEpochs   int `json:"tile_epochs"` // 0: train's default budget
	GraphEpochs  int `json:"graph_epochs"`
	// TileEnsemble is the number of tile models trained (train --ensemble): the report
	// shows their mean pick.
	TileEnsemble int `json:"tile_ensemble"`
	SimBudget    int `json:"sim_budget"`
	ModelBudget  int `json:"model_budget"`
}

func (o Options) settings() Settings {
	if o.Quick {
		return Settings{TileConfigs: 8, TileVariants: 1, GraphConfigs: 3, TileEpochs: 2, GraphEpochs: 2, TileEnsemble: 1, SimBudget: 40, ModelBudget: 10}
	}
	// Epochs 0: train's default budget (steps scaled to the data, early stopping).
	// An ensemble of 3 tile models: one model's pick on the held-out programs' few small
	// kernels depends on its seed (docs/training.md, Results).
	return Settings{TileConfigs: 32, TileVariants: 2, GraphConfigs: 12, TileEnsemble: 3, SimBudget: 200, ModelBudget: 40}
}

// DatasetSummary is what the report shows of a dataset (tpucost inspect has the rest).
type DatasetSummary struct {
	Dir       string               `json:"dir"`
	Rows      int64                `json:"rows"`
	Programs  int                  `json:"programs"`
	Samples   int64                `json:"samples"`
	RuntimeNs dataset.RuntimeStats `json:"runtime_ns"`
}

// TuneRow compares simulator-only and model-guided tuning of one model.
type TuneRow struct {
	Program string       `json:"program"`
	Sim     *tune.Report `json:"simulator_only"`
	Model   *tune.Report `json:"model_guided"`
	// SpeedupShare is (model-guided speedup − 1) / (simulator-only speedup − 1): the
	// share of the simulator-only gain the model-guided run reached.
	SpeedupShare float64 `json:"speedup_share"`
	// MeasurementShare is model-guided measurements / simulator-only measurements.
	MeasurementShare float64 `json:"measurement_share"`
}

// Result is what the demo produced.
type Result struct {
	Out        string                     `json:"out"`
	Chip       string                     `json:"chip"`
	Settings   Settings                   `json:"settings"`
	Datasets   map[string]*DatasetSummary `json:"datasets"`
	Tile       *eval.Result               `json:"tile_eval"`
	Graph      *eval.Result               `json:"fusion_eval"`
	Tuning     []TuneRow                  `json:"tuning"`
	WallS      float64                    `json:"wall_s"`
	Report     string                     `json:"report"`
	StageWallS map[string]float64         `json:"stage_wall_s"`
	// Reused lists the datasets and models of an earlier run that were complete, verified
	// and made with the same settings, and so were kept rather than redone.
	Reused []string `json:"reused"`
}

// stampFile records, beside a dataset directory, the settings it was generated with and
// its fingerprint once complete.
func stampFile(dir string) string { return dir + ".demo.json" }

// stamp is the content of a stampFile.
type stamp struct {
	Task        dataset.Task `json:"task"`
	Models      []string     `json:"models"`
	Configs     int          `json:"configs"`
	Variants    int          `json:"variants"`
	Seed        int64        `json:"seed"`
	Chip        string       `json:"chip"`
	VMEMBytes   int64        `json:"vmem_bytes"`
	Simulator   string       `json:"simulator"`
	Generator   string       `json:"generator"` // gen.Version: the compiler's output is part of it
	Fingerprint string       `json:"fingerprint"`
}

// generate makes the dataset of o, or reuses the one in o.Out when its stamp shows it
// complete with the same settings and its files still have the stamped fingerprint.
// Anything else in o.Out (partial, other settings, another feature schema, damaged) is
// removed and redone.
// It returns the reused directory, if any.
func generate(ctx context.Context, o gen.Options, progress io.Writer) ([]string, error) {
	want := stamp{Task: o.Task, Models: o.Models, Configs: o.Configs, Variants: o.Variants, Seed: o.Seed, Chip: o.Chip.Name,
		VMEMBytes: o.Chip.VMEMBytes, Simulator: tpusim.Version,
		Generator: gen.Version}
	if b, err := os.ReadFile(stampFile(o.Out)); err == nil {
		var got stamp
		if json.Unmarshal(b, &got) == nil {
			fp := got.Fingerprint
			got.Fingerprint = ""
			if reflect.DeepEqual(got, want) {
				// The fingerprint covers the part files; Open also verifies the manifests
				// (their checksums: one from an older tpucost, or edited, is redone).
				if now, err := dataset.Fingerprint(o.Out); err == nil && now == fp {
					// Data of another feature schema (an older tpucost's) is refused by
					// training: it is redone like data of other settings.
					if d, err := dataset.Open(o.Out); err == nil && d.Provenance.FeatureSchema.Version == features.SchemaVersion {
						fmt.Fprintf(progress, "demo: reusing %s (complete, fingerprint %s)\n", o.Out, fp[:12])
						return []string{o.Out}, nil
					}
				}
			}
		}
		fmt.Fprintf(progress, "demo: %s is from other settings or damaged: regenerating it\n", o.Out)
	} else if _, err := os.Stat(o.Out); err == nil {
		fmt.Fprintf(progress, "demo: %s is incomplete: regenerating it\n", o.Out)
	}
	if err := os.Remove(stampFile(o.Out)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if _, err := gen.Generate(ctx, o); err != nil {
		return nil, err
	}
	fp, err := dataset.Fingerprint(o.Out)
	if err != nil {
		return nil, err
	}
	want.Fingerprint = fp
	b, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		return nil, err
	}
	return nil, atomicfile.WriteFile(stampFile(o.Out), append(b, '\n'))
}

// checkOptions are the options a checkpoint of opts on data records (what
// gnn.CheckResume compares): the default architecture, the data's fingerprints and meta.
func checkOptions(data gnn.DataOptions, opts gnn.TrainOptions) (gnn.TrainOptions, error) {
	check := opts
	if reflect.DeepEqual(check.Model, gnn.Config{}) {
		// What Train uses (the demo's data have tpucost's own features): a checkpoint of
		// another default is redone.
		check.Model = gnn.DefaultConfig()
		loss := cmp.Or(check.Loss, gnn.DefaultLoss(opts.Task, check.Model))
		check.Model.Prior = gnn.DefaultPrior(opts.Task, check.Model, loss)
		check.Model.IgnoreKernel = gnn.DefaultIgnoreKernel(opts.Task, check.Model)
	}
	var err error
	if check.Datasets, err = gnn.Fingerprints(data.Dir); err != nil {
		return check, err
	}
	_, _, check.Meta, err = gnn.OpenData(data, opts.Task)
	return check, err
}

// trainModel trains the model of opts into opts.OutDir, or reuses the checkpoint there
// when it verifies and was trained on the same data (fingerprints) with the same
// settings: kept when complete, resumed when interrupted. Any other checkpoint there is
// removed and retrained. It reports whether a complete checkpoint was reused.
func trainModel(ctx context.Context, data gnn.DataOptions, opts gnn.TrainOptions, ensemble int, progress io.Writer) (bool, error) {
	dir := opts.OutDir
	if ensemble > 1 {
		// An ensemble is complete (its manifest lists every member, all verified) or
		// trained again: ensembles are not resumed.
		check, err := checkOptions(data, opts)
		if err != nil {
			return false, err
		}
		if m, _, err := gnn.Load(dir); err == nil && len(m.Members) == ensemble-1 {
			if c, err := gnn.CheckResume(dir, check); err == nil && c.Stopped != "" && c.Loss == gnn.DefaultLoss(opts.Task, gnn.DefaultConfig()) &&
				c.Settings.Schedule == gnn.ScheduleCosine && (opts.Epochs != 0 || c.Settings.Steps == gnn.DefaultSteps(opts.Task)) {
				fmt.Fprintf(progress, "demo: reusing %s (an ensemble of %d, verified, same data and settings)\n", dir, ensemble)
				return true, nil
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return false, err
		}
		_, err = gnn.TrainEnsemble(ctx, data, opts, ensemble)
		return false, err
	}
	check, err := checkOptions(data, opts)
	if err != nil {
		return false, err
	}
	c, err := gnn.CheckResume(dir, check)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.RemoveAll(dir); err != nil { // a directory without model.json holds nothing to keep
			return false, err
		}
	case err == nil && opts.Epochs != 0 && c.Settings.Epochs != opts.Epochs:
		err = fmt.Errorf("it was trained for %d epochs, not %d", c.Settings.Epochs, opts.Epochs)
		fallthrough
	case err == nil && opts.Epochs == 0 && c.Settings.Steps != gnn.DefaultSteps(opts.Task):
		err = fmt.Errorf("it was trained with a budget of %d epochs (%d steps), not the default of %d steps", c.Settings.Epochs, c.Settings.Steps, gnn.DefaultSteps(opts.Task))
		fallthrough
	case err == nil && opts.Loss == "" && c.Loss != gnn.DefaultLoss(opts.Task, check.Model):
		err = fmt.Errorf("it was trained with loss %s, not the default %s", c.Loss, gnn.DefaultLoss(opts.Task, check.Model))
		fallthrough
	case err == nil && c.Settings.Schedule != gnn.ScheduleCosine:
		err = fmt.Errorf("it was trained with learning-rate schedule %q, not %s", c.Settings.Schedule, gnn.ScheduleCosine)
		fallthrough
	case err != nil:
		fmt.Fprintf(progress, "demo: retraining %s: %v\n", dir, err)
		if err := os.RemoveAll(dir); err != nil {
			return false, err
		}
	case c.Stopped != "":
		fmt.Fprintf(progress, "demo: reusing %s (complete, verified, same data and settings)\n", dir)
		return true, nil
	default:
		fmt.Fprintf(progress, "demo: resuming %s after epoch %d\n", dir, c.Epochs)
		opts.Resume = true
	}
	_, err = gnn.TrainDataset(ctx, data, opts)
	return false, err
}

// Paths of the demo's outputs inside Out.
func dataDir(out string, task dataset.Task) string { return filepath.Join(out, "data", string(task)) }
func modelDir(out, name string) string             { return filepath.Join(out, "models", name) }

// Run runs the demo.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Out == "" {
		return nil, fmt.Errorf("demo: no output directory")
	}
	if o.Chip.Name == "" {
		c, err := tpusim.Preset(tpusim.DefaultChip)
		if err != nil {
			return nil, err
		}
		o.Chip = c
	}
	lock, err := dirlock.AcquireDir(o.Out, dirlock.Demo)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer lock.Release()
	if len(o.TrainModels) == 0 {
		o.TrainModels = DefaultTrainModels()
	}
	if len(o.TuneModels) == 0 {
		o.TuneModels = DefaultTuneModels()
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	s := o.settings()
	start := time.Now()
	res := &Result{Out: o.Out, Chip: o.Chip.Name, Settings: s, Datasets: map[string]*DatasetSummary{}, StageWallS: map[string]float64{}}
	stage := func(name string, f func() error) error {
		fmt.Fprintf(progress, "demo: %s\n", name)
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("demo: %s: %w", name, err)
		}
		res.StageWallS[name] = time.Since(t0).Seconds()
		return nil
	}

	// 1. Datasets.
	generateTask := func(task dataset.Task, configs, variants int) error {
		gopts := gen.Options{Task: task, Models: o.TrainModels, Out: dataDir(o.Out, task),
			Configs: configs, Variants: variants, Seed: o.Seed, Chip: o.Chip, ToolVersion: "demo"}
		reused, err := generate(ctx, gopts, progress)
		if err != nil {
			return err
		}
		res.Reused = append(res.Reused, reused...)
		d, err := dataset.Open(dataDir(o.Out, task))
		if err != nil {
			return err
		}
		sum, err := dataset.Inspect(d)
		if err != nil {
			return err
		}
		res.Datasets[string(task)] = &DatasetSummary{Dir: sum.Dir, Rows: sum.Rows, Programs: sum.Programs, Samples: sum.Samples, RuntimeNs: sum.RuntimeNs}
		return nil
	}
	for _, st := range []struct {
		task              dataset.Task
		configs, variants int
	}{{dataset.TaskTile, s.TileConfigs, s.TileVariants}, {dataset.TaskFusion, s.GraphConfigs, 1}, {dataset.TaskLayout, s.GraphConfigs, 1}} {
		if err := stage("generating the "+string(st.task)+" dataset", func() error { return generateTask(st.task, st.configs, st.variants) }); err != nil {
			return nil, err
		}
	}

	// 2. Models: a tile ranker and a program-level model on fusion and layout data.
	train := func(name string, task dataset.Task, dirs []string, epochs, ensemble int) error {
		reused, err := trainModel(ctx, gnn.DataOptions{Dir: strings.Join(dirs, ","), Split: dataset.SplitProgram, SplitSeed: o.Seed},
			gnn.TrainOptions{Task: task, Epochs: epochs, Seed: o.Seed, OutDir: modelDir(o.Out, name)}, ensemble, progress)
		if reused {
			res.Reused = append(res.Reused, modelDir(o.Out, name))
		}
		return err
	}
	if err := stage("training the tile model (rank loss)", func() error {
		return train("tile", dataset.TaskTile, []string{dataDir(o.Out, dataset.TaskTile)}, s.TileEpochs, s.TileEnsemble)
	}); err != nil {
		return nil, err
	}
	if err := stage("training the program-level model (fusion and layout data, log-MSE)", func() error {
		return train("fusion", dataset.TaskFusion, []string{dataDir(o.Out, dataset.TaskFusion), dataDir(o.Out, dataset.TaskLayout)}, s.GraphEpochs, 1)
	}); err != nil {
		return nil, err
	}

	// 3. Evaluation on held-out programs.
	if err := stage("evaluating against the analytical model", func() error {
		var err error
		if res.Tile, err = eval.Run(eval.RunOptions{ModelDir: modelDir(o.Out, "tile"), PlotsDir: filepath.Join(o.Out, "plots", "tile")}); err != nil {
			return err
		}
		res.Graph, err = eval.Run(eval.RunOptions{ModelDir: modelDir(o.Out, "fusion"), PlotsDir: filepath.Join(o.Out, "plots", "fusion")})
		return err
	}); err != nil {
		return nil, err
	}

	// 4. Tuning: simulator-only vs model-guided.
	if err := stage("tuning with and without the learned models", func() error {
		tileModel, err := gnn.LoadPredictor(modelDir(o.Out, "tile"), o.Chip.Target)
		if err != nil {
			return err
		}
		defer tileModel.Close()
		graphModel, err := gnn.LoadPredictor(modelDir(o.Out, "fusion"), o.Chip.Target)
		if err != nil {
			return err
		}
		defer graphModel.Close()
		if err := os.MkdirAll(filepath.Join(o.Out, "tuned"), 0o755); err != nil {
			return err
		}
		for _, name := range o.TuneModels {
			m, err := zoo.ResolveContext(ctx, name)
			if err != nil {
				return err
			}
			base := tune.Options{Chip: o.Chip, Seed: o.Seed, Noise: 0.02, Budget: s.SimBudget}
			simOnly, err := tune.Run(ctx, m, base)
			if err != nil {
				return err
			}
			guided := base
			guided.Budget, guided.GraphModel, guided.KernelModel = s.ModelBudget, graphModel, tileModel
			withModel, err := tune.Run(ctx, m, guided)
			if err != nil {
				return err
			}
			row := TuneRow{Program: name, Sim: simOnly, Model: withModel,
				MeasurementShare: float64(withModel.Measurements) / float64(max(simOnly.Measurements, 1))}
			if simOnly.Speedup > 1 {
				row.SpeedupShare = (withModel.Speedup - 1) / (simOnly.Speedup - 1)
			}
			res.Tuning = append(res.Tuning, row)
			if err := compiler.WriteConfig(filepath.Join(o.Out, "tuned", name+".json"), withModel.Config); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	res.WallS = time.Since(start).Seconds()
	res.Report = filepath.Join(o.Out, "report.md")
	if err := writeReport(res, o); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(o.Out, "report.json"), append(js, '\n')); err != nil {
		return nil, err
	}
	return res, nil
}

// writeReport writes report.md.
func writeReport(res *Result, o Options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# tpucost demo report\n\n")
	fmt.Fprintf(&b, "Chip %s (simulator %s), seed %d, %.0f s in all. Training models (%d): %s. Tuned (not trained on): %s.\n\n",
		res.Chip, tpusim.Version, o.Seed, res.WallS, len(o.TrainModels), strings.Join(o.TrainModels, ", "), strings.Join(o.TuneModels, ", "))
	fmt.Fprintf(&b, "## Datasets\n\n| task | rows | programs | samples | runtime min / median / max (ns) |\n|---|---|---|---|---|\n")
	for _, t := range []string{"tile", "fusion", "layout"} {
		if d := res.Datasets[t]; d != nil {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %.0f / %.0f / %.0f |\n", t, d.Rows, d.Programs, d.Samples, d.RuntimeNs.Min, d.RuntimeNs.Median, d.RuntimeNs.Max)
		}
	}
	evalSection := func(title string, r *eval.Result, plotsDir string) {
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		var tb strings.Builder
		r.WriteTable(&tb)
		fmt.Fprintf(&b, "```\n%s```\n\n", tb.String())
		for _, f := range r.PlotFiles {
			rel, _ := filepath.Rel(o.Out, f)
			fmt.Fprintf(&b, "![%s](%s)\n", filepath.Base(f), rel)
		}
	}
	evalSection("Tile model vs the analytical model (held-out programs)", res.Tile, "plots/tile")
	evalSection("Program-level model vs the analytical model (held-out programs)", res.Graph, "plots/fusion")
	fmt.Fprintf(&b, "\n## Tuning: simulator only vs model-guided\n\n")
	fmt.Fprintf(&b, "XTAT schedule (layout and fusion by simulated annealing, then tiles, then flags), measurement noise σ = 0.02. ")
	fmt.Fprintf(&b, "Model-guided runs search on the learned models' predictions and measure only their top-k candidates.\n\n")
	fmt.Fprintf(&b, "| program | mode | default (µs) | tuned (µs) | speedup | measurements | hardware (s) |\n|---|---|---|---|---|---|---|\n")
	for _, t := range res.Tuning {
		for _, r := range []*tune.Report{t.Sim, t.Model} {
			mode := "simulator only"
			if r.ModelGuided {
				mode = "model-guided"
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.3f | %d | %.0f |\n", t.Program, mode, r.DefaultNs/1e3, r.TunedNs/1e3, r.Speedup, r.Measurements, r.HardwareS)
		}
	}
	fmt.Fprintf(&b, "\nShare of the simulator-only gain reached with the model: ")
	for i, t := range res.Tuning {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.0f%% using %.0f%% of the measurements", t.Program, 100*t.SpeedupShare, 100*t.MeasurementShare)
	}
	fmt.Fprintf(&b, ".\n\n## Reproduce\n\n```sh\n")
	models := strings.Join(o.TrainModels, ",")
	s := res.Settings
	fmt.Fprintf(&b, "tpucost gen --task tile --models %s --configs %d --variants %d --seed %d --out %s\n", models, s.TileConfigs, s.TileVariants, o.Seed, dataDir(o.Out, "tile"))
	fmt.Fprintf(&b, "tpucost gen --task fusion --models %s --configs %d --seed %d --out %s\n", models, s.GraphConfigs, o.Seed, dataDir(o.Out, "fusion"))
	fmt.Fprintf(&b, "tpucost gen --task layout --models %s --configs %d --seed %d --out %s\n", models, s.GraphConfigs, o.Seed, dataDir(o.Out, "layout"))
	epochs := func(e int) string {
		if e == 0 {
			return "" // the default budget
		}
		return fmt.Sprintf(" --epochs %d", e)
	}
	ens := ""
	if s.TileEnsemble > 1 {
		ens = fmt.Sprintf(" --ensemble %d", s.TileEnsemble)
	}
	fmt.Fprintf(&b, "tpucost train --task tile --data %s --split program --split-seed %d --seed %d%s%s --out %s\n", dataDir(o.Out, "tile"), o.Seed, o.Seed, epochs(s.TileEpochs), ens, modelDir(o.Out, "tile"))
	fmt.Fprintf(&b, "tpucost train --task fusion --data %s,%s --split program --split-seed %d --seed %d%s --out %s\n", dataDir(o.Out, "fusion"), dataDir(o.Out, "layout"), o.Seed, o.Seed, epochs(s.GraphEpochs), modelDir(o.Out, "fusion"))
	fmt.Fprintf(&b, "tpucost eval --model %s --plots %s\n", modelDir(o.Out, "tile"), filepath.Join(o.Out, "plots", "tile"))
	fmt.Fprintf(&b, "tpucost eval --model %s --plots %s\n", modelDir(o.Out, "fusion"), filepath.Join(o.Out, "plots", "fusion"))
	for _, m := range o.TuneModels {
		fmt.Fprintf(&b, "tpucost tune %s --budget %d --seed %d\n", m, s.SimBudget, o.Seed)
		fmt.Fprintf(&b, "tpucost tune %s --budget %d --seed %d --model %s,%s\n", m, s.ModelBudget, o.Seed, modelDir(o.Out, "fusion"), modelDir(o.Out, "tile"))
	}
	fmt.Fprintf(&b, "```\n")
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(res.Report, []byte(b.String()))
}
