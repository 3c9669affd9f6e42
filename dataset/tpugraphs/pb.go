package tpugraphs

import (
	"errors"
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

// FeatureSetRawLayout returns the feature set of rows made from raw .pb layout runs:
// tpucost's node and kernel features of the entry computation with TpuGraphs' per-node
// layout encoding as the config (LayoutConfigWidth values per configurable node: the
// minor-to-major dims of up to 3 tensors, 6 each, −1 padded, as tpu_graphs featurizes
// them).
func FeatureSetRawLayout() string {
	return fmt.Sprintf("tpucost-v%d+tpu-layout-v1", features.SchemaVersion)
}

// RawLayoutSchema is the feature schema of FeatureSetRawLayout (Config per node).
func RawLayoutSchema() features.Schema {
	s := features.CurrentSchema()
	s.Config = nil
	for t := 0; t < layoutTensors; t++ {
		for d := 0; d < rawTileDims; d++ {
			s.Config = append(s.Config, fmt.Sprintf("tensor%d_dim%d", t, d))
		}
	}
	return s
}

// layoutTensors is the number of tensors per node tpu_graphs' layout encoding holds.
const layoutTensors = 3

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
	ErrorRuns      int `json:"error_runs"`         // error set: skipped
	UntimedRuns    int `json:"untimed_runs"`       // no profile or compute_time_ns ≤ 1 (as tpu_graphs skips): skipped
	LayoutRuns     int `json:"layout_runs"`        // timed layout runs (imported unless their module is unmapped)
	Unmapped       int `json:"modules_not_mapped"` // modules tpucost cannot analyze or map
	ImportedRuns   int `json:"imported_runs"`
	ImportedModule int `json:"imported_modules"`
}

// ModuleRows converts the runs of decoded tuning data to rows. Tile runs become one
// tile row per module in FeatureSetRawTile: the tuned kernel (the fused computation of
// the entry's only fusion, else the entry computation), its graph featurized by package
// features for target t, one config per timed run ("output=2x26x4x2;kernel=-;input=-;
// iteration=-", with ";default" on the compiler's default). Layout runs become one layout
// row per module in FeatureSetRawLayout: the entry computation's graph, ConfigNodes from
// config_index_to_node, per node the tensors' minor-to-major dims (configs "config=I",
// ";default" on the default). Runtimes are the measured compute_time_ns. Runs with
// error set, without a profile or with compute_time_ns ≤ 1 are skipped (tpu_graphs' own
// loader skips the same). A module that cost.Analyze cannot analyze, or whose configured
// nodes are not in the entry computation, is counted and named in unmapped. file names
// the source in keys and errors.
func ModuleRows(file string, mts []ModuleTuning, t cost.Target) (tile, layout []dataset.Row, st PBStats, unmapped []string, err error) {
	for mi, mt := range mts {
		st.Modules++
		st.Runs += len(mt.Runs)
		var tileRuns, layoutRuns []Run
		for _, r := range mt.Runs {
			switch {
			case r.Error:
				st.ErrorRuns++
			case !r.HasProfile || r.Profile.ComputeTimeNs <= 1 || r.Tile == nil && r.Layout == nil:
				st.UntimedRuns++
			case r.Layout != nil:
				st.LayoutRuns++
				layoutRuns = append(layoutRuns, r)
			default:
				tileRuns = append(tileRuns, r)
			}
		}
		where := fmt.Sprintf("%s: module %d (%s)", file, mi, mt.Module.Name)
		key := fmt.Sprintf("tpugraphs-pb:%s:%d:%016x", baseName(file), mi, mt.Fingerprint)
		if len(tileRuns) > 0 {
			row, err := tileRow(mt, tileRuns, t)
			if err != nil {
				if !errors.Is(err, errUnmapped) {
					return nil, nil, st, nil, fmt.Errorf("%s: %w", where, err)
				}
				st.Unmapped++
				unmapped = append(unmapped, fmt.Sprintf("%s: %v", where, err))
			} else {
				row.KernelKey = key
				tile = append(tile, row)
				st.ImportedRuns += len(tileRuns)
				st.ImportedModule++
			}
		}
		if len(layoutRuns) > 0 {
			row, err := layoutRow(mt, layoutRuns, t)
			if err != nil {
				if !errors.Is(err, errUnmapped) {
					return nil, nil, st, nil, fmt.Errorf("%s: %w", where, err)
				}
				st.Unmapped++
				unmapped = append(unmapped, fmt.Sprintf("%s: %v", where, err))
			} else {
				row.KernelKey = key + ":layout"
				layout = append(layout, row)
				st.ImportedRuns += len(layoutRuns)
				st.ImportedModule++
			}
		}
	}
	return tile, layout, st, unmapped, nil
}

// errUnmapped marks a module tpucost cannot represent (counted, not fatal).
var errUnmapped = errors.New("not mapped")

func tileRow(mt ModuleTuning, runs []Run, t cost.Target) (dataset.Row, error) {
	fc := KernelComputation(mt.Module)
	info, err := cost.Analyze(fc, t)
	if err != nil {
		return dataset.Row{}, fmt.Errorf("%w: %v", errUnmapped, err)
	}
	row := dataset.Row{Program: mt.Module.Name, Task: dataset.TaskTile, KernelName: mt.Module.Name,
		Kind: info.Kind.String(), Graph: features.Kernel(fc, info, t)}
	for _, r := range runs {
		f, err := rawTileFeatures(r.Tile)
		if err != nil {
			return row, err
		}
		cfg := RawTileString(r.Tile)
		if r.IsDefault {
			cfg += ";default"
		}
		row.Configs = append(row.Configs, cfg)
		row.ConfigFeats = append(row.ConfigFeats, f)
		row.RuntimesNs = append(row.RuntimesNs, float64(r.Profile.ComputeTimeNs))
		row.AnalyticalNs = append(row.AnalyticalNs, math.NaN())
	}
	return row, nil
}

func layoutRow(mt ModuleTuning, runs []Run, t cost.Target) (dataset.Row, error) {
	g, pos, err := moduleGraph(mt.Module, t)
	if err != nil {
		return dataset.Row{}, fmt.Errorf("%w: %v", errUnmapped, err)
	}
	row := dataset.Row{Program: mt.Module.Name, Task: dataset.TaskLayout, KernelName: mt.Module.Name, Graph: g}
	for i, at := range mt.ConfigIndexToNode {
		if at >= uint64(len(mt.Instructions)) {
			return row, fmt.Errorf("%w: configurable node %d is node %d, the module has %d instructions", errUnmapped, i, at, len(mt.Instructions))
		}
		p, in := pos[mt.Instructions[at]]
		if !in {
			return row, fmt.Errorf("%w: configurable node %d (%s) is not an instruction of the module", errUnmapped, i, mt.Instructions[at][1])
		}
		row.ConfigNodes = append(row.ConfigNodes, p)
	}
	nc := len(row.ConfigNodes)
	for ri, r := range runs {
		if len(r.Layout.Nodes) != nc {
			return row, fmt.Errorf("layout run %d configures %d nodes, config_index_to_node lists %d", ri, len(r.Layout.Nodes), nc)
		}
		f := make([]float32, 0, nc*LayoutConfigWidth)
		for ni, node := range r.Layout.Nodes {
			if len(node) > layoutTensors {
				return row, fmt.Errorf("layout run %d node %d has %d tensors, at most %d are supported", ri, ni, len(node), layoutTensors)
			}
			block := make([]float32, LayoutConfigWidth)
			for j := range block {
				block[j] = -1
			}
			for ti, dims := range node {
				for d := 0; d < min(len(dims), rawTileDims); d++ { // tpu_graphs keeps the first 6
					block[ti*rawTileDims+d] = float32(dims[d])
				}
			}
			f = append(f, block...)
		}
		cfg := fmt.Sprintf("config=%d", ri)
		if r.IsDefault {
			cfg += ";default"
		}
		row.Configs = append(row.Configs, cfg)
		row.ConfigFeats = append(row.ConfigFeats, f)
		row.RuntimesNs = append(row.RuntimesNs, float64(r.Profile.ComputeTimeNs))
		row.AnalyticalNs = append(row.AnalyticalNs, math.NaN())
	}
	return row, nil
}

// moduleGraph is the graph of a whole module, as TpuGraphs' layout graphs are: the
// module graph of features.CalleeRootEdges (the instructions of every computation, in
// the module's order; operand → user edges within computations, then an edge from a
// called computation's root to each instruction that calls it: fusion, call, while body
// and condition, to_apply), each computation's nodes featurized by features.Kernel; the
// kernel features are the entry computation's. pos maps (computation, instruction name)
// to node indices.
func moduleGraph(m *hlo.Module, t cost.Target) (features.Graph, map[[2]string]int32, error) {
	info, err := cost.Analyze(m.Entry, t)
	if err != nil {
		return features.Graph{}, nil, err
	}
	mg, err := features.BuildModuleGraph(m, features.CalleeRootEdges())
	if err != nil {
		return features.Graph{}, nil, err
	}
	g := features.Graph{EdgeSrc: mg.Src, EdgeDst: mg.Dst}
	pos := make(map[[2]string]int32, len(mg.Nodes))
	for ci, c := range mg.Computations {
		cg := features.Kernel(c, info, t)
		g.Opcodes = append(g.Opcodes, cg.Opcodes...)
		g.NodeFeats = append(g.NodeFeats, cg.NodeFeats...)
		for i, in := range c.Instructions {
			pos[[2]string{c.Name, in.Name}] = mg.Start[ci] + int32(i)
		}
		if c == m.Entry {
			g.KernelFeats = cg.KernelFeats
		}
	}
	return g, pos, nil
}

// KernelComputation is the computation a tile config of an op-tuning module applies to:
// the fused computation of the entry's only fusion instruction, else the entry.
func KernelComputation(m *hlo.Module) *hlo.Computation {
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

func RawTileString(t *TileSizeConfig) string {
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
