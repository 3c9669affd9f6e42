package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/internal/progress"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// Request is one run of `tpucost tune` as its command line gives it: the flags' values,
// unchecked. Run resolves them (sources, chip, strategy, kinds, policy, models, store,
// output file), checks every combination with one error naming the flags, and runs the
// mode they select: one program (Run), a batch (RunMany; Models or All), a shape-generic
// search (RunShapes; Shapes listing several sizes) or a ragged batch (RunRagged; Lengths).
// Every numeric field is taken as given: an out-of-range value is an error naming its
// flag, never a default.
type Request struct {
	Src    string // one program: a zoo model or an HLO file
	Models string // batch mode: comma-separated sources (--models)
	All    bool   // batch mode over the whole zoo (--all)
	// Shapes (--shapes) sizes the dynamic dimensions of every source (zoo.ParseShapes),
	// or lists one dimension's sizes (NAME=V,V,...; zoo.ParseShapeList) for one
	// shape-generic search.
	Shapes string
	// ComparePerShape: with a Shapes list, also tune each size on its own (the baseline).
	ComparePerShape bool
	Lengths         string // --lengths: tune the ragged form of a batch of these sequence lengths
	// MicroKernels: with a Shapes list, run the joint micro-kernel search (RunMicro)
	// instead of RunShapes; Out then writes its dispatch table.
	MicroKernels bool

	Chip       tpusim.ChipSpec // --chip, --chip-file, --vmem
	Strategy   string          // a Strategy's name (ParseStrategy)
	ModelDir   string          // --model: comma-separated learned model checkpoint directories
	TopK       int             // Options.TopKGraph
	KernelTopK int             // Options.TopKKernel
	ModelEvals int
	Budget     int
	Seed       int64
	Noise      float64
	Runs       int
	Workers    int
	Out        string // the tuned config file; in batch mode a directory of MODEL.json (ConfigOut)
	Force      bool   // let Out overwrite a file of another kind (OpenConfigOut)
	Store      string // the global config store's SQLite file (OpenStore)
	Policy     string // rl: the policy checkpoint directory (LoadPolicy)
	Kinds      string // comma-separated config kinds the non-XTAT strategies search (ParseKinds)
	// Fusion is the starting program's fusion rule; "" (unset): the strategy's own start.
	Fusion  compiler.FusionRule
	Staging compiler.StagingMode
	// AllowMismatch tunes with a ModelDir model trained for another chip, VMEM size or
	// simulator than the one tuned for, with a warning and Result.ChipMismatch.
	AllowMismatch bool

	// LoadModel loads a learned model checkpoint of ModelDir for chip c: the model and,
	// when it was trained for another target and allowMismatch allows it, what differs.
	// Required with ModelDir (the learned models live outside this package).
	LoadModel func(dir string, c tpusim.Chip, allowMismatch bool) (m Model, mismatch string, err error)
	// Log receives the progress, a line per program tuned and warnings; nil: discarded.
	Log io.Writer
}

// Result is what a Request ran: exactly one of Report (one program), Batch (Models or
// All), Shapes (a Shapes list) and Ragged (Lengths) is set. Its JSON is that report, the
// first two with chip_mismatch beside their fields; WriteText is its text form.
type Result struct {
	Report *Report
	Batch  *BatchReport
	Shapes *ShapesReport
	Ragged *RaggedReport
	Micro  *MicroReport // MicroKernels
	// ChipMismatch says a ModelDir model was trained for another target (AllowMismatch).
	ChipMismatch bool

	req       Request // the request run, for the text form
	shapeList zoo.ShapeList
}

// MarshalJSON encodes the report that was run (see Result).
func (r Result) MarshalJSON() ([]byte, error) {
	switch {
	case r.Report != nil:
		return json.Marshal(struct {
			*Report
			ChipMismatch bool `json:"chip_mismatch"`
		}{r.Report, r.ChipMismatch})
	case r.Batch != nil:
		return json.Marshal(struct {
			*BatchReport
			ChipMismatch bool `json:"chip_mismatch"`
		}{r.Batch, r.ChipMismatch})
	case r.Shapes != nil:
		return json.Marshal(r.Shapes)
	case r.Micro != nil:
		return json.Marshal(r.Micro)
	default:
		return json.Marshal(r.Ragged)
	}
}

// WriteText writes the report that was run as text (its WriteText); for one program with
// Out, a last line says where the tuned config was written.
func (r *Result) WriteText(w io.Writer) error {
	switch {
	case r.Report != nil:
		if err := r.Report.WriteText(w, r.req.Fusion, r.ChipMismatch); err != nil {
			return err
		}
		if r.req.Out != "" {
			fmt.Fprintf(w, "tuned config written to %s\n", r.req.Out)
		}
		return nil
	case r.Batch != nil:
		st, _ := ParseStrategy(r.req.Strategy) // valid: its canonical spelling
		return r.Batch.WriteText(w, st, r.req.Budget)
	case r.Shapes != nil:
		return r.Shapes.WriteText(w, r.shapeList)
	case r.Micro != nil:
		return r.Micro.WriteText(w, r.shapeList, r.req.Out)
	default:
		return r.Ragged.WriteText(w, r.req.Budget)
	}
}

// CheckShapes checks a --shapes value of tune as the flag is set: a value of every command
// (zoo.ParseShapes) or a list of one dimension's sizes (zoo.ParseShapeList). The error is
// the parser's that fits the value best.
func CheckShapes(s string) error {
	_, errList := zoo.ParseShapeList(s)
	if errList == nil {
		return nil
	}
	if _, err := zoo.ParseShapes(s); err != nil {
		if strings.Count(s, "=") > 1 {
			return err
		}
		return errList
	}
	return nil
}

// Run runs the request (see Request). When ctx is cancelled it stops, writes nothing for
// the program being tuned, and returns an error wrapping ctx.Err() that says what was kept
// and how to carry on.
func (q Request) Run(ctx context.Context) (*Result, error) {
	if q.Log == nil {
		q.Log = io.Discard
	}
	srcs, batch, err := q.sources()
	if err != nil {
		return nil, err
	}
	c, err := q.Chip.ResolveContext(ctx)
	if err != nil {
		return nil, err
	}
	opts := q.options(c)
	if q.Lengths != "" {
		return q.runRagged(ctx, srcs, batch, opts)
	}
	if list, ok := shapeList(q.Shapes); ok {
		if q.MicroKernels {
			return q.runMicro(ctx, srcs, batch, list, opts)
		}
		return q.runShapes(ctx, srcs, batch, list, opts)
	}
	if q.MicroKernels {
		return nil, errors.New("--micro-kernels: give --shapes a list or range of sizes (e.g. seq=uniform:1-512:16:1)")
	}
	if q.ComparePerShape {
		return nil, errors.New("--compare-per-shape: give --shapes a list of sizes (e.g. seq=64,128,256)")
	}
	if q.Shapes != "" {
		if _, err := zoo.ParseShapes(q.Shapes); err != nil {
			return nil, fmt.Errorf("--shapes: %w", err)
		}
		opts.Shapes = q.Shapes
	}
	if err := opts.Validate(); err != nil {
		return nil, flagError(err)
	}
	var out *ConfigOut
	if q.Out != "" {
		if out, err = OpenConfigOut("--out", q.Out, batch, q.Force); err != nil {
			return nil, err
		}
		defer out.Close()
	}
	st, _ := ParseStrategy(q.Strategy) // valid: its canonical spelling
	kinds, err := ParseKinds(q.Kinds)
	if err != nil {
		return nil, err
	}
	kinds, policy, err := SearchKinds(st, kinds, q.Policy)
	if err != nil {
		return nil, err
	}
	if kinds != nil {
		opts.Kinds = kinds
	}
	opts.Policy = policy
	res := &Result{req: q}
	if q.ModelDir != "" {
		if opts.GraphModel, opts.KernelModel, res.ChipMismatch, err = q.loadModels(c); err != nil {
			return nil, err
		}
	}
	if q.Store != "" {
		s, err := OpenStore(q.Store, c.Name, tpusim.Version)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		opts.Store = s
	}
	bars := &progressBars{w: q.Log}
	opts.Progress = bars.update
	var writeErr error
	finished := 0
	b, err := RunMany(ctx, srcs, opts, func(r *Report) {
		finished++
		bars.done()
		r.WriteDone(q.Log)
		if out != nil && writeErr == nil {
			writeErr = out.Write(r)
		}
	})
	if err != nil {
		bars.done()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil, q.interrupted(srcs, finished, batch, err)
		}
		return nil, err
	}
	if writeErr != nil {
		return nil, writeErr
	}
	if batch {
		res.Batch = b
	} else {
		res.Report = b.Reports[0]
	}
	return res, nil
}

// sources returns the programs to tune and whether that is batch mode (Models or All).
func (q Request) sources() ([]string, bool, error) {
	if q.Src != "" {
		if q.Models != "" || q.All {
			return nil, false, errors.New("give exactly one of SRC, --models or --all")
		}
		return []string{q.Src}, false, nil
	}
	if q.Models == "" && !q.All {
		return nil, false, errors.New("give exactly one of SRC, --models or --all")
	}
	srcs, err := zoo.Select(q.Models, q.All)
	return srcs, true, err
}

// options assembles the run's Options for chip c from the request's numeric flags, on
// the Defaults of the rest.
func (q Request) options(c tpusim.Chip) Options {
	opts := Defaults()
	opts.Chip, opts.Strategy, opts.Budget, opts.Seed, opts.Workers, opts.Noise, opts.Runs = c, Strategy(q.Strategy), q.Budget, q.Seed, q.Workers, q.Noise, q.Runs
	opts.TopKGraph, opts.TopKKernel, opts.ModelEvals = q.TopK, q.KernelTopK, q.ModelEvals
	opts.Fusion, opts.Staging = q.Fusion, q.Staging
	return opts
}

// interrupted is the error of a run stopped by its context (Ctrl-C): what was kept and
// how to carry on. It wraps err (context.Canceled).
func (q Request) interrupted(srcs []string, finished int, batch bool, err error) error {
	if !batch {
		return fmt.Errorf("interrupted (%w): nothing was written; re-run the same command to tune %s again (the same seed gives the same result)", err, srcs[0])
	}
	kept := ""
	if q.Out != "" && finished > 0 {
		kept += ", their configs are in " + q.Out
	}
	if q.Store != "" && finished > 0 {
		kept += ", their results in the store " + q.Store
	}
	return fmt.Errorf("interrupted (%w): %d of %d programs finished%s, nothing was written for %s; to tune the rest with the same results, re-run the same command with --models %s in place of --models/--all",
		err, finished, len(srcs), kept, srcs[finished], strings.Join(srcs[finished:], ","))
}

// optionFlag names the command-line flag of an Options field a Request sets.
func optionFlag(field string) (string, bool) {
	switch field {
	case "Strategy", "Budget", "Runs", "Workers", "Noise", "Fusion":
		return "--" + strings.ToLower(field), true
	case "TopKGraph":
		return "--topk", true
	case "TopKKernel":
		return "--kernel-topk", true
	case "ModelEvals":
		return "--model-evals", true
	}
	return "", false
}

// flagError rewrites an invalid option (*OptionError) as an error naming its flag in the
// command line's one style, `--FLAG "VALUE": want WANT`; other errors pass through.
func flagError(err error) error {
	var oe *OptionError
	if errors.As(err, &oe) {
		if flag, ok := optionFlag(oe.Field); ok {
			v := oe.Value // a string option's value is quoted already
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			return fmt.Errorf("%s %q: want %s", flag, v, oe.Want)
		}
	}
	return err
}

// loadModels loads the comma-separated checkpoints of ModelDir and gives each its role by
// what it predicts: an absolute model (fusion, layout) scores whole programs, a relative
// one (tile, flags) ranks a kernel's options. A model trained for another chip, VMEM size
// or simulator than c and tpusim's is refused unless AllowMismatch, which warns on Log and
// returns mismatch.
func (q Request) loadModels(c tpusim.Chip) (graph, kernel Model, mismatch bool, err error) {
	if q.LoadModel == nil {
		return nil, nil, false, errors.New("--model: no model loader (Request.LoadModel) is set")
	}
	var models []Model
	var names []string
	for _, dir := range strings.Split(q.ModelDir, ",") {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		m, msg, err := q.LoadModel(dir, c, q.AllowMismatch)
		if err != nil {
			return nil, nil, false, fmt.Errorf("--model %s: %w", dir, err)
		}
		if msg != "" {
			fmt.Fprintf(q.Log, "WARNING: %s: its predictions are not validated for this target\n", msg)
			mismatch = true
		}
		models, names = append(models, m), append(names, dir)
	}
	graph, kernel, err = AssignRoles(models, names)
	if err != nil {
		return nil, nil, false, fmt.Errorf("--model: %w", err)
	}
	return graph, kernel, mismatch, nil
}

// runRagged runs `tune SRC --lengths L,L,...`: the ragged form tuned (RunRagged).
func (q Request) runRagged(ctx context.Context, srcs []string, batch bool, opts Options) (*Result, error) {
	switch {
	case batch:
		return nil, errors.New("--lengths tunes one SRC, not --models or --all")
	case q.Shapes != "":
		return nil, errors.New("--lengths sizes every sequence itself: drop --shapes")
	case q.ComparePerShape:
		return nil, errors.New("--compare-per-shape goes with a --shapes list, not --lengths")
	case q.Out != "":
		return nil, errors.New("--out: a ragged run's config is in --json's config (tpucost sim reads no ragged config)")
	case q.Store != "":
		return nil, errors.New("--store: a ragged run does not read or record a config store")
	case q.ModelDir != "":
		return nil, errors.New("--model: a ragged run measures every candidate on the simulator")
	}
	if err := q.shapeRunKinds(&opts); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, flagError(err)
	}
	lengths, err := ragged.ParseLengths(q.Lengths)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	bars := &progressBars{w: q.Log, perPhase: true}
	opts.Progress = bars.update
	rep, err := RunRagged(ctx, srcs[0], lengths, opts)
	bars.done()
	var oe *OptionError
	if errors.As(err, &oe) {
		return nil, flagError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	return &Result{Ragged: rep, req: q}, nil
}

// shapeRunKinds applies Kinds to a shape-generic or ragged run (whose xtat runs as sa,
// so Kinds applies to it too) and refuses Policy (the rl strategy is not shape-generic).
func (q Request) shapeRunKinds(opts *Options) error {
	if q.Policy != "" {
		return errors.New("--policy: a shape-generic run does not take the rl strategy")
	}
	kinds, err := ParseKinds(q.Kinds)
	if err != nil {
		return err
	}
	if len(kinds) > 0 {
		opts.Kinds = kinds
	}
	return nil
}

// shapeList returns the sizes of a --shapes value that lists several of one dimension.
func shapeList(s string) (zoo.ShapeList, bool) {
	l, err := zoo.ParseShapeList(s)
	return l, err == nil && len(l.Values) > 1
}

// runShapes runs `tune SRC --shapes NAME=V,V,...`: one shape-generic search (RunShapes),
// with ComparePerShape the per-size baseline.
func (q Request) runShapes(ctx context.Context, srcs []string, batch bool, list zoo.ShapeList, opts Options) (*Result, error) {
	switch {
	case batch:
		return nil, errors.New("--shapes with a list of sizes tunes one SRC, not --models or --all")
	case q.Out != "":
		return nil, errors.New("--out: a shape-generic run has one config per size: they are in --json's shapes[].config")
	case q.Store != "":
		return nil, errors.New("--store: a shape-generic run does not read or record a config store")
	}
	if err := q.shapeRunKinds(&opts); err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, flagError(err)
	}
	if q.ModelDir != "" {
		var err error
		if opts.GraphModel, opts.KernelModel, _, err = q.loadModels(opts.Chip); err != nil {
			return nil, err
		}
	}
	bars := &progressBars{w: q.Log, perPhase: true}
	opts.Progress = bars.update
	rep, err := RunShapes(ctx, srcs[0], list, opts, q.ComparePerShape)
	bars.done()
	if err != nil {
		return nil, flagError(err)
	}
	return &Result{Shapes: rep, req: q, shapeList: list}, nil
}

// StrategyNames lists the strategies' names for help and messages: "xtat, exhaustive, ...".
func StrategyNames() string {
	var names []string
	for _, st := range Strategies() {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

// progressBars shows a run's Progress on w (internal/progress: a bar on a terminal, a
// line every few seconds otherwise): a bar per program counting its measurements against
// the budget, with the phase and the best time so far, and, while a learned model scores
// candidates, a bar of the programs scored against the most it will score. With perPhase
// (shape-generic and ragged runs, whose per-shape baseline tunes program after program)
// each phase has a bar of its own.
type progressBars struct {
	w        io.Writer
	perPhase bool
	bar      *progress.Reporter
	key      string // what bar counts: program, phase (perPhase) and whether scoring
}

// update shows p (an Options.Progress).
func (b *progressBars) update(p Progress) {
	desc, total, done := "tune "+p.Program, p.Budget, p.Measurements
	if b.perPhase {
		desc += " [" + p.Phase + "]"
	}
	status := ""
	if !b.perPhase {
		best := "-"
		if p.BestNs > 0 && p.BestNs < 1e300 {
			best = fmt.Sprintf("%.0f ns", p.BestNs)
		}
		status = fmt.Sprintf("[%s] best %s", p.Phase, best)
	}
	if p.ScoreBudget > 0 {
		desc += " model"
		total, done, status = p.ScoreBudget, p.Scored, "scored by the model"
	}
	if b.bar != nil && desc != b.key {
		b.done()
	}
	if b.bar == nil {
		b.bar, b.key = progress.New(b.w, desc, int64(total)), desc
	}
	b.bar.Update(int64(done), status)
}

// done finishes the current bar, if any.
func (b *progressBars) done() {
	if b.bar != nil {
		b.bar.Done()
		b.bar = nil
	}
}
