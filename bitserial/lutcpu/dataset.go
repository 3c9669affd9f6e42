package lutcpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/measure"
)

// Record is one measured configuration of a dataset.
type Record struct {
	Seq    int // position in the measurement order (a seeded shuffle of the space)
	Config Config
	Sample
	AnalyticalNs float64
}

// Meta describes a measured dataset: what was measured, on what and how, and the
// machine's load while it was (the dataset's provenance, dataset.MeasuredProvenance,
// with the samples' totals).
type Meta struct {
	Task         string         `json:"task"` // "bitserial"
	Backend      string         `json:"backend"`
	Format       dataset.Format `json:"format"`
	Layer        LayerShape     `json:"layer"`
	Space        int            `json:"space_configs"` // configs in the space
	Configs      int            `json:"configs"`       // configs measured
	Seed         int64          `json:"seed"`
	Method       Method         `json:"method"`
	CPUModel     string         `json:"cpu_model"` // /proc/cpuinfo's model name ("" if unreadable)
	GoVersion    string         `json:"go_version"`
	GOARCH       string         `json:"goarch"`
	CPUs         int            `json:"cpus"`
	LoadStart    string         `json:"load_start"` // /proc/loadavg before measuring ("" if unreadable)
	LoadEnd      string         `json:"load_end"`
	Rejected     int            `json:"rejected"`   // outlier repeats, summed over samples
	Remeasured   int            `json:"remeasured"` // re-measurements, summed
	NoisySamples int            `json:"noisy_samples"`
	WallSeconds  float64        `json:"wall_s"`
	ToolVersion  string         `json:"tool_version"`
}

// GenOptions configure a measured dataset's generation.
type GenOptions struct {
	Space   Space
	Backend Backend
	Method  Method // recorded in the metadata (the backend measures with it)
	Out     string
	Format  dataset.Format // "": arrow
	// Configs is how many configs of the space to measure, drawn by a seeded shuffle
	// (0: all of them).
	Configs     int
	Seed        int64
	ToolVersion string
	// Progress, if set, is called after every measured config.
	Progress func(done, total int)
}

// Generate measures configs of the space with the backend through measure.Run, the loop
// every backend shares (one at a time, in the seeded order measure.Order: bursts of other
// load fall on all parts of the space alike), and writes them, in that order, to
// o.Out as a measured-config table (dataset.CreateMeasured: the directory is locked and
// checked before the first measurement; one row per config, its sample and the
// analytical estimate; the provenance names the backend, the machine and its load).
// Cancelling ctx stops it without writing.
func Generate(ctx context.Context, o GenOptions) (*Meta, []Record, error) {
	all, err := o.Space.Configs()
	if err != nil {
		return nil, nil, err
	}
	if o.Configs < 0 || o.Configs > len(all) {
		return nil, nil, fmt.Errorf("--configs %d: want 0 (all) to %d, the space's size", o.Configs, len(all))
	}
	if o.Out == "" {
		return nil, nil, errors.New("--out: no output directory")
	}
	if err := o.Method.Check(); err != nil {
		return nil, nil, err
	}
	if o.Format == "" {
		o.Format = dataset.FormatArrow
	}
	w, err := dataset.CreateMeasured(o.Out, TaskName, o.Format)
	if err != nil {
		return nil, nil, err
	}
	written := false
	defer func() {
		if !written {
			w.Discard()
		}
	}()
	// The configs: all of the space, or o.Configs of them drawn by the seeded order.
	cs := all
	if o.Configs > 0 {
		pick := measure.Order(uint64(o.Seed), len(all))[:o.Configs]
		slices.Sort(pick)
		cs = make([]Config, len(pick))
		for k, i := range pick {
			cs[k] = all[i]
		}
	}
	m := &Meta{Task: TaskName, Backend: o.Backend.Name(), Format: o.Format, Layer: ShapeOf(o.Space.Layer), Space: len(all), Configs: len(cs),
		Seed: o.Seed, Method: o.Method, CPUModel: CPUModel(), GoVersion: runtime.Version(), GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU(),
		LoadStart: LoadAverage(), ToolVersion: o.ToolVersion}
	start := time.Now()
	res, err := measure.Run(ctx, o.Backend, cs, measure.Options{Seed: uint64(o.Seed), Progress: o.Progress})
	if ce := (*measure.ConfigError)(nil); errors.As(err, &ce) {
		return nil, nil, fmt.Errorf("config %s: %w", cs[ce.Index], ce.Err)
	} else if err != nil {
		return nil, nil, err
	}
	recs := make([]Record, len(cs))
	for i, r := range res {
		recs[r.Seq] = Record{Seq: r.Seq, Config: cs[i], Sample: r.Sample, AnalyticalNs: Analytical(o.Space.Layer, cs[i])}
	}
	m.WallSeconds = time.Since(start).Seconds()
	m.LoadEnd = LoadAverage()
	m.totals(recs)
	prov, rows := toTable(m, recs)
	written = true
	if err := w.Write(prov, rows); err != nil {
		w.Discard()
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return m, recs, nil
}

// totals sums the records' rejected repeats, re-measurements and samples noisier than
// the method allows into m.
func (m *Meta) totals(recs []Record) {
	m.Rejected, m.Remeasured, m.NoisySamples = 0, 0, 0
	for _, r := range recs {
		m.Rejected += r.Rejected
		m.Remeasured += r.Remeasured
		if r.Noise > m.Method.MaxNoise {
			m.NoisySamples++
		}
	}
}

// The parameter columns of the bitserial task's measured table: P, z, b (the problem),
// block and unroll (int64), and the loop order (utf8).
func intColumns() []string     { return []string{"p", "z", "b", "block", "unroll"} }
func stringColumns() []string  { return []string{"order"} }
func problemColumns() []string { return []string{"p", "z", "b"} }

func (s LayerShape) workload() map[string]int64 {
	return map[string]int64{"h": int64(s.H), "w": int64(s.W), "cin": int64(s.Cin), "cout": int64(s.Cout), "k": int64(s.K),
		"stride": int64(s.Stride), "pad": int64(s.Pad)}
}

// toTable is a measured dataset as dataset's table: its provenance and rows.
func toTable(m *Meta, recs []Record) (dataset.MeasuredProvenance, []dataset.MeasuredRow) {
	p := dataset.MeasuredProvenance{SchemaVersion: dataset.MeasuredSchemaVersion, Table: dataset.MeasuredTable, Task: m.Task,
		Backend: m.Backend, IntColumns: intColumns(), StringColumns: stringColumns(), ProblemColumns: problemColumns(),
		Workload: m.Layer.workload(), SpaceConfigs: m.Space, Seed: m.Seed, Method: dataset.MeasureMethod(m.Method),
		Machine:   dataset.Machine{CPUModel: m.CPUModel, GOOS: runtime.GOOS, GOARCH: m.GOARCH, CPUs: m.CPUs, GoVersion: m.GoVersion},
		LoadStart: m.LoadStart, LoadEnd: m.LoadEnd, WallSeconds: m.WallSeconds, ToolVersion: m.ToolVersion}
	rows := make([]dataset.MeasuredRow, len(recs))
	for i, r := range recs {
		c := r.Config
		rows[i] = dataset.MeasuredRow{Seq: int64(r.Seq), Config: c.String(), Problem: c.Problem().String(),
			Ints: []int64{int64(c.P), int64(c.Z), int64(c.B), int64(c.Block), int64(c.Unroll)}, Strs: []string{string(c.Order)},
			MedianNs: r.MedianNs, SpreadPct: r.SpreadPct, Noise: r.Noise, Repeats: int32(r.Kept), Rejected: int32(r.Rejected),
			Remeasured: int32(r.Remeasured), Calls: int32(r.Calls), AnalyticalNs: r.AnalyticalNs}
	}
	return p, rows
}

// CPUModel is the first "model name" of /proc/cpuinfo ("" where there is none).
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// LoadAverage is the first three fields of /proc/loadavg ("" where there is none).
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// Read reads the measured dataset in dir through dataset.OpenMeasured (manifest,
// checksums and metadata verified; a corrupt, truncated or foreign file refused in one
// line naming it) and checks it is the bitserial task's (on any backend): its parameter
// columns, every config valid on the measured layer and agreeing
// with its columns and problem.
func Read(dir string) (*Meta, []Record, error) {
	d, err := dataset.OpenMeasured(dir)
	if err != nil {
		return nil, nil, err
	}
	p := d.Provenance
	file := filepath.Join(dir, d.File.Name)
	ferr := func(format string, a ...any) error { return fmt.Errorf("%s: %s", file, fmt.Sprintf(format, a...)) }
	switch {
	case p.Task != TaskName:
		return nil, nil, ferr("a measured table of task %q, want %s", p.Task, TaskName)
	case !slices.Equal(p.IntColumns, intColumns()) || !slices.Equal(p.StringColumns, stringColumns()):
		return nil, nil, ferr("parameter columns %v %v, want %v %v", p.IntColumns, p.StringColumns, intColumns(), stringColumns())
	}
	w := p.Workload
	shape := LayerShape{H: int(w["h"]), W: int(w["w"]), Cin: int(w["cin"]), Cout: int(w["cout"]), K: int(w["k"]), Stride: int(w["stride"]), Pad: int(w["pad"])}
	keys := true
	for k := range shape.workload() {
		_, ok := w[k]
		keys = keys && ok
	}
	if len(w) != len(shape.workload()) || !keys || shape.H < 1 || shape.W < 1 || shape.Cin < 1 || shape.Cout < 1 || shape.K < 1 || shape.Stride < 1 || shape.Pad < 0 {
		return nil, nil, ferr("workload %v: want a layer's h, w, cin, cout, k, stride (positive) and pad", w)
	}
	l := shape.Layer()
	m := &Meta{Task: p.Task, Backend: p.Backend, Format: d.Format, Layer: shape, Space: p.SpaceConfigs, Configs: len(d.Rows), Seed: p.Seed,
		Method: Method(p.Method), CPUModel: p.Machine.CPUModel, GoVersion: p.Machine.GoVersion, GOARCH: p.Machine.GOARCH, CPUs: p.Machine.CPUs,
		LoadStart: p.LoadStart, LoadEnd: p.LoadEnd, WallSeconds: p.WallSeconds, ToolVersion: p.ToolVersion}
	recs := make([]Record, len(d.Rows))
	for i, r := range d.Rows {
		c, err := ParseConfig(r.Config, l)
		if err != nil {
			return nil, nil, ferr("row %d: %v", i, err)
		}
		if r.Ints[0] != int64(c.P) || r.Ints[1] != int64(c.Z) || r.Ints[2] != int64(c.B) || r.Ints[3] != int64(c.Block) ||
			r.Ints[4] != int64(c.Unroll) || r.Strs[0] != string(c.Order) || r.Problem != c.Problem().String() {
			return nil, nil, ferr("row %d: config %s disagrees with its columns", i, r.Config)
		}
		recs[i] = Record{Seq: int(r.Seq), Config: c, AnalyticalNs: r.AnalyticalNs, Sample: Sample{MedianNs: r.MedianNs, SpreadPct: r.SpreadPct,
			Noise: r.Noise, Kept: int(r.Repeats), Rejected: int(r.Rejected), Remeasured: int(r.Remeasured), Calls: int(r.Calls)}}
	}
	m.totals(recs)
	return m, recs, nil
}
