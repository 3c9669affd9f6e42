package tpugraphs

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
)

// RawTileWidth is the config width of rows made from raw tile runs: the four bound lists
// of a TileSizeConfig (kernel, output, input, iteration), each padded to 6 dimensions.
const RawTileWidth = 4 * rawTileDims

const rawTileDims = 6

// FeatureSetRawTile returns the feature set of rows made from raw .pb tile runs:
// tpucost's node and kernel features (features.SchemaVersion) with the TPU's raw tile as
// the config (RawTileWidth values, not tpucost's tile features). A model trained on
// tpucost's own configs must not read these rows, hence the name.
func FeatureSetRawTile() string {
	return fmt.Sprintf("tpucost-v%d+tpu-tile-v1", features.SchemaVersion)
}

// RawTileSchema is the feature schema of FeatureSetRawTile.
func RawTileSchema() features.Schema {
	s := features.CurrentSchema()
	s.Config = nil
	for _, list := range []string{"kernel_bounds", "output_bounds", "input_bounds", "iteration_bounds"} {
		for i := 0; i < rawTileDims; i++ {
			s.Config = append(s.Config, list+strconv.Itoa(i))
		}
	}
	return s
}

// PBStats counts what ModuleRows did with a file's runs.
type PBStats struct {
	Modules        int `json:"modules"`
	Runs           int `json:"runs"`
	ErrorRuns      int `json:"error_runs"`       // error set: skipped
	UntimedRuns    int `json:"untimed_runs"`     // no profile or compute_time_ns ≤ 1 (as tpu_graphs skips): skipped
	LayoutRuns     int `json:"layout_runs"`      // layout configs: not mapped to tpucost rows
	UnmappedTile   int `json:"unmapped_modules"` // tile modules tpucost cannot analyze
	ImportedRuns   int `json:"imported_runs"`
	ImportedModule int `json:"imported_modules"`
}

// ModuleRows converts the tile runs of decoded tuning data to rows in FeatureSetRawTile:
// one row per module (the tuned kernel: the fused computation of the entry's only fusion,
// else the entry computation), its graph featurized by package features for target t,
// one config per timed run ("output=2x26x4x2;kernel=-;input=-;iteration=-", with
// ";default" on the compiler's default) with the measured compute_time_ns. Runs with
// error set, without a profile or with compute_time_ns ≤ 1 are skipped (tpu_graphs' own
// loader skips the same); layout runs are counted and not mapped; so is a module that
// cost.Analyze cannot analyze. file names the source in keys and errors.
func ModuleRows(file string, mts []ModuleTuning, t cost.Target) ([]dataset.Row, PBStats, []string, error) {
	var st PBStats
	var rows []dataset.Row
	var unmapped []string
	for mi, mt := range mts {
		st.Modules++
		st.Runs += len(mt.Runs)
		var tileRuns []Run
		for _, r := range mt.Runs {
			switch {
			case r.Error:
				st.ErrorRuns++
			case !r.HasProfile || r.Profile.ComputeTimeNs <= 1:
				st.UntimedRuns++
			case r.Layout != nil:
				st.LayoutRuns++
			case r.Tile != nil:
				tileRuns = append(tileRuns, r)
			default:
				st.UntimedRuns++ // a run with no config at all
			}
		}
		if len(tileRuns) == 0 {
			continue
		}
		fc := kernelComputation(mt.Module)
		info, err := cost.Analyze(fc, t)
		if err != nil {
			st.UnmappedTile++
			unmapped = append(unmapped, fmt.Sprintf("%s: module %d (%s): %v", file, mi, mt.Module.Name, err))
			continue
		}
		row := dataset.Row{
			Program:    mt.Module.Name,
			Task:       dataset.TaskTile,
			KernelKey:  fmt.Sprintf("tpugraphs-pb:%s:%d:%016x", baseName(file), mi, mt.Fingerprint),
			KernelName: mt.Module.Name,
			Kind:       info.Kind.String(),
			Graph:      features.Kernel(fc, info, t),
		}
		for _, r := range tileRuns {
			f, err := rawTileFeatures(r.Tile)
			if err != nil {
				return nil, st, nil, fmt.Errorf("%s: module %d (%s): %w", file, mi, mt.Module.Name, err)
			}
			cfg := rawTileString(r.Tile)
			if r.IsDefault {
				cfg += ";default"
			}
			row.Configs = append(row.Configs, cfg)
			row.ConfigFeats = append(row.ConfigFeats, f)
			row.RuntimesNs = append(row.RuntimesNs, float64(r.Profile.ComputeTimeNs))
			row.AnalyticalNs = append(row.AnalyticalNs, math.NaN())
		}
		st.ImportedRuns += len(tileRuns)
		st.ImportedModule++
		rows = append(rows, row)
	}
	return rows, st, unmapped, nil
}

// kernelComputation is the computation a tile config of an op-tuning module applies to:
// the fused computation of the entry's only fusion instruction, else the entry.
func kernelComputation(m *hlo.Module) *hlo.Computation {
	var fc *hlo.Computation
	n := 0
	for _, in := range m.Entry.Instructions {
		if in.Opcode == hlo.OpFusion && in.Calls != nil {
			fc = in.Calls
			n++
		}
	}
	if n == 1 {
		return fc
	}
	return m.Entry
}

func rawTileFeatures(t *TileSizeConfig) ([]float32, error) {
	f := make([]float32, 0, RawTileWidth)
	for i, list := range [][]int64{t.KernelBounds, t.OutputBounds, t.InputBounds, t.IterationBounds} {
		if len(list) > rawTileDims {
			return nil, fmt.Errorf("tile config list %d has %d bounds, at most %d are supported", i, len(list), rawTileDims)
		}
		for _, v := range list {
			f = append(f, float32(v))
		}
		for j := len(list); j < rawTileDims; j++ {
			f = append(f, 0)
		}
	}
	return f, nil
}

func rawTileString(t *TileSizeConfig) string {
	dims := func(v []int64) string {
		if len(v) == 0 {
			return "-"
		}
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = strconv.FormatInt(x, 10)
		}
		return strings.Join(s, "x")
	}
	return "output=" + dims(t.OutputBounds) + ";kernel=" + dims(t.KernelBounds) + ";input=" + dims(t.InputBounds) + ";iteration=" + dims(t.IterationBounds)
}
