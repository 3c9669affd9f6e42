package validate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/tpusim"
)

// DefaultMinConfigs is how many measured configurations a kernel needs to be scored.
// Kendall's τ over two or three configurations is +1 or −1 by chance as often as not, and
// the op-tuning files hold kernels with 2 to 579 configurations; the reviewer's baseline
// numbers of issue 19 were taken over the kernels with at least 10.
const DefaultMinConfigs = 10

// TilePredictor scores the replayed runs of a kernel (lower is faster): a learned model's
// zero-shot predictions. It returns one value per run of k.Runs.
type TilePredictor func(k TileKernel) ([]float64, error)

// Options configure Validate.
type Options struct {
	Chip tpusim.Chip
	// MinConfigs: kernels with fewer replayed configurations are replayed and listed but
	// not scored (0: DefaultMinConfigs). At least 2.
	MinConfigs int
	// Learned, when set, scores the tile runs with a learned model ("learned").
	Learned TilePredictor
}

// Predictors holds every predictor's Scores over one set of kernels; a nil entry was not
// run. Default is the compiler's own choice: its Top1Slowdown is the baseline to beat.
type Predictors struct {
	Sim        *Scores        `json:"sim,omitempty"`
	Analytical *Scores        `json:"analytical,omitempty"`
	Learned    *Scores        `json:"learned,omitempty"`
	Default    *DefaultScores `json:"default,omitempty"`
}

// DefaultScores scores the configuration the compiler chose (the run marked default).
type DefaultScores struct {
	Top1Slowdown float64 `json:"top1_slowdown"`
}

// KernelSummary is one kernel's line of the report.
type KernelSummary struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Configs int    `json:"configs"`
	Approx  int    `json:"approx_configs"` // configs whose mapping is approximate
	Scored  bool   `json:"scored"`
	Predictors
}

// TileReport is the tile half of a Report.
type TileReport struct {
	Kernels       int             `json:"kernels"`        // kernels with replayed runs
	ScoredKernels int             `json:"scored_kernels"` // of which with ≥ MinConfigs runs
	MinConfigs    int             `json:"min_configs"`
	Configs       int             `json:"configs"`        // replayed runs
	ApproxConfigs int             `json:"approx_configs"` // of which approximately mapped
	Unmapped      []Unmapped      `json:"unmapped"`
	Skipped       Skipped         `json:"skipped"`
	PerKernel     []KernelSummary `json:"per_kernel"`
	Predictors
	// Replayed is every kernel's replay, for plots (not serialized).
	Replayed []TileKernel `json:"-"`
}

// LayoutReport is the layout half of a Report: every module's layout runs, compiled and
// timed whole; each module is one group of the predictors' scores.
type LayoutReport struct {
	Programs int            `json:"programs"` // modules with replayed runs
	Configs  int            `json:"configs"`  // replayed runs
	Unmapped []Unmapped     `json:"unmapped"`
	Replayed []LayoutReplay `json:"per_program"`
	Predictors
}

// Report is what Validate measured: the replay of the files' tile runs and of their
// layout runs (tile_replay and layout_replay: a key "tile" is a kernel's tile everywhere in
// tpucost's JSON).
type Report struct {
	Chip      string        `json:"chip"`
	Simulator string        `json:"simulator"`
	Files     []string      `json:"files"`
	Tile      *TileReport   `json:"tile_replay,omitempty"`
	Layout    *LayoutReport `json:"layout_replay,omitempty"`
}

// Validate replays every timed run of the tuning files (tpugraphs.ReadTuningFile) on
// o.Chip and scores the simulator, the analytical model and, when set, a learned model
// (tile runs) against the measurements: tile runs kernel by kernel (ReplayTile), layout
// runs module by module, each compiled and timed whole (ReplayLayout).
func Validate(files []string, o Options) (*Report, error) {
	if o.MinConfigs == 0 {
		o.MinConfigs = DefaultMinConfigs
	}
	if o.MinConfigs < 2 {
		return nil, fmt.Errorf("min configs must be at least 2, got %d", o.MinConfigs)
	}
	if len(files) == 0 {
		return nil, errors.New("no tuning files")
	}
	rep := &Report{Chip: o.Chip.Name, Simulator: tpusim.Version, Files: files}
	var tile TileReport
	tile.MinConfigs = o.MinConfigs
	hasTile := false
	var layout LayoutReport
	var lgroups []Group
	var lsim, lan [][]float64
	for _, f := range files {
		mts, err := tpugraphs.ReadTuningFile(f)
		if err != nil {
			return nil, err
		}
		for mi, mt := range mts {
			hasTileRuns, hasLayoutRuns := runKinds(mt)
			if hasLayoutRuns {
				lr, err := ReplayLayout(mt, o.Chip)
				if err != nil {
					return nil, fmt.Errorf("%s: module %d: %w", f, mi, err)
				}
				layout.Unmapped = append(layout.Unmapped, lr.Unmapped...)
				if len(lr.Runs) > 0 {
					layout.Replayed = append(layout.Replayed, lr)
					layout.Programs++
					layout.Configs += len(lr.Runs)
				}
				if len(lr.Runs) >= 2 {
					g, s, a := columns(lr.Program, lr.Runs)
					lgroups, lsim, lan = append(lgroups, g), append(lsim, s), append(lan, a)
				}
			}
			if !hasTileRuns {
				continue
			}
			hasTile = true
			k, err := ReplayTile(mt, o.Chip, &tile.Skipped)
			if err != nil {
				if errors.Is(err, ErrUnmapped) {
					tile.Unmapped = append(tile.Unmapped, Unmapped{Name: fmt.Sprintf("%s: module %d (%s)", f, mi, mt.Module.Name), Reason: err.Error()})
					continue
				}
				return nil, fmt.Errorf("%s: module %d: %w", f, mi, err)
			}
			tile.Unmapped = append(tile.Unmapped, k.Unmapped...)
			if len(k.Runs) > 0 {
				tile.Replayed = append(tile.Replayed, k)
			}
		}
	}
	if hasTile {
		if err := tile.score(o); err != nil {
			return nil, err
		}
		rep.Tile = &tile
	}
	if layout.Programs > 0 || len(layout.Unmapped) > 0 {
		if len(lgroups) > 0 {
			var err error
			if layout.Predictors, err = predictors(lgroups, lsim, lan, nil); err != nil {
				return nil, fmt.Errorf("layout: %w", err)
			}
		}
		rep.Layout = &layout
	}
	return rep, nil
}

// runKinds reports whether mt has tile runs and layout runs.
func runKinds(mt tpugraphs.ModuleTuning) (tile, layout bool) {
	for _, r := range mt.Runs {
		tile, layout = tile || r.Tile != nil, layout || r.Layout != nil
	}
	return tile, layout
}

// score fills the report's predictors and per-kernel lines from its replayed kernels.
func (t *TileReport) score(o Options) error {
	var groups []Group
	var sim, an, learned [][]float64
	for _, k := range t.Replayed {
		t.Kernels++
		t.Configs += len(k.Runs)
		g, s, a := columns(k.Name, k.Runs)
		approx := 0
		for _, r := range k.Runs {
			if r.Approx != "" {
				approx++
			}
		}
		t.ApproxConfigs += approx
		ks := KernelSummary{Name: k.Name, Kind: k.Kind, Configs: len(k.Runs), Approx: approx, Scored: len(k.Runs) >= o.MinConfigs}
		var l []float64
		if o.Learned != nil {
			var err error
			if l, err = o.Learned(k); err != nil {
				return fmt.Errorf("learned model on %s: %w", k.Name, err)
			}
			if len(l) != len(k.Runs) {
				return fmt.Errorf("learned model on %s: %d predictions for %d runs", k.Name, len(l), len(k.Runs))
			}
		}
		if len(k.Runs) >= 2 {
			var kl [][]float64
			if l != nil {
				kl = [][]float64{l}
			}
			var err error
			if ks.Predictors, err = predictors([]Group{g}, [][]float64{s}, [][]float64{a}, kl); err != nil {
				return err
			}
		}
		t.PerKernel = append(t.PerKernel, ks)
		if !ks.Scored {
			continue
		}
		t.ScoredKernels++
		groups = append(groups, g)
		sim, an = append(sim, s), append(an, a)
		if l != nil {
			learned = append(learned, l)
		}
	}
	sort.SliceStable(t.PerKernel, func(i, j int) bool { return t.PerKernel[i].Configs > t.PerKernel[j].Configs })
	if len(groups) == 0 {
		return nil
	}
	var err error
	t.Predictors, err = predictors(groups, sim, an, learned)
	return err
}

// predictors scores the simulator, the analytical model, the learned model (when
// learned is not nil) and the compiler's default over groups.
func predictors(groups []Group, sim, an, learned [][]float64) (Predictors, error) {
	var p Predictors
	s, err := Score(groups, sim)
	if err != nil {
		return p, fmt.Errorf("sim: %w", err)
	}
	a, err := Score(groups, an)
	if err != nil {
		return p, fmt.Errorf("analytical: %w", err)
	}
	p.Sim, p.Analytical = &s, &a
	if learned != nil {
		l, err := Score(groups, learned)
		if err != nil {
			return p, fmt.Errorf("learned: %w", err)
		}
		p.Learned = &l
	}
	if d := DefaultSlowdown(groups); !math.IsNaN(d) {
		p.Default = &DefaultScores{Top1Slowdown: d}
	}
	return p, nil
}

// KernelScorer scores planned choices of a compiled kernel: a learned model's predictor
// (gnn.Predictor), lower is faster.
type KernelScorer interface {
	ScoreKernel(k *compiler.Kernel, choices []cost.Planned) ([]float64, error)
}

// Learned is the TilePredictor of a learned model: each replayed run's mapped tile, as
// tpucost's compiler would plan it (the TPU's grid of boxes included), is featurized and
// scored zero-shot, the kernel as its fused computation.
func Learned(s KernelScorer) TilePredictor {
	return func(k TileKernel) ([]float64, error) {
		kern := &compiler.Kernel{Name: k.Name, Key: "tpugraphs:" + k.Name, Kind: k.Kind, Comp: k.Comp, Info: k.Info, Weight: 1}
		choices := make([]cost.Planned, len(k.Runs))
		for i, r := range k.Runs {
			choices[i] = r.planned
		}
		return s.ScoreKernel(kern, choices)
	}
}
