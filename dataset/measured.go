package dataset

// The measured-config table: a dataset of configurations of one kernel measured on real
// hardware (`tpucost gen --task bitserial --backend cpu`), one row per configuration,
// beside the kernel datasets of the compiler tasks (one row per kernel with its graph
// tensors). It has its own schema version (MeasuredSchemaVersion) and file names, and
// shares the kernel datasets' directory contract: the directory's lock and kind
// (internal/dirlock, kind dataset), files written atomically (internal/atomicfile),
// listed with their size and SHA-256 in a sealed manifest, provenance in the file's
// schema metadata, Arrow IPC or Parquet (zstd). The dataset package knows nothing of the
// kernel measured: a table names its own configuration columns (integer and string
// parameters, and which of them define the problem the variants solve) in its
// provenance.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/jsonerr"
	"github.com/tpucost/tpucost/internal/sealed"
)

// MeasuredSchemaVersion is the version of the measured-config table's schema (its
// columns and MeasuredProvenance), independent of the kernel datasets' SchemaVersion.
const MeasuredSchemaVersion = 1

// MeasuredTable is the table kind a measured-config file's metadata (MetaTable) and
// manifest name.
const MeasuredTable = "measured-configs"

// MetaTable is the schema metadata key naming a file's table kind; kernel dataset files
// have none.
const MetaTable = "tpucost.table"

// Fixed columns of a measured-config table. The table's parameter columns (its
// provenance's IntColumns, then StringColumns) come after ColMeasuredProblem.
const (
	ColMeasuredSeq        = "seq"           // int64: position in the measurement order, 0..rows-1
	ColMeasuredConfig     = "config"        // utf8: the config's canonical form
	ColMeasuredProblem    = "problem"       // utf8: the problem's canonical form (what the variants compute alike)
	ColMeasuredMedianNs   = "median_ns"     // float64: median of the kept repeats, > 0
	ColMeasuredSpreadPct  = "spread_pct"    // float64: 100·(max − min)/median of the kept repeats
	ColMeasuredNoise      = "noise"         // float64: robust relative deviation of the kept repeats
	ColMeasuredRepeats    = "repeats"       // int32: repeats kept
	ColMeasuredRejected   = "rejected"      // int32: repeats rejected as outliers
	ColMeasuredRemeasured = "remeasured"    // int32: re-measurements of a noisy sample (> 0: re-measured)
	ColMeasuredCalls      = "calls"         // int32: every call made, warm-ups included
	ColMeasuredAnalytical = "analytical_ns" // float64: the analytical model's estimate (NaN: none)
)

// MeasureMethod is how each sample of a measured table was taken (lutcpu.Method):
// warm-up calls, timed repeats, outlier rejection beyond OutlierK robust deviations (at
// least OutlierFloor of the median), and up to Retries re-measurements of a sample
// noisier than MaxNoise.
type MeasureMethod struct {
	Warmup   int     `json:"warmup"`
	Repeats  int     `json:"repeats"`
	OutlierK float64 `json:"outlier_k"`
	// OutlierFloor is the least robust deviation, as a fraction of the median.
	OutlierFloor float64 `json:"outlier_floor"`
	MaxNoise     float64 `json:"max_noise"`
	Retries      int     `json:"retries"`
}

// Machine is the machine a measured table was measured on.
type Machine struct {
	CPUModel  string `json:"cpu_model"` // /proc/cpuinfo's model name ("" where unreadable)
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
}

// MeasuredProvenance is recorded in a measured-config file's schema metadata
// (MetaProvenance): what was measured, on what backend and machine, how, and under
// what load.
type MeasuredProvenance struct {
	SchemaVersion int    `json:"schema_version"`
	Table         string `json:"table"`   // MeasuredTable
	Task          string `json:"task"`    // e.g. "bitserial"
	Backend       string `json:"backend"` // where it was measured: "cpu"
	// IntColumns and StringColumns are the table's parameter columns (int64, utf8), in
	// schema order; ProblemColumns those of them that define the problem.
	IntColumns     []string `json:"int_columns"`
	StringColumns  []string `json:"string_columns"`
	ProblemColumns []string `json:"problem_columns"`
	// Workload is what every config computes, in the task's terms (a layer's shape).
	Workload     map[string]int64 `json:"workload"`
	SpaceConfigs int              `json:"space_configs"` // configs in the space the rows were drawn from
	Seed         int64            `json:"seed"`
	Method       MeasureMethod    `json:"method"`
	Machine      Machine          `json:"machine"`
	LoadStart    string           `json:"load_start"` // /proc/loadavg before measuring ("" if unreadable)
	LoadEnd      string           `json:"load_end"`
	WallSeconds  float64          `json:"wall_s"`
	ToolVersion  string           `json:"tool_version"`
}

// MeasuredRow is one measured configuration: Ints and Strs hold the values of the
// provenance's IntColumns and StringColumns, in order.
type MeasuredRow struct {
	Seq          int64
	Config       string
	Problem      string
	Ints         []int64
	Strs         []string
	MedianNs     float64
	SpreadPct    float64
	Noise        float64
	Repeats      int32
	Rejected     int32
	Remeasured   int32
	Calls        int32
	AnalyticalNs float64
}

// measuredFields are the columns of a table with provenance p.
func measuredFields(p *MeasuredProvenance) []arrow.Field {
	str, i64, i32, f64 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Float64
	f := []arrow.Field{{Name: ColMeasuredSeq, Type: i64}, {Name: ColMeasuredConfig, Type: str}, {Name: ColMeasuredProblem, Type: str}}
	for _, c := range p.IntColumns {
		f = append(f, arrow.Field{Name: c, Type: i64})
	}
	for _, c := range p.StringColumns {
		f = append(f, arrow.Field{Name: c, Type: str})
	}
	return append(f,
		arrow.Field{Name: ColMeasuredMedianNs, Type: f64}, arrow.Field{Name: ColMeasuredSpreadPct, Type: f64},
		arrow.Field{Name: ColMeasuredNoise, Type: f64}, arrow.Field{Name: ColMeasuredRepeats, Type: i32},
		arrow.Field{Name: ColMeasuredRejected, Type: i32}, arrow.Field{Name: ColMeasuredRemeasured, Type: i32},
		arrow.Field{Name: ColMeasuredCalls, Type: i32}, arrow.Field{Name: ColMeasuredAnalytical, Type: f64})
}

// MeasuredSchema returns the Arrow schema of a table with provenance p, without metadata.
func MeasuredSchema(p *MeasuredProvenance) *arrow.Schema {
	return arrow.NewSchema(measuredFields(p), nil)
}

var measuredNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Check reports, in one line, what is wrong with p: another table or schema version, a
// task that is not a lowercase name, no backend, or parameter columns that are not
// lowercase names, repeat a name (theirs or a fixed column's) or, for ProblemColumns,
// are not parameter columns.
func (p *MeasuredProvenance) Check() error {
	switch {
	case p.Table != MeasuredTable:
		return fmt.Errorf("table %q, want %s", p.Table, MeasuredTable)
	case p.SchemaVersion != MeasuredSchemaVersion:
		return fmt.Errorf("measured-config schema version %d, this tpucost reads %d", p.SchemaVersion, MeasuredSchemaVersion)
	case !measuredNameRE.MatchString(p.Task):
		return fmt.Errorf("task %q: want a lowercase name", p.Task)
	case p.Backend == "":
		return errors.New("no backend: want where the configs were measured")
	}
	seen := map[string]bool{}
	for _, f := range measuredFields(&MeasuredProvenance{}) {
		seen[f.Name] = true
	}
	for _, c := range slices.Concat(p.IntColumns, p.StringColumns) {
		if !measuredNameRE.MatchString(c) || seen[c] {
			return fmt.Errorf("parameter column %q: want a lowercase name that no other column has", c)
		}
		seen[c] = true
	}
	for _, c := range p.ProblemColumns {
		if !slices.Contains(p.IntColumns, c) && !slices.Contains(p.StringColumns, c) {
			return fmt.Errorf("problem column %q is not a parameter column", c)
		}
	}
	return nil
}

// MeasuredFileName and MeasuredManifestName are the base names of a task's table file and
// its manifest in a dataset directory. They never match a kernel dataset's part or
// manifest names.
func MeasuredFileName(task string, f Format) string { return "measured-" + task + "." + f.ext() }

// MeasuredManifestName: see MeasuredFileName.
func MeasuredManifestName(task string) string { return "measured-" + task + manifestSuffix }

var measuredManifestRE = regexp.MustCompile(`^measured-([a-z][a-z0-9_]*)\.manifest\.json$`)

// measuredTasks lists the tasks whose measured table dir holds (by manifest name).
func measuredTasks(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if m := measuredManifestRE.FindStringSubmatch(e.Name()); m != nil {
			out = append(out, m[1])
		}
	}
	return out, nil
}

// IsMeasured reports whether dir holds a measured-config table (its manifest).
func IsMeasured(dir string) bool {
	t, err := measuredTasks(dir)
	return err == nil && len(t) > 0
}

// MeasuredManifest lists a measured table's one file with its size, SHA-256 and rows,
// sealed with its own checksum like a shard's Manifest.
type MeasuredManifest struct {
	ManifestVersion int          `json:"manifest_version"`
	SchemaVersion   int          `json:"schema_version"`
	Table           string       `json:"table"`
	Task            string       `json:"task"`
	Format          Format       `json:"format"`
	File            ManifestFile `json:"file"`
	Checksum        string       `json:"checksum"`
}

// MeasuredWriter writes a measured-config table into a directory it holds locked from
// CreateMeasured to Close or Discard.
type MeasuredWriter struct {
	dir    string
	task   string
	format Format
	lock   *dirlock.Lock
	tmpTag string
	done   bool
}

// CreateMeasured prepares dir (created if missing) for task's measured table in format
// ("" is arrow): it takes the directory's lock exclusively (internal/dirlock; another
// writer is refused, naming it) with kind dataset (a model or other directory is refused)
// and refuses a directory that already holds a dataset (a measured table or a kernel
// dataset's parts or manifests): a measurement is never resumed or overwritten. It
// removes the temporary files of an earlier writer that was killed. Call it before
// measuring, so that a bad --out costs nothing.
func CreateMeasured(dir, task string, format Format) (*MeasuredWriter, error) {
	if dir == "" {
		return nil, errors.New("dataset: no output directory")
	}
	if format == "" {
		format = FormatArrow
	}
	if !format.Valid() {
		return nil, fmt.Errorf("dataset: unknown format %q (want arrow or parquet)", format)
	}
	if !measuredNameRE.MatchString(task) {
		return nil, fmt.Errorf("dataset: task %q: want a lowercase name", task)
	}
	w := &MeasuredWriter{dir: dir, task: task, format: format, tmpTag: fmt.Sprintf(".%d", os.Getpid())}
	l, err := dirlock.AcquireDir(dir, dirlock.Dataset)
	if errors.Is(err, dirlock.ErrOtherKind) {
		return nil, err // names the directory and both kinds
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	w.lock = l
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.Release()
		return nil, fmt.Errorf("dataset: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "measured-") && strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				l.Release()
				return nil, fmt.Errorf("dataset: removing a temporary file: %w", err)
			}
			continue
		}
		_, kernelPart := parseFileName(name)
		_, _, _, kernelManifest := parseManifestName(name)
		if measuredManifestRE.MatchString(name) || kernelPart || kernelManifest {
			l.Release()
			return nil, fmt.Errorf("dataset: %s already holds a dataset (%s): a measurement is never overwritten or resumed; choose another directory, or remove it",
				dir, name)
		}
	}
	return w, nil
}

// Write writes the table: rows (checked: seq 0..len-1 in order, a positive finite
// median, non-negative spread, noise and counts, one value per parameter column) with
// provenance p (checked, Check) into the table file, then its sealed manifest, each
// atomically. A Writer writes once.
func (w *MeasuredWriter) Write(p MeasuredProvenance, rows []MeasuredRow) error {
	if w.done {
		return errors.New("dataset: the measured table was already written")
	}
	if p.Task != w.task {
		return fmt.Errorf("dataset: provenance of task %q, the writer's is %q", p.Task, w.task)
	}
	if err := p.Check(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	for i := range rows {
		if err := checkMeasuredRow(&p, &rows[i], int64(i)); err != nil {
			return fmt.Errorf("dataset: row %d: %w", i, err)
		}
	}
	pj, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("dataset: encoding provenance: %w", err)
	}
	md := arrow.NewMetadata(
		[]string{MetaTable, MetaSchemaVersion, MetaTask, MetaSeed, MetaProvenance},
		[]string{MeasuredTable, strconv.Itoa(p.SchemaVersion), p.Task, strconv.FormatInt(p.Seed, 10), string(pj)})
	schema := arrow.NewSchema(measuredFields(&p), &md)
	mem := memory.DefaultAllocator
	nb := max(1, (len(rows)+maxBatchRows-1)/maxBatchRows)
	name := MeasuredFileName(w.task, w.format)
	path := filepath.Join(w.dir, name)
	var hw *hashingWriter
	err = atomicfile.WriteVia(path, path+w.tmpTag+tmpSuffix, func(out io.Writer) error {
		hw = newHashingWriter(out)
		return writeBatches(hw, w.format, schema, mem, nb, func(i int) arrow.RecordBatch {
			return buildMeasured(mem, schema, &p, rows[min(i*maxBatchRows, len(rows)):min((i+1)*maxBatchRows, len(rows))])
		})
	})
	if err != nil {
		return &FileError{File: path, Err: err}
	}
	m := MeasuredManifest{ManifestVersion: ManifestVersion, SchemaVersion: p.SchemaVersion, Table: MeasuredTable, Task: w.task,
		Format: w.format, File: ManifestFile{Name: name, SizeBytes: hw.n, SHA256: hw.sum(), Rows: int64(len(rows))}}
	b, err := sealed.Marshal(&m)
	if err != nil {
		return fmt.Errorf("dataset: encoding the manifest: %w", err)
	}
	mpath := filepath.Join(w.dir, MeasuredManifestName(w.task))
	if err := atomicfile.WriteVia(mpath, mpath+w.tmpTag+tmpSuffix, func(out io.Writer) error { _, err := out.Write(b); return err }); err != nil {
		return &FileError{File: mpath, Err: err}
	}
	w.done = true
	return syncDir(w.dir)
}

// Close releases the directory's lock.
func (w *MeasuredWriter) Close() error { return w.lock.Release() }

// Discard ends a writer that will not write (a measurement failed or was cancelled):
// it releases the lock, which removes the directory if CreateMeasured made it and it is
// left empty. After Write it is Close.
func (w *MeasuredWriter) Discard() error { return w.lock.Release() }

// checkMeasuredRow checks r, row seq of a table with provenance p.
func checkMeasuredRow(p *MeasuredProvenance, r *MeasuredRow, seq int64) error {
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case r.Seq != seq:
		return fmt.Errorf("seq %d, want %d (rows in measurement order)", r.Seq, seq)
	case r.Config == "" || r.Problem == "":
		return errors.New("an empty config or problem")
	case len(r.Ints) != len(p.IntColumns) || len(r.Strs) != len(p.StringColumns):
		return fmt.Errorf("%d integer and %d string parameters, the table has %d and %d", len(r.Ints), len(r.Strs), len(p.IntColumns), len(p.StringColumns))
	case !(r.MedianNs > 0) || !finite(r.MedianNs):
		return fmt.Errorf("config %s: median %v ns, want a positive time", r.Config, r.MedianNs)
	case !(r.SpreadPct >= 0) || !finite(r.SpreadPct) || !(r.Noise >= 0) || !finite(r.Noise):
		return fmt.Errorf("config %s: spread %v%%, noise %v: want non-negative numbers", r.Config, r.SpreadPct, r.Noise)
	case r.Repeats < 1 || r.Rejected < 0 || r.Remeasured < 0 || r.Calls < r.Repeats+r.Rejected:
		return fmt.Errorf("config %s: %d repeats kept, %d rejected, %d re-measurements, %d calls: want at least 1 kept and every repeat counted in the calls",
			r.Config, r.Repeats, r.Rejected, r.Remeasured, r.Calls)
	case !math.IsNaN(r.AnalyticalNs) && !(r.AnalyticalNs >= 0 && finite(r.AnalyticalNs)):
		return fmt.Errorf("config %s: analytical estimate %v ns, want a non-negative time or NaN", r.Config, r.AnalyticalNs)
	}
	return nil
}

// buildMeasured converts rows into one record batch of schema (measuredFields(p)).
func buildMeasured(mem memory.Allocator, schema *arrow.Schema, p *MeasuredProvenance, rows []MeasuredRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	ni, ns := len(p.IntColumns), len(p.StringColumns)
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.Seq)
		b.Field(1).(*array.StringBuilder).Append(r.Config)
		b.Field(2).(*array.StringBuilder).Append(r.Problem)
		for j, v := range r.Ints {
			b.Field(3 + j).(*array.Int64Builder).Append(v)
		}
		for j, v := range r.Strs {
			b.Field(3 + ni + j).(*array.StringBuilder).Append(v)
		}
		k := 3 + ni + ns
		b.Field(k).(*array.Float64Builder).Append(r.MedianNs)
		b.Field(k + 1).(*array.Float64Builder).Append(r.SpreadPct)
		b.Field(k + 2).(*array.Float64Builder).Append(r.Noise)
		b.Field(k + 3).(*array.Int32Builder).Append(r.Repeats)
		b.Field(k + 4).(*array.Int32Builder).Append(r.Rejected)
		b.Field(k + 5).(*array.Int32Builder).Append(r.Remeasured)
		b.Field(k + 6).(*array.Int32Builder).Append(r.Calls)
		b.Field(k + 7).(*array.Float64Builder).Append(r.AnalyticalNs)
	}
	return b.NewRecordBatch()
}

// Measured is a measured-config table, read whole.
type Measured struct {
	Dir        string
	Format     Format
	Provenance MeasuredProvenance
	Manifest   string       // the manifest's base name
	File       ManifestFile // the table file as the manifest lists it and OpenMeasured verified it
	Rows       []MeasuredRow
}

// maxMeasuredRows bounds the rows of a table read (a measured config takes milliseconds
// to seconds, so real tables hold thousands).
const maxMeasuredRows = 10_000_000

// OpenMeasured reads the measured-config table in dir: its manifest (checksum, version,
// names), the table file's size and SHA-256 against it, the file's metadata (a
// measured-config table of the manifest's task and schema, columns as its provenance
// names them) and every row (checked as Write checks them). Every error is one line
// naming the offending file: a corrupt, truncated, edited or foreign file is refused.
func OpenMeasured(dir string) (*Measured, error) {
	tasks, err := measuredTasks(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	switch len(tasks) {
	case 0:
		return nil, fmt.Errorf("dataset: %s holds no measured-config table (no measured-TASK%s): want a directory made by tpucost gen --backend cpu", dir, manifestSuffix)
	case 1:
	default:
		return nil, fmt.Errorf("dataset: %s holds measured tables of several tasks (%s): want one", dir, strings.Join(tasks, ", "))
	}
	mpath := filepath.Join(dir, MeasuredManifestName(tasks[0]))
	m, err := readMeasuredManifest(mpath, tasks[0])
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, m.File.Name)
	if err := verifyFile(path, m.File, mpath); err != nil {
		return nil, err
	}
	d := &Measured{Dir: dir, Format: m.Format, Manifest: filepath.Base(mpath), File: m.File}
	if err := readMeasuredFile(path, m, d); err != nil {
		return nil, err
	}
	return d, nil
}

// readMeasuredManifest reads and checks the measured manifest at path, of task.
func readMeasuredManifest(path, task string) (*MeasuredManifest, error) {
	ferr := func(format string, a ...any) error { return &FileError{File: path, Err: fmt.Errorf(format, a...)} }
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	if len(b) > maxManifestBytes {
		return nil, ferr("manifest larger than %d bytes", maxManifestBytes)
	}
	var m MeasuredManifest
	if err := jsonerr.UnmarshalStrict(path, b, &m); err != nil {
		if je, ok := err.(*jsonerr.Error); ok && je.Field == "" {
			je.Msg = "not a readable manifest: " + je.Msg
		}
		return nil, err
	}
	if err := sealed.Verify(b); errors.Is(err, sealed.ErrNoChecksum) {
		return nil, ferr("no checksum: damaged, or not written by tpucost; regenerate the dataset")
	} else if err != nil {
		return nil, ferr("%v", err)
	}
	switch {
	case m.ManifestVersion != ManifestVersion:
		return nil, ferr("manifest_version is %d, this tpucost reads %d", m.ManifestVersion, ManifestVersion)
	case m.Table != MeasuredTable || m.SchemaVersion != MeasuredSchemaVersion:
		return nil, ferr("table %q schema %d, this tpucost reads %s schema %d", m.Table, m.SchemaVersion, MeasuredTable, MeasuredSchemaVersion)
	case m.Task != task:
		return nil, ferr("manifest of task %q disagrees with its file name", m.Task)
	case !m.Format.Valid():
		return nil, ferr("unknown format %q", m.Format)
	case m.File.Name != MeasuredFileName(task, m.Format):
		return nil, ferr("lists %s, want %s", m.File.Name, MeasuredFileName(task, m.Format))
	case m.File.SizeBytes < 0 || m.File.Rows < 0 || m.File.Rows > maxMeasuredRows || !sha256RE.MatchString(m.File.SHA256):
		return nil, ferr("bad size, rows or sha256 of %s", m.File.Name)
	}
	return &m, nil
}

// readMeasuredFile decodes the table file at path (verified against m) into d.
func readMeasuredFile(path string, m *MeasuredManifest, d *Measured) (err error) {
	ferr := func(err error) error { return &FileError{File: path, Err: err} }
	mem := boundedAlloc{memory.DefaultAllocator}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		f.Close()
	}()
	defer guard(path, &err)
	var schema *arrow.Schema
	var next func() (arrow.RecordBatch, bool, error) // a batch the caller releases
	switch m.Format {
	case FormatArrow:
		if err := verifyIPC(f, m.File.SizeBytes); err != nil {
			return ferr(err)
		}
		r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem), ipc.WithBodySizeLimit(m.File.SizeBytes), ipc.WithMetadataSizeLimit(m.File.SizeBytes))
		if err != nil {
			return ferr(fmt.Errorf("not a readable Arrow IPC file: %w", err))
		}
		closers = append(closers, func() { r.Close() })
		schema = r.Schema()
		i := 0
		next = func() (arrow.RecordBatch, bool, error) {
			if i >= r.NumRecords() {
				return nil, false, nil
			}
			rec, err := r.RecordBatchAt(i)
			i++
			return rec, err == nil, err
		}
	case FormatParquet:
		props := parquet.NewReaderProperties(mem)
		pr, err := file.NewParquetReader(f, file.WithReadProps(props))
		if err != nil {
			return ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		closers = append(closers, func() { pr.Close() })
		if pr.MetaData().KeyValueMetadata().FindValue("ARROW:schema") != nil {
			return ferr(errors.New("unexpected ARROW:schema metadata: not a tpucost file"))
		}
		pa, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: maxBatchRows}, mem)
		if err != nil {
			return ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		if schema, err = pa.Schema(); err != nil {
			return ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		kv := pr.MetaData().KeyValueMetadata()
		keys, vals := []string{}, []string{}
		for _, k := range []string{MetaTable, MetaProvenance} {
			if v := kv.FindValue(k); v != nil {
				keys, vals = append(keys, k), append(vals, *v)
			}
		}
		md := arrow.NewMetadata(keys, vals)
		schema = arrow.NewSchema(schema.Fields(), &md)
		rr, err := pa.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			return ferr(err)
		}
		closers = append(closers, rr.Release)
		next = func() (arrow.RecordBatch, bool, error) {
			if !rr.Next() {
				return nil, false, rr.Err()
			}
			rec := rr.RecordBatch()
			rec.Retain()
			return rec, true, nil
		}
	}
	md := schema.Metadata()
	get := func(k string) string {
		if i := md.FindKey(k); i >= 0 {
			return md.Values()[i]
		}
		return ""
	}
	if t := get(MetaTable); t != MeasuredTable {
		return ferr(fmt.Errorf("metadata %s is %q, want %s: not a measured-config table", MetaTable, t, MeasuredTable))
	}
	if err := jsonerr.UnmarshalStrict(MetaProvenance+" metadata", []byte(get(MetaProvenance)), &d.Provenance); err != nil {
		return ferr(err)
	}
	p := &d.Provenance
	if err := p.Check(); err != nil {
		return ferr(err)
	}
	if p.Task != m.Task {
		return ferr(fmt.Errorf("provenance of task %q, its manifest says %q", p.Task, m.Task))
	}
	want := measuredFields(p)
	if err := checkFields(schema, want); err != nil {
		return ferr(err)
	}
	ni, ns := len(p.IntColumns), len(p.StringColumns)
	for batch := 0; ; batch++ {
		rec, ok, err := next()
		if err != nil {
			return ferr(fmt.Errorf("record batch %d: %w", batch, err))
		}
		if !ok {
			break
		}
		err = func() error {
			defer rec.Release()
			if err := checkBatch(rec, want, nil); err != nil {
				return err
			}
			if int64(len(d.Rows))+rec.NumRows() > m.File.Rows {
				return fmt.Errorf("more rows than the %d %s lists", m.File.Rows, d.Manifest)
			}
			col := rec.Columns()
			k := 3 + ni + ns
			for i := 0; i < int(rec.NumRows()); i++ {
				r := MeasuredRow{Seq: col[0].(*array.Int64).Value(i), Config: strings.Clone(col[1].(*array.String).Value(i)),
					Problem: strings.Clone(col[2].(*array.String).Value(i)), Ints: make([]int64, ni), Strs: make([]string, ns),
					MedianNs: col[k].(*array.Float64).Value(i), SpreadPct: col[k+1].(*array.Float64).Value(i),
					Noise: col[k+2].(*array.Float64).Value(i), Repeats: col[k+3].(*array.Int32).Value(i),
					Rejected: col[k+4].(*array.Int32).Value(i), Remeasured: col[k+5].(*array.Int32).Value(i),
					Calls: col[k+6].(*array.Int32).Value(i), AnalyticalNs: col[k+7].(*array.Float64).Value(i)}
				for j := range r.Ints {
					r.Ints[j] = col[3+j].(*array.Int64).Value(i)
				}
				for j := range r.Strs {
					r.Strs[j] = strings.Clone(col[3+ni+j].(*array.String).Value(i))
				}
				if err := checkMeasuredRow(p, &r, int64(len(d.Rows))); err != nil {
					return fmt.Errorf("row %d: %w", len(d.Rows), err)
				}
				d.Rows = append(d.Rows, r)
			}
			return nil
		}()
		if err != nil {
			return ferr(err)
		}
	}
	if int64(len(d.Rows)) != m.File.Rows {
		return ferr(fmt.Errorf("%d rows, %s lists %d", len(d.Rows), d.Manifest, m.File.Rows))
	}
	return nil
}

// MeasuredSummary describes a measured-config table: the `inspect --json` of such a
// directory (keys shared with Summary have its types).
type MeasuredSummary struct {
	Dir            string             `json:"dir"`
	Format         Format             `json:"format"`
	Table          string             `json:"table"`
	Tasks          []string           `json:"tasks"`
	Backend        string             `json:"backend"`
	Rows           int64              `json:"rows"`          // measured configs
	Problems       int                `json:"problem_count"` // distinct problems
	RuntimeNs      RuntimeStats       `json:"runtime_ns"`
	NoiseMedian    float64            `json:"noise_median"`    // median of the rows' noise
	NoisyRows      int                `json:"noisy_rows"`      // rows noisier than the method's max_noise
	Rejected       int64              `json:"rejected"`        // outlier repeats, summed
	RemeasuredRows int                `json:"remeasured_rows"` // rows measured again
	SchemaVersion  int                `json:"schema_version"`
	Bytes          int64              `json:"size_bytes"`
	Manifests      []string           `json:"manifests"`
	VerifiedFiles  int                `json:"verified_files"`
	Schema         []Column           `json:"schema"`
	Provenance     MeasuredProvenance `json:"provenance"`
	Files          []MeasuredFile     `json:"files"`
}

// MeasuredFile is the table's file in a MeasuredSummary.
type MeasuredFile struct {
	Name   string `json:"name"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"size_bytes"`
	SHA256 string `json:"sha256"`
}

// InspectMeasured summarizes d.
func InspectMeasured(d *Measured) *MeasuredSummary {
	p := d.Provenance
	s := &MeasuredSummary{Dir: d.Dir, Format: d.Format, Table: p.Table, Tasks: []string{p.Task}, Backend: p.Backend,
		Rows: int64(len(d.Rows)), SchemaVersion: p.SchemaVersion, Bytes: d.File.SizeBytes, Manifests: []string{d.Manifest},
		VerifiedFiles: 1, Provenance: p, Files: []MeasuredFile{{Name: d.File.Name, Rows: d.File.Rows, Bytes: d.File.SizeBytes, SHA256: d.File.SHA256}}}
	for _, f := range measuredFields(&p) {
		s.Schema = append(s.Schema, Column{Name: f.Name, Type: f.Type.String()})
	}
	probs := map[string]bool{}
	ns, noise := make([]float64, 0, len(d.Rows)), make([]float64, 0, len(d.Rows))
	for _, r := range d.Rows {
		probs[r.Problem] = true
		ns, noise = append(ns, r.MedianNs), append(noise, r.Noise)
		s.Rejected += int64(r.Rejected)
		if r.Remeasured > 0 {
			s.RemeasuredRows++
		}
		if r.Noise > p.Method.MaxNoise {
			s.NoisyRows++
		}
	}
	s.Problems = len(probs)
	if len(ns) > 0 {
		slices.Sort(ns)
		s.RuntimeNs = RuntimeStats{Min: ns[0], Median: sortedMedian(ns), Max: ns[len(ns)-1]}
		slices.Sort(noise)
		s.NoiseMedian = sortedMedian(noise)
	}
	return s
}

// sortedMedian is the median of sorted, non-empty xs.
func sortedMedian(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// WriteText prints the summary for a person.
func (s *MeasuredSummary) WriteText(out io.Writer) error {
	p := s.Provenance
	_, err := fmt.Fprintf(out, "%s: measured-config table (schema %d), task %s, %d configs of %d problems measured on %s (%s, %s, %d CPUs, %s), %s, %d bytes\n"+
		"median time: min %.0f ns, median %.0f ns, max %.0f ns; noise median %.2f%%, %d rows noisier than %.0f%%; %d outlier repeats rejected; %d rows re-measured\n"+
		"method: %d warm-up, %d repeats, outliers beyond %.1f robust deviations, up to %d re-measurements; load %s -> %s; seed %d; %s\n"+
		"verified %s (%s...) against %s\n",
		s.Dir, s.SchemaVersion, p.Task, s.Rows, s.Problems, p.Backend, orDash(p.Machine.CPUModel), p.Machine.GOARCH, p.Machine.CPUs, p.Machine.GoVersion,
		s.Format, s.Bytes,
		s.RuntimeNs.Min, s.RuntimeNs.Median, s.RuntimeNs.Max, 100*s.NoiseMedian, s.NoisyRows, 100*p.Method.MaxNoise, s.Rejected, s.RemeasuredRows,
		p.Method.Warmup, p.Method.Repeats, p.Method.OutlierK, p.Method.Retries, orDash(p.LoadStart), orDash(p.LoadEnd), p.Seed, orDash(p.ToolVersion),
		s.Files[0].Name, s.Files[0].SHA256[:16], s.Manifests[0])
	return err
}
