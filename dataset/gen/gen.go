// Package gen is the dataset generation driver (`tpucost gen`): it compiles zoo models
// and HLO files under random configurations, times their kernels on tpusim, featurizes
// them and writes the rows, occurrences and provenance (including each program's model
// family) through package dataset's writer. It sits beside the storage package, not in
// it, so that what only reads datasets (gnn, gnn/eval) depends on neither the simulator
// nor the model zoo.
package gen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/internal/workers"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// Version identifies the generation procedure (which configs are sampled, how
// work is split into units). Bump it when a change would make the same options produce
// different data.
//
// gen-2: compile runs the simplification passes (package compiler/opt) before layout
// assignment, so the programs, kernels and configs of every model changed.
//
// gen-3: a unit that fails is recorded in its part of the manifest and skipped (it used
// to stop the run), and the tiler no longer refuses the kernels that stopped gen-2 runs
// (compiler/cost: chunked windows, resident inputs streamed, gathered producers).
const Version = "gen-3"

// GCPercent is the garbage-collector target the generation command runs with
// (runtime/debug.SetGCPercent): the work allocates quickly and keeps little alive, so a
// higher target than Go's 100 trades some heap for parallel scaling.
const GCPercent = 400

// MemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit) the generation
// command runs with for the given worker count (0: one per CPU): 512 MiB a worker. With
// GCPercent the heap may grow to five times what is live; the limit makes the
// collector run sooner instead, so that peak memory follows the workers, not the heap
// target.
func MemoryLimit(workers int) int64 {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	return int64(workers) * MemoryPerWorker
}

// MemoryPerWorker is MemoryLimit's share of one worker.
const MemoryPerWorker = 512 << 20

// KernelsPerWorker is how many kernel analyses (compiler.KernelCache.MaxKernels) a
// generation run keeps per worker: more than the distinct kernels of a model's default
// compile and the variants a worker has in flight, so that they are rarely analyzed twice;
// the rest are dropped, least recently used first. Unbounded, they grew with every config
// (gen --task fusion --all --configs 16 peaked at 5.4-6.0 GB).
const KernelsPerWorker = 2048

// Options configure a generation run. Zero values of Format, Configs, Variants,
// ShardCount, MaxRowsPerPart and Noise.Runs mean their defaults (arrow, DefaultConfigs,
// DefaultVariants, 1, DefaultPartRows, DefaultNoiseRuns); Validate gives the valid ranges.
type Options struct {
	Task   dataset.Task
	Models []string // zoo model names or HLO file paths, in this order
	Out    string
	Format dataset.Format
	// Configs is the number of configs per kernel (tile, flags: sampled without
	// replacement from the valid options; the compiler's choice always included and
	// listed first, so that ties in a model's ranking go to it) or of random
	// program configs per model (fusion, layout: config 0 is the default compile).
	Configs int
	// Variants is the number of program variants per model for the tile and flags tasks
	// (1 for fusion and layout): variant 0 is the default compile, the others randomly
	// perturb layouts and fusion so that more distinct kernels are met. Default 1.
	Variants int
	Workers  int   // parallel work units; default runtime.NumCPU()
	Seed     int64 // seeds config sampling, program variants and measurement noise
	// ShardIndex/ShardCount split the work units deterministically (unit u belongs to
	// shard u mod ShardCount); the union of all shards is the data of one run.
	ShardIndex, ShardCount int
	Chip                   tpusim.Chip
	Noise                  tpusim.Options // measurement noise (NoiseSigma 0: off; Runs: runs per measurement, default 3)
	// MaxRowsPerPart bounds the rows of one file: a part is written after the unit that
	// reaches it. Default 2048.
	MaxRowsPerPart int
	ToolVersion    string
	// Staging is the compiler's staging mode for every compile (zero value: off, the
	// datasets of before staging). Rows of staged kernels measure and featurize the
	// staged choice (fusion, layout tasks; the tile and flags tasks sample the kernel's
	// unstaged tile options).
	Staging compiler.StagingMode
	// Progress, if set, is called from one goroutine after every unit.
	Progress func(Progress)
	// Fusion is the fusion rule of every program's default compile ("" or
	// compiler.FusionXLA: the XLA-like heuristic; compiler.FusionPartition: partition
	// fusion). The variants perturb around that compile's decisions.
	Fusion compiler.FusionRule
	// Shapes, if set, lists sizes of one dynamic dimension (a --shapes list,
	// zoo.ParseShapeList: "seq=64,128,256"): every model is generated at each size as its
	// own program, named MODEL@NAME=V (zoo.Model.WithShapes; an HLO file's bounded
	// dimensions: zoo.SizeBounded), models in the order given, each one's sizes ascending.
	// A zoo program's family is its model's. A model without the dimension, or a size
	// above its bound, fails the run before anything is written.
	Shapes string
	// Strict makes the first unit that fails (to compile or to simulate) end the run with
	// its error, the parts before it committed. Without it a failing unit is recorded in
	// the manifest with its error (dataset.FailedUnit), produces no rows, and the run goes
	// on; the Result counts the failures.
	Strict bool
	// Lengths, if set, lists batches of sequence lengths (each a sim --lengths form,
	// ragged.ParseLengths): every model, a zoo model with a ragged form (bert_*, gpt2_*),
	// is generated over each batch as its compiled ragged program (tpusim/ragged), named
	// MODEL@lengths=SPEC, one row per distinct kernel timed by the compiled ragged timing
	// and featurized with the ragged extent (features.RaggedSet; ragged.go). It takes the
	// default compile only: Task fusion, Configs 1, no Shapes, Fusion or Staging.
	Lengths []string

	// inject, if set (by tests), is called before a unit compiles: an error fails the unit.
	inject func(program string, variant int32) error
	// backend, if set (by tests), measures kernel choices instead of the simulator's
	// backend (generator.backend: the one constructor both measuring loops take it from).
	backend func(salt uint64) measure.Backend[cost.Planned]

	sized map[string]sizedProgram // set by Generate: how each program of Models is built
}

// Progress reports a running generation.
type Progress struct {
	UnitsDone, UnitsTotal int64 // of this shard, including units done by earlier runs
	Rows, Samples         int64 // written by this run
	Failed                int64 // units of this run that failed (recorded, skipped)
	Elapsed               time.Duration
}

// Result summarizes a finished run: the dataset's shard as it stands after the run
// (earlier runs' parts included: Rows, Samples, FailedUnits, Failures) and this run's
// share of it (the Run fields).
// Its JSON form (the `gen --json` output) is snake_case with units in the names.
type Result struct {
	Units   int64 `json:"units"`         // units of this shard
	Resumed int64 `json:"resumed_units"` // units skipped because an earlier run did them
	Rows    int64 `json:"rows"`          // rows of the shard, every run's
	Samples int64 `json:"samples"`       // measured configs of the shard, every run's
	// FailedUnits counts the shard's units that failed (to compile or to simulate), every
	// run's; Failures lists them, in unit order, with their errors (as the manifest
	// records them). A failed unit has no rows; a resumed run does not retry it (its
	// failure is deterministic under the settings a resume must share).
	FailedUnits int64                `json:"failed_units"`
	Failures    []dataset.FailedUnit `json:"failures"`
	// This run's share: the units it did (Units - Resumed), the rows and samples it
	// wrote and the units of it that failed.
	RunUnits       int64 `json:"run_units"`
	RunRows        int64 `json:"run_rows"`
	RunSamples     int64 `json:"run_samples"`
	RunFailedUnits int64 `json:"run_failed_units"`
	// DuplicateKernels counts, over this run's units, the distinct kernels of a unit that
	// an earlier unit (or run) already wrote, so they got no new row. It depends only on
	// the options and the units already written, not on Workers or scheduling.
	DuplicateKernels int64         `json:"duplicate_kernels"`
	Parts            int           `json:"parts"` // parts written by this run
	Elapsed          time.Duration `json:"-"`
	ElapsedSeconds   float64       `json:"wall_s"`        // Elapsed in seconds, the wall_s of every command
	SamplesPerSecond float64       `json:"samples_per_s"` // RunSamples per second of this run
	CompileSeconds   float64       `json:"compile_s"`     // summed over workers
	SimulateSeconds  float64       `json:"simulate_s"`
	FeaturizeSeconds float64       `json:"featurize_s"`
}

// Bounds of the generation options (Validate). They keep one row's configs, one part's
// rows and the unit count far from memory and integer limits, and above what any study
// here needs.
const (
	MaxConfigs    = 1 << 16     // configs per kernel / program configs per model
	MaxVariants   = 1 << 16     // program variants per model
	MaxWorkers    = workers.Max // the one rule of every --workers (internal/workers)
	MaxShards     = 1 << 16
	MaxPartRows   = 1 << 20 // rows per part (held in memory until the part is written)
	MaxNoiseRuns  = 1000
	MaxNoiseSigma = 1.0 // noise is multiplicative: sigma 1 is a standard deviation of 100%
)

// Defaults of the zero-valued options (applied by Generate, not by Validate).
const (
	DefaultConfigs   = 32
	DefaultVariants  = 1
	DefaultPartRows  = 2048
	DefaultNoiseRuns = 3
)

// taskChoices writes the dataset tasks (dataset.Tasks) for messages: "tile, flags,
// fusion or layout".
func taskChoices() string {
	ts := dataset.Tasks()
	ss := make([]string, len(ts))
	for i, t := range ts {
		ss[i] = string(t)
	}
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " or " + ss[len(ss)-1]
}

// Validate checks every option as given, without applying defaults: each error names the
// `tpucost gen` flag of the option and its valid range. Workers 0 (all cores) is valid;
// zero Configs, Variants, MaxRowsPerPart, ShardCount and Noise.Runs are not (Generate
// gives those zero values their defaults before validating; the command passes every
// flag's value, so `--configs 0` is an error, never a default).
func (o *Options) Validate() error {
	if !slices.Contains(dataset.Tasks(), o.Task) {
		return fmt.Errorf("--task %q: want %s", o.Task, taskChoices())
	}
	if len(o.Models) == 0 {
		return errors.New("no models: give --models a,b or --all")
	}
	for i, m := range o.Models {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("--models: model %d of %d is an empty name", i+1, len(o.Models))
		}
		if slices.Index(o.Models, m) != i {
			return fmt.Errorf("--models: %s is listed twice", m)
		}
	}
	if o.Out == "" {
		return errors.New("--out: no output directory")
	}
	if o.Fusion != "" {
		if _, err := compiler.ParseFusionRule(string(o.Fusion)); err != nil {
			return fmt.Errorf("--fusion: %w", err)
		}
	}
	if !o.Format.Valid() {
		return fmt.Errorf("--format %q: want arrow or parquet", o.Format)
	}
	if o.Configs < 1 || o.Configs > MaxConfigs {
		return fmt.Errorf("--configs %d: want an integer in [1, %d]", o.Configs, MaxConfigs)
	}
	if o.Variants < 1 || o.Variants > MaxVariants {
		return fmt.Errorf("--variants %d: want an integer in [1, %d]", o.Variants, MaxVariants)
	}
	if !o.Task.Relative() && o.Variants != 1 {
		return fmt.Errorf("--variants %d: only the tile and flags tasks have variants (want 1); the %s task draws --configs random program configs per model", o.Variants, o.Task)
	}
	if err := workers.Check("--workers", o.Workers); err != nil {
		return err
	}
	if o.ShardCount < 1 || o.ShardCount > MaxShards || o.ShardIndex < 0 || o.ShardIndex >= o.ShardCount {
		return fmt.Errorf("--shard \"%d/%d\": want i/n with 1 <= n <= %d and 0 <= i < n", o.ShardIndex, o.ShardCount, MaxShards)
	}
	if o.MaxRowsPerPart < 1 || o.MaxRowsPerPart > MaxPartRows {
		return fmt.Errorf("--part-rows %d: want an integer in [1, %d]", o.MaxRowsPerPart, MaxPartRows)
	}
	if s := o.Noise.NoiseSigma; math.IsNaN(s) || s < 0 || s > MaxNoiseSigma {
		return fmt.Errorf("--noise %g: want a sigma in [0, %g] (0: no noise)", s, MaxNoiseSigma)
	}
	if o.Noise.Runs < 1 || o.Noise.Runs > MaxNoiseRuns {
		return fmt.Errorf("--runs %d: want an integer in [1, %d]", o.Noise.Runs, MaxNoiseRuns)
	}
	if o.Shapes != "" {
		if _, err := zoo.ParseShapeList(o.Shapes); err != nil {
			return fmt.Errorf("--shapes: %w", err)
		}
	}
	if err := o.Chip.Validate(); err != nil {
		return err
	}
	return o.validateLengths()
}

// sizedProgram is one program of a run: the source it is built from (Options.Models) and
// the --shapes value it is built at ("" without Options.Shapes).
type sizedProgram struct{ src, shape, lengths string }

// programs returns the programs of a valid o, in unit order (Options.Shapes): their names
// and how each is built.
func (o *Options) programs() ([]string, map[string]sizedProgram) {
	by := map[string]sizedProgram{}
	if len(o.Lengths) > 0 {
		return o.raggedPrograms()
	}
	if o.Shapes == "" {
		for _, m := range o.Models {
			by[m] = sizedProgram{src: m}
		}
		return slices.Clone(o.Models), by
	}
	list, _ := zoo.ParseShapeList(o.Shapes) // checked by Validate
	var names []string
	for _, m := range o.Models {
		for _, v := range list.Values {
			name := m + "@" + list.At(v)
			names = append(names, name)
			by[name] = sizedProgram{src: m, shape: list.At(v)}
		}
	}
	return names, by
}

// ParseShard parses a --shard value "i/n" (0 <= i < n <= MaxShards).
func ParseShard(s string) (index, count int, err error) {
	bad := fmt.Errorf("--shard %q: want i/n with 1 <= n <= %d and 0 <= i < n, e.g. 0/4", s, MaxShards)
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, bad
	}
	index, err1 := strconv.Atoi(a)
	count, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || count < 1 || count > MaxShards || index < 0 || index >= count {
		return 0, 0, bad
	}
	return index, count, nil
}

// withDefaults returns o with its zero-valued options given their defaults (see the field
// docs); Workers 0 becomes the number of CPUs.
func (o Options) withDefaults() Options {
	if o.Format == "" {
		o.Format = dataset.FormatArrow
	}
	if o.Configs == 0 {
		o.Configs = DefaultConfigs
	}
	if o.Variants == 0 {
		o.Variants = DefaultVariants
	}
	if o.ShardCount == 0 {
		o.ShardCount = 1
	}
	if o.MaxRowsPerPart == 0 {
		o.MaxRowsPerPart = DefaultPartRows
	}
	if o.Noise.Runs == 0 {
		o.Noise.Runs = DefaultNoiseRuns
	}
	return o
}

// variantsPerModel is the number of work units per model.
func (o *Options) variantsPerModel() int {
	if o.Task.Relative() {
		return o.Variants
	}
	return o.Configs
}

// provenance is what every file of the run records, with the model family of each zoo
// model (an HLO file, or a name the zoo does not list, is left out: a family of its own).
// With Shapes, Models lists the sized programs (MODEL@NAME=V) and each has its model's
// family; Shapes records the list.
func (o *Options) provenance() dataset.Provenance {
	var families map[string]string // nil when empty: read back, an omitted map is nil
	names, by := o.programs()
	var shapes string
	if o.Shapes != "" {
		list, _ := zoo.ParseShapeList(o.Shapes) // checked by Validate
		shapes = list.String()
	}
	for _, name := range names {
		if m, err := zoo.Lookup(by[name].src); err == nil {
			if families == nil {
				families = map[string]string{}
			}
			families[name] = m.Family
		}
	}
	return withLengths(dataset.Provenance{Families: families,
		SchemaVersion: dataset.SchemaVersion, FeatureSchema: features.CurrentSchema(), SimulatorVersion: tpusim.Version,
		Chip: o.Chip.Name, VMEMBytes: o.Chip.VMEMBytes, NoiseSigma: o.Noise.NoiseSigma, NoiseRuns: o.Noise.Runs,
		Seed: o.Seed, Task: o.Task, ConfigsPerKernel: o.Configs, Models: names, Shapes: shapes,
		ShardIndex: o.ShardIndex, ShardCount: o.ShardCount, ToolVersion: o.ToolVersion, GeneratorVersion: Version,
		Fusion:  provenanceFusion(o.Fusion),
		Staging: stagingName(o.Staging),
	}, o.Lengths)
}

// provenanceFusion is the Provenance.Fusion of rule r: empty for the XLA-like default.
func provenanceFusion(r compiler.FusionRule) string {
	if r == compiler.FusionXLA {
		return ""
	}
	return string(r)
}

// unitResult is what a worker returns for one unit.
type unitResult struct {
	unit int64
	rows []dataset.Row
	occ  []dataset.Occurrence
	err  error

	compileS, simulateS, featurizeS float64
}

// Generate runs the generation: work units (model × variant) of this shard are compiled,
// their kernels' configs simulated and featurized by Workers goroutines, and written in
// unit order, kernels deduplicated by key, in parts of about MaxRowsPerPart rows. The
// output depends only on the options (not on Workers or timing). A run resumes after the
// last complete part of an earlier run with the same options; cancelling ctx stops after
// the parts completed so far (no partial file is left).
func Generate(ctx context.Context, o Options) (*Result, error) {
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if o.Workers == 0 {
		o.Workers = runtime.NumCPU()
	}
	// Every model is built once, now: an unknown model or an unreadable HLO file fails
	// before anything is written, and the units compile these modules.
	prov := o.provenance()
	o.Models, o.sized = o.programs() // from here on, the units' programs
	g := newGenerator(o)
	for _, m := range o.Models {
		if o.sized[m].lengths != "" {
			if _, err := g.raggedParts(m); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := g.module(ctx, m); err != nil {
			return nil, err
		}
	}
	w, err := dataset.NewWriter(dataset.WriterOptions{Dir: o.Out, Format: o.Format, Provenance: prov})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	nextUnit, seen, _ := w.Resume()
	if seen == nil {
		seen = map[string]bool{}
	}

	perModel := int64(o.variantsPerModel())
	var units []int64
	var resumed int64
	for u := int64(0); u < int64(len(o.Models))*perModel; u++ {
		if u%int64(o.ShardCount) != int64(o.ShardIndex) {
			continue
		}
		if u < nextUnit {
			resumed++
			continue
		}
		units = append(units, u)
	}
	res := &Result{Units: int64(len(units)) + resumed, Resumed: resumed}
	start := time.Now()

	g.written = newKeySet(seen)
	for _, u := range units {
		g.left[o.Models[u/perModel]]++
	}
	for _, m := range o.Models {
		if g.left[m] == 0 { // every unit was resumed (or is another shard's)
			g.left[m] = 1
			g.done(m)
		}
	}
	sim, err := tpusim.New(o.Chip, o.Noise)
	if err != nil {
		return nil, err
	}
	g.sim = sim

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int64)
	results := make(chan unitResult, 2*o.Workers)
	var wg sync.WaitGroup
	for i := 0; i < o.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range jobs {
				r := g.unit(u, perModel)
				select {
				case results <- r:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for _, u := range dispatchOrder(units, perModel) {
			select {
			case jobs <- u:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	// Write in unit order: a reorder buffer holds results that arrive early.
	pending := map[int64]unitResult{}
	var rows []dataset.Row
	var occ []dataset.Occurrence
	var failed []dataset.FailedUnit
	first := int64(-1)
	next := 0
	flush := func(last int64) error {
		if first < 0 {
			return nil
		}
		if err := w.WritePartWithFailures(first, last, rows, occ, failed); err != nil {
			return err
		}
		res.Parts++
		rows, occ, failed, first = nil, nil, nil, -1
		return nil
	}
	var lastDone int64 = -1
	for r := range results {
		pending[r.unit] = r
		for next < len(units) && ctx.Err() == nil {
			r, ok := pending[units[next]]
			if !ok {
				break
			}
			delete(pending, units[next])
			next++
			if r.err != nil && o.Strict {
				cancel()
				return nil, r.err
			}
			res.CompileSeconds += r.compileS
			res.SimulateSeconds += r.simulateS
			res.FeaturizeSeconds += r.featurizeS
			if first < 0 {
				first = r.unit
			}
			if r.err != nil {
				// Recorded in the part that covers the unit, without rows: the run goes on.
				failed = append(failed, dataset.FailedUnit{Unit: r.unit, Program: o.Models[r.unit/perModel],
					Variant: int32(r.unit % perModel), Error: oneLine(r.err)})
				res.RunFailedUnits++
				r.rows, r.occ = nil, nil
			}
			// Every distinct kernel of the unit is in r.occ; those without a new row here
			// were written before (the worker may already have skipped them, depending
			// on timing, so count from r.occ, not from r.rows).
			added := int64(0)
			for _, row := range r.rows {
				if seen[row.KernelKey] { // written, or pending in this part
					continue
				}
				added++
				seen[row.KernelKey] = true
				rows = append(rows, row)
				g.written.add(row.KernelKey)
				res.RunRows++
				res.RunSamples += int64(row.Samples())
			}
			res.DuplicateKernels += int64(len(r.occ)) - added
			occ = append(occ, r.occ...)
			lastDone = r.unit
			if len(rows) >= o.MaxRowsPerPart {
				if err := flush(r.unit); err != nil {
					cancel()
					return nil, err
				}
			}
			if o.Progress != nil {
				o.Progress(Progress{UnitsDone: resumed + int64(next), UnitsTotal: res.Units, Rows: res.RunRows, Samples: res.RunSamples,
					Failed: res.RunFailedUnits, Elapsed: time.Since(start)})
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		// Cancelled: keep the complete parts, drop the partial one.
		return nil, fmt.Errorf("generation interrupted after %d of %d units (run the same command again to resume): %w", resumed+int64(next), res.Units, err)
	}
	if next < len(units) {
		return nil, fmt.Errorf("generation stopped after %d of %d units", resumed+int64(next), res.Units)
	}
	if err := flush(lastDone); err != nil {
		return nil, err
	}
	res.RunUnits = int64(len(units))
	res.Rows, res.Samples, res.Failures = w.Committed()
	res.FailedUnits = int64(len(res.Failures))
	if res.Failures == nil {
		res.Failures = []dataset.FailedUnit{} // [] in JSON, never null
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	res.ElapsedSeconds = res.Elapsed.Seconds()
	if s := res.Elapsed.Seconds(); s > 0 {
		res.SamplesPerSecond = float64(res.RunSamples) / s
	}
	return res, nil
}

// dispatchOrder is the order workers take units in: unit order, except that the first
// unit of the next model goes before a model's other units. Those compile variants of
// the model's default program, which its first unit compiles: taken right after it, they
// would wait for that compile instead of compiling another model's. Results are written
// in unit order whatever the order they are computed in.
func dispatchOrder(units []int64, perModel int64) []int64 {
	out := make([]int64, 0, len(units))
	var held []int64 // the current model's later units
	model := int64(-1)
	for _, u := range units {
		if m := u / perModel; m != model {
			if model >= 0 {
				out = append(out, u) // the next model's first unit first
				out = append(out, held...)
				held, model = held[:0], m
				continue
			}
			model = m
		} else if len(out) > 0 {
			held = append(held, u)
			continue
		}
		out = append(out, u)
	}
	return append(out, held...)
}

// keySet is a concurrent set of kernel keys already written, so that workers can skip
// featurizing kernels that are certainly duplicates (skipping never changes the output:
// the writer would drop them).
type keySet struct {
	mu sync.RWMutex
	m  map[string]bool
}

func newKeySet(init map[string]bool) *keySet {
	s := &keySet{m: make(map[string]bool, len(init))}
	for k := range init {
		s.m[k] = true
	}
	return s
}

func (s *keySet) add(k string) {
	s.mu.Lock()
	s.m[k] = true
	s.mu.Unlock()
}

func (s *keySet) has(k string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[k]
}

type generator struct {
	opts    Options
	sim     *tpusim.Simulator
	written *keySet

	// spaces caches each model's default compile: variant 0 is that program and the other
	// variants perturb its config space (the default is compiled once per model).
	mu     sync.Mutex
	spaces map[string]*spaceOnce
	// kernels shares kernel analyses and tile plans across every compile of the run.
	kernels compiler.KernelCache
	// left counts each model's units not yet done; its module and default program are
	// dropped (with what kernels memoized about the module) after its last one.
	left map[string]int
}

// spaceOnce holds a model's module (built once: compiling never modifies it) and its
// default compile (computed once, on first need; read-only).
type spaceOnce struct {
	build    sync.Once
	module   *hlo.Module
	buildErr error
	compile  sync.Once
	def      *compiler.Program
	defErr   error
	// ragged: a ragged program's parts (raggedParts), built once.
	ragged   sync.Once
	parts    *ragged.Parts
	partsErr error
}

func (g *generator) entry(model string) *spaceOnce {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.spaces == nil {
		g.spaces = map[string]*spaceOnce{}
	}
	so := g.spaces[model]
	if so == nil {
		so = &spaceOnce{}
		g.spaces[model] = so
	}
	return so
}

// newGenerator returns the generator of a run with options o (Workers resolved).
func newGenerator(o Options) *generator {
	g := &generator{opts: o, left: map[string]int{}}
	// Kernel analyses are shared by every compile of the run but bounded by the workers
	// (each works on about one model at a time), not by --configs or the model count.
	g.kernels.MaxKernels = KernelsPerWorker * max(o.Workers, 1)
	return g
}

// module returns model's module, built once per run; an HLO file is read under ctx (its
// size limit, --max-input-bytes, and cancellation: zoo.ResolveContext).
func (g *generator) module(ctx context.Context, model string) (*hlo.Module, error) {
	so := g.entry(model)
	so.build.Do(func() {
		p, ok := g.opts.sized[model]
		if !ok || p.shape == "" {
			so.module, so.buildErr = zoo.ResolveContext(ctx, model)
			return
		}
		so.module, so.buildErr = zoo.ResolveShapesContext(ctx, p.src, p.shape) // its errors name the model
	})
	return so.module, so.buildErr
}

// done records that a unit of model finished, and drops the model's module and default
// program after its last unit.
func (g *generator) done(model string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.left[model]--
	if g.left[model] > 0 {
		return
	}
	if so := g.spaces[model]; so != nil {
		g.kernels.Release(so.module)
		delete(g.spaces, model)
	}
}

// defaultProgram returns the default compile of model m, compiled once per run.
func (g *generator) defaultProgram(m *hlo.Module, model string) (*compiler.Program, error) {
	so := g.entry(model)
	so.compile.Do(func() {
		so.def, so.defErr = compiler.Compile(m, nil, compiler.Options{Target: g.opts.Chip.Target, Kernels: &g.kernels, Fusion: g.opts.Fusion, Staging: g.opts.Staging})
	})
	return so.def, so.defErr
}

// seedFor derives a deterministic PCG source from the run seed and some labels.
func (g *generator) rng(labels ...string) *rand.Rand {
	h := stablehash.New()
	for _, l := range labels {
		h.Label(l)
	}
	return rand.New(rand.NewPCG(uint64(g.opts.Seed), h.Sum64()))
}

// unit compiles one work unit and measures its kernels.
func (g *generator) unit(u int64, perModel int64) (res unitResult) {
	o := g.opts
	model := o.Models[u/perModel]
	variant := int32(u % perModel)
	res = unitResult{unit: u}
	defer g.done(model)
	defer func() {
		// A unit that panics (a compiler or simulator bug) fails alone, like one that
		// returns an error: recorded, and the run goes on (or stops with Strict).
		if p := recover(); p != nil {
			res = unitResult{unit: u, err: fmt.Errorf("unit %d (%s variant %d): internal error: %v", u, model, variant, p)}
		}
	}()
	if g.opts.sized[model].lengths != "" {
		return g.raggedUnit(u, model)
	}
	t0 := time.Now()
	m, err := g.module(context.Background(), model) // built by Generate, under its ctx, before any unit
	if err != nil {
		res.err = fmt.Errorf("unit %d: %w", u, err)
		return res
	}
	if g.opts.inject != nil {
		if err := g.opts.inject(model, variant); err != nil {
			res.err = fmt.Errorf("unit %d (%s variant %d): %w", u, model, variant, err)
			return res
		}
	}
	p, err := g.compileVariant(m, model, variant)
	if err != nil {
		res.err = fmt.Errorf("unit %d (%s variant %d): %w", u, model, variant, err)
		return res
	}
	res.compileS = time.Since(t0).Seconds()

	counts := map[string]int32{}
	var order []*compiler.Kernel
	for _, k := range p.Kernels {
		if counts[k.Key] == 0 {
			order = append(order, k)
		}
		counts[k.Key]++
	}
	for _, k := range order {
		res.occ = append(res.occ, dataset.Occurrence{Unit: u, Program: model, Variant: variant, KernelKey: k.Key, Count: counts[k.Key]})
		if g.written.has(k.Key) {
			continue
		}
		row, simS, featS, err := g.row(p, k, model, u)
		if err != nil {
			res.err = fmt.Errorf("unit %d (%s variant %d) kernel %s: %w", u, model, variant, k.Name, err)
			return res
		}
		res.simulateS += simS
		res.featurizeS += featS
		res.rows = append(res.rows, row)
	}
	return res
}

// compileVariant compiles variant v of a model: 0 is the default compile; others perturb
// layouts and fusion (tile, flags) or the task's pass (fusion, layout) at random.
func (g *generator) compileVariant(m *hlo.Module, model string, v int32) (*compiler.Program, error) {
	def, err := g.defaultProgram(m, model)
	if v == 0 || err != nil {
		return def, err
	}
	space := def.Space
	r := g.rng("variant", model, fmt.Sprint(v))
	var kinds []compiler.Kind
	switch g.opts.Task {
	case dataset.TaskFusion:
		kinds = []compiler.Kind{compiler.KindFusion}
	case dataset.TaskLayout:
		kinds = []compiler.Kind{compiler.KindLayout}
	default:
		kinds = []compiler.Kind{compiler.KindLayout, compiler.KindFusion}
	}
	// Each variant flips a different share of the decisions, from neighbours of the
	// default to nearly uniform configs.
	p := 0.05 + 0.6*r.Float64()
	cfg := space.Perturb(nil, kinds, p, r)
	return compiler.Compile(m, cfg, compiler.Options{Target: g.opts.Chip.Target, Kernels: &g.kernels, Staging: g.opts.Staging})
}

// pick is one configuration to measure: a tile option (or the kernel's own choice, -1)
// with flags.
type pick struct {
	opt   int
	flags cost.Flags
}

// configsFor lists the configurations to measure for kernel k of program p, as picks
// among the kernel's tile options (opts: planned when the compiler listed them, so a
// pick's choice is opts[i].WithFlags(flags), never planned again).
func (g *generator) configsFor(p *compiler.Program, k *compiler.Kernel) (opts []cost.Planned, picks []pick) {
	o := g.opts
	if !o.Task.Relative() {
		return nil, []pick{{opt: -1}}
	}
	for i := range p.Space.Tile {
		if tc := &p.Space.Tile[i]; tc.Key == k.Key {
			opts = tc.Planned()
		}
	}
	own := 0
	for i := range opts {
		if opts[i].Config.Tile.Equal(k.Choice.Config.Tile) {
			own = i
			break
		}
	}
	r := g.rng("configs", string(o.Task), k.Key)
	switch o.Task {
	case dataset.TaskTile:
		idx := sampleIndices(r, len(opts), o.Configs, own)
		picks = make([]pick, len(idx))
		for i, j := range idx {
			picks[i] = pick{j, k.Choice.Config.Flags}
		}
		return opts, picks
	default: // flags: every valid flag combination on the default tile and a few others
		var all []pick
		for _, j := range sampleIndices(r, len(opts), 4, own) {
			for _, f := range opts[j].FlagOptions() {
				all = append(all, pick{j, f})
			}
		}
		// The compiler's choice (default tile, default flags) comes first.
		def := max(slices.IndexFunc(all, func(c pick) bool { return c.flags == k.Choice.Config.Flags }), 0)
		keep := sampleIndices(r, len(all), o.Configs, def)
		picks = make([]pick, len(keep))
		for i, j := range keep {
			picks[i] = all[j]
		}
		return opts, picks
	}
}

// sampleIndices picks min(k, n) distinct indices of [0, n): must first, then the others
// in increasing order.
func sampleIndices(r *rand.Rand, n, k, must int) []int {
	var chosen []int
	if k >= n {
		for i := 0; i < n; i++ {
			if i != must {
				chosen = append(chosen, i)
			}
		}
	} else {
		for _, j := range r.Perm(n) {
			if len(chosen) == k-1 {
				break
			}
			if j != must {
				chosen = append(chosen, j)
			}
		}
		slices.Sort(chosen)
	}
	return append([]int{must}, chosen...)
}

// backend is what measures kernel choices, salted by salt: the simulator as a
// measure.Backend (tpusim.ChoiceBackend, the numbers of its MeasureChoice), unless a test
// injected one. Both measuring loops (row, raggedUnit) take it from here.
func (g *generator) backend(salt uint64) measure.Backend[cost.Planned] {
	if g.opts.backend != nil {
		return g.opts.backend(salt)
	}
	return tpusim.ChoiceBackend{Sim: g.sim, Salt: func(cost.Planned) uint64 { return salt }}
}

// measureSeed seeds the order a kernel's configurations are measured in (measure.Run):
// the run's seed and the kernel's key. The simulator's times do not depend on the order
// (a choice's noise is seeded by its identity and salt), so neither does the data.
func measureSeed(seed int64, key string) uint64 {
	return stablehash.Seeded(seed).Label("measure").Str(key).Sum64()
}

// row measures and featurizes one kernel: each configuration is the kernel's planned
// choice or one of its tile options (planned once, by the compiler) with other flags, and
// is timed (through measure.Run, the loop every backend shares, on g.backend), estimated,
// named and featurized from that one value.
func (g *generator) row(p *compiler.Program, k *compiler.Kernel, model string, u int64) (dataset.Row, float64, float64, error) {
	t := g.opts.Chip.Target
	opts, picks := g.configsFor(p, k)
	row := dataset.Row{Program: model, Unit: u, Task: g.opts.Task, KernelKey: k.Key, KernelName: k.Name, Kind: k.Kind,
		Configs: make([]string, len(picks)), ConfigFeats: make([][]float32, len(picks)),
		RuntimesNs: make([]float64, len(picks)), AnalyticalNs: make([]float64, len(picks))}
	t0 := time.Now()
	choices := make([]cost.Planned, len(picks))
	for i, pk := range picks {
		c := k.Choice
		if pk.opt >= 0 {
			var err error
			if c, err = opts[pk.opt].WithFlags(pk.flags); err != nil {
				return dataset.Row{}, 0, 0, err
			}
		}
		choices[i] = c
	}
	ms, err := measure.Run(context.Background(), g.backend(0), choices, measure.Options{Seed: measureSeed(g.opts.Seed, k.Key)})
	if err != nil {
		return dataset.Row{}, 0, 0, err
	}
	for i, c := range choices {
		row.RuntimesNs[i] = ms[i].MedianNs
		row.AnalyticalNs[i] = c.Analytical()
		row.Configs[i] = c.Config.String()
	}
	simS := time.Since(t0).Seconds()
	t1 := time.Now()
	row.Graph = features.OfKernel(k, t)
	for i, c := range choices {
		row.ConfigFeats[i] = features.Config(c)
	}
	return row, simS, time.Since(t1).Seconds(), nil
}

// oneLine is err's message on one line, as the manifest records a failed unit's error.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// stagingName is a staging mode as provenance records it: "" for off.
func stagingName(m compiler.StagingMode) string {
	if m == compiler.StagingOff {
		return ""
	}
	return m.String()
}
