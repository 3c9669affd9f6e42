package eval

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
)

// KernelTimer times a planned kernel choice: the ground truth (simulated) and the
// analytical estimate, in ns. gnn does not simulate; callers pass a timer backed by
// tpusim (tpusim.TimeChoice).
type KernelTimer func(c cost.Planned) (simNs, analyticalNs float64, err error)

// OptionReport is one configuration of a kernel as ranked by a model.
type OptionReport struct {
	Rank  int       `json:"rank"` // 1-based, by the model
	Tile  cost.Tile `json:"tile"` // as compile and sim --json: [8,128,512]
	Flags string    `json:"flags"`
	Score float64   `json:"score"` // ns for absolute models
	// Spread is an ensemble's spread of the score (gnn/ensemble.go); absent for one model.
	Spread *float64 `json:"spread,omitempty"`
	SimNs  float64  `json:"sim_ns"`
}

// KernelReport is one kernel of a ProgramReport.
type KernelReport struct {
	Name        string    `json:"name"`
	Kind        string    `json:"kind"`
	Key         string    `json:"key"`
	Tile        cost.Tile `json:"tile"` // as compile and sim --json: [8,128,512]
	Flags       string    `json:"flags"`
	PredictedNs float64   `json:"predicted_ns,omitempty"` // absolute models
	// Spread is an ensemble's spread of the prediction (absolute models: of the compiled
	// config's log runtime; relative models: of the model's pick's standardized score);
	// absent for one model.
	Spread       *float64 `json:"spread,omitempty"`
	SimNs        float64  `json:"sim_ns"`
	AnalyticalNs float64  `json:"analytical_ns"`
	// Relative tasks: the kernel's options (tiles with its flags for the tile task, flags
	// with its tile for the flags task) ranked by the model, the top few listed.
	Options      []OptionReport `json:"options,omitempty"`
	OptionCount  int            `json:"option_count,omitempty"`
	ModelPickNs  float64        `json:"model_pick_ns,omitempty"` // simulated time of the model's top option
	BestOptionNs float64        `json:"best_option_ns,omitempty"`
	CurrentRank  int            `json:"current_rank,omitempty"` // the model's rank of the compiled config
}

// ProgramReport compares a model's predictions with the simulator on one program.
type ProgramReport struct {
	Program           string         `json:"program"`
	Task              string         `json:"task"`
	Loss              gnn.Loss       `json:"loss"`
	Relative          bool           `json:"relative"`
	Kernels           []KernelReport `json:"kernels"`
	PredictedTotalNs  float64        `json:"predicted_total_ns,omitempty"` // absolute models
	SimTotalNs        float64        `json:"sim_total_ns"`
	AnalyticalTotalNs float64        `json:"analytical_total_ns"`
	// Relative tasks: the program's simulated time with every kernel at the model's top
	// option, and at the best option.
	ModelPickTotalNs  float64 `json:"model_pick_total_ns,omitempty"`
	BestOptionTotalNs float64 `json:"best_option_total_ns,omitempty"`
	// ChipMismatch is set by callers that predict for another target than the model's
	// training data's (tpucost predict --allow-mismatch).
	ChipMismatch bool `json:"chip_mismatch"`
}

// ReportProgram predicts every kernel of prog with p and times it with timer: the
// compiled configuration's predicted time (absolute models) beside its simulated and
// analytical times, and for models of a relative task (tile, flags) every kernel's
// options ranked by the model with the topK first listed and timed. Kernels with the
// same key are scored once.
func ReportProgram(p *gnn.Predictor, prog *compiler.Program, topK int, timer KernelTimer) (*ProgramReport, error) {
	m := p.Model()
	r := &ProgramReport{Program: prog.Name, Task: string(m.Task), Loss: m.Loss, Relative: m.Relative()}
	// Distinct kernels and their requests.
	type keyed struct {
		first   int // index in prog.Kernels
		choices []cost.Planned
		current int // index of the compiled config among the options, or -1
	}
	byKey := map[string]*keyed{}
	var order []string
	for i, k := range prog.Kernels {
		if _, ok := byKey[k.Key]; ok {
			continue
		}
		kd := &keyed{first: i, choices: []cost.Planned{k.Choice}, current: 0}
		if m.Task.Relative() {
			kd.choices, kd.current = options(m, k, p.Target())
		}
		byKey[k.Key] = kd
		order = append(order, k.Key)
	}
	reqs := make([]gnn.ScoreRequest, len(order))
	for i, key := range order {
		kd := byKey[key]
		reqs[i] = gnn.ScoreRequest{Kernel: prog.Kernels[kd.first], Choices: kd.choices}
	}
	scores, spreads, err := p.ScoreKernels(reqs)
	if err != nil {
		return nil, err
	}
	// Per key: absolute prediction of the compiled config, ranked options.
	type result struct {
		pred    float64
		options []OptionReport
		count   int
		spread  *float64
		pickNs  float64
		bestNs  float64
		curRank int
	}
	results := map[string]*result{}
	for i, key := range order {
		kd := byKey[key]
		res := &result{pred: math.NaN()}
		s := scores[i]
		sp := spreads[i]
		if !m.Relative() && kd.current >= 0 {
			res.pred = s[kd.current]
			if sp != nil {
				res.spread = ptrFloat(sp[kd.current])
			}
		}
		if m.Task.Relative() {
			idx := make([]int, len(s))
			for j := range idx {
				idx[j] = j
			}
			sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] < s[idx[b]] })
			res.count = len(s)
			res.bestNs = math.Inf(1)
			for rank, j := range idx {
				sim, _, err := timer(kd.choices[j])
				if err != nil {
					sim = math.Inf(1)
				}
				res.bestNs = math.Min(res.bestNs, sim)
				if rank == 0 {
					res.pickNs = sim
					if sp != nil {
						res.spread = ptrFloat(sp[j])
					}
				}
				if j == kd.current {
					res.curRank = rank + 1
				}
				if rank < topK {
					c := kd.choices[j].Config
					o := OptionReport{Rank: rank + 1, Tile: append(cost.Tile{}, c.Tile...), Flags: c.Flags.String(), Score: s[j], SimNs: sim}
					if sp != nil {
						o.Spread = ptrFloat(sp[j])
					}
					res.options = append(res.options, o)
				}
			}
		}
		results[key] = res
	}
	for _, k := range prog.Kernels {
		sim, an, err := timer(k.Choice)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		res := results[k.Key]
		kr := KernelReport{Name: k.Name, Kind: k.Kind, Key: k.Key, Tile: append(cost.Tile{}, k.Choice.Config.Tile...), Flags: k.Choice.Config.Flags.String(), SimNs: sim, AnalyticalNs: an, Spread: res.spread}
		r.SimTotalNs += sim
		r.AnalyticalTotalNs += an
		if !m.Relative() {
			kr.PredictedNs = res.pred
			r.PredictedTotalNs += res.pred
		}
		if m.Task.Relative() {
			kr.Options, kr.OptionCount, kr.ModelPickNs, kr.BestOptionNs, kr.CurrentRank = res.options, res.count, res.pickNs, res.bestNs, res.curRank
			r.ModelPickTotalNs += res.pickNs
			r.BestOptionTotalNs += res.bestNs
		}
		r.Kernels = append(r.Kernels, kr)
	}
	return r, nil
}

// options lists the configurations a relative model chooses among for kernel k, planned
// for t: every valid tile with k's flags (tile task) or every valid flag set with k's tile
// (flags task), and the index of k's own configuration among them (-1 if absent).
func options(m *gnn.Model, k *compiler.Kernel, t cost.Target) ([]cost.Planned, int) {
	var opts []cost.Planned
	own, err := k.Choice.For(t)
	if m.Task == dataset.TaskFlags {
		if err == nil {
			for _, f := range own.FlagOptions() {
				if c, err := own.WithFlags(f); err == nil {
					opts = append(opts, c)
				}
			}
		}
	} else {
		opts = k.Info.Options(k.Key, t, k.Choice.Config.Flags)
	}
	cur := -1
	for i, c := range opts {
		if c.Config.Tile.Equal(k.Choice.Config.Tile) && c.Config.Flags == k.Choice.Config.Flags {
			cur = i
		}
	}
	if cur < 0 {
		opts = append(opts, k.Choice)
		cur = len(opts) - 1
	}
	return opts, cur
}

func ptrFloat(x float64) *float64 { return &x }

// WriteText writes r as text (tpucost predict): for an absolute model a line per kernel
// with its predicted, simulated and analytical times; for a tile or flags model a line
// per kernel with its options ranked by the model; then a summary on chip (the chip's
// name, which r does not record).
func (r *ProgramReport) WriteText(out io.Writer, chip string) error {
	w := table(out)
	if !r.Relative {
		fmt.Fprintln(w, "KERNEL\tKIND\tTILE\tFLAGS\tPRED_NS\tSIM_NS\tANALYTICAL_NS\tPRED_ERR\t")
		for _, k := range r.Kernels {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%+.1f%%\t\n", k.Name, k.Kind, k.Tile, k.Flags, k.PredictedNs, k.SimNs, k.AnalyticalNs, 100*(k.PredictedNs-k.SimNs)/k.SimNs)
		}
		fmt.Fprintf(w, "total\t\t\t\t%.0f\t%.0f\t%.0f\t%+.1f%%\t\n", r.PredictedTotalNs, r.SimTotalNs, r.AnalyticalTotalNs, 100*(r.PredictedTotalNs-r.SimTotalNs)/r.SimTotalNs)
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if r.Task == "tile" || r.Task == "flags" {
		w = table(out)
		fmt.Fprintln(w, "KERNEL\tCURRENT\tSIM_NS\tRANK\tOPTIONS\tMODEL_TOP (sim ns)\tPICK_NS\tBEST_NS\t")
		for _, k := range r.Kernels {
			top := ""
			for i, opt := range k.Options {
				if i > 0 {
					top += ", "
				}
				top += fmt.Sprintf("%s %s (%.0f)", opt.Tile, opt.Flags, opt.SimNs)
			}
			fmt.Fprintf(w, "%s\t%s %s\t%.0f\t%d\t%d\t%s\t%.0f\t%.0f\t\n", k.Name, k.Tile, k.Flags, k.SimNs, k.CurrentRank, k.OptionCount, top, k.ModelPickNs, k.BestOptionNs)
		}
		fmt.Fprintf(w, "total\t\t%.0f\t\t\t\t%.0f\t%.0f\t\n", r.SimTotalNs, r.ModelPickTotalNs, r.BestOptionTotalNs)
		if err := w.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s on %s, %s model (%s): %d kernels, simulated %.1f us, analytical %.1f us", r.Program, chip, r.Task, r.Loss, len(r.Kernels), r.SimTotalNs/1e3, r.AnalyticalTotalNs/1e3)
	if !r.Relative {
		fmt.Fprintf(out, ", predicted %.1f us", r.PredictedTotalNs/1e3)
	}
	if r.Task == "tile" || r.Task == "flags" {
		fmt.Fprintf(out, ", with the model's picks %.1f us (best %.1f us)", r.ModelPickTotalNs/1e3, r.BestOptionTotalNs/1e3)
	}
	_, err := fmt.Fprintln(out)
	return err
}

// table returns a tabwriter for aligned columns, as the command line's tables.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
