package gnn

import (
	"fmt"
	"math"
	"sort"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
)

// KernelTimer times a kernel under a configuration: the ground truth (simulated) and the
// analytical estimate, in ns. gnn does not simulate; callers pass a timer backed by
// tpusim.
type KernelTimer func(k *compiler.Kernel, tile cost.Tile, flags cost.Flags) (simNs, analyticalNs float64, err error)

// OptionReport is one configuration of a kernel as ranked by a model.
type OptionReport struct {
	Rank  int     `json:"rank"` // 1-based, by the model
	Tile  string  `json:"tile"`
	Flags string  `json:"flags"`
	Score float64 `json:"score"` // ns for absolute models
	SimNs float64 `json:"sim_ns"`
}

// KernelReport is one kernel of a ProgramReport.
type KernelReport struct {
	Name         string  `json:"name"`
	Kind         string  `json:"kind"`
	Key          string  `json:"key"`
	Tile         string  `json:"tile"`
	Flags        string  `json:"flags"`
	PredictedNs  float64 `json:"predicted_ns,omitempty"` // absolute models
	SimNs        float64 `json:"sim_ns"`
	AnalyticalNs float64 `json:"analytical_ns"`
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
	Loss              Loss           `json:"loss"`
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
func ReportProgram(p *Predictor, prog *compiler.Program, topK int, timer KernelTimer) (*ProgramReport, error) {
	m := p.Model()
	r := &ProgramReport{Program: prog.Name, Task: string(m.Task), Loss: m.Loss, Relative: m.Relative()}
	// Distinct kernels and their requests.
	type keyed struct {
		first   int // index in prog.Kernels
		tiles   []cost.Tile
		flags   []cost.Flags
		current int // index of the compiled config among the options, or -1
	}
	byKey := map[string]*keyed{}
	var order []string
	for i, k := range prog.Kernels {
		if _, ok := byKey[k.Key]; ok {
			continue
		}
		kd := &keyed{first: i, tiles: []cost.Tile{k.Tile}, flags: []cost.Flags{k.Flags}, current: 0}
		if m.Task.Relative() {
			kd.tiles, kd.flags, kd.current = options(m, k, p.target)
		}
		byKey[k.Key] = kd
		order = append(order, k.Key)
	}
	reqs := make([]scoreRequest, len(order))
	for i, key := range order {
		kd := byKey[key]
		reqs[i] = scoreRequest{Kernel: prog.Kernels[kd.first], Tiles: kd.tiles, Flags: kd.flags}
	}
	scores, err := p.scoreRequests(reqs)
	if err != nil {
		return nil, err
	}
	// Per key: absolute prediction of the compiled config, ranked options.
	type result struct {
		pred    float64
		options []OptionReport
		count   int
		pickNs  float64
		bestNs  float64
		curRank int
	}
	results := map[string]*result{}
	for i, key := range order {
		kd := byKey[key]
		k := prog.Kernels[kd.first]
		res := &result{pred: math.NaN()}
		s := scores[i]
		if !m.Relative() && kd.current >= 0 {
			res.pred = s[kd.current]
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
				sim, _, err := timer(k, kd.tiles[j], kd.flags[j])
				if err != nil {
					sim = math.Inf(1)
				}
				res.bestNs = math.Min(res.bestNs, sim)
				if rank == 0 {
					res.pickNs = sim
				}
				if j == kd.current {
					res.curRank = rank + 1
				}
				if rank < topK {
					res.options = append(res.options, OptionReport{Rank: rank + 1, Tile: kd.tiles[j].String(), Flags: kd.flags[j].String(), Score: s[j], SimNs: sim})
				}
			}
		}
		results[key] = res
	}
	for _, k := range prog.Kernels {
		sim, an, err := timer(k, k.Tile, k.Flags)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		res := results[k.Key]
		kr := KernelReport{Name: k.Name, Kind: k.Kind, Key: k.Key, Tile: k.Tile.String(), Flags: k.Flags.String(), SimNs: sim, AnalyticalNs: an}
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

// options lists the configurations a relative model chooses among for kernel k: every
// valid tile with k's flags (tile task) or every valid flag set with k's tile (flags
// task), and the index of k's own configuration among them (-1 if absent).
func options(m *Model, k *compiler.Kernel, t cost.Target) ([]cost.Tile, []cost.Flags, int) {
	var tiles []cost.Tile
	var flags []cost.Flags
	if m.Task == dataset.TaskFlags {
		for _, f := range compiler.FlagOptions(k.Info, k.Tile, t) {
			tiles, flags = append(tiles, k.Tile), append(flags, f)
		}
	} else {
		for _, tl := range k.Info.TileOptions(t, k.Flags) {
			tiles, flags = append(tiles, tl), append(flags, k.Flags)
		}
	}
	cur := -1
	for i := range tiles {
		if tiles[i].Equal(k.Tile) && flags[i] == k.Flags {
			cur = i
		}
	}
	if cur < 0 {
		tiles, flags = append(tiles, k.Tile), append(flags, k.Flags)
		cur = len(tiles) - 1
	}
	return tiles, flags, cur
}
