package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/dirlock"
	"io"
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
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Format is a dataset's file format.
type Format string

// The formats: Arrow IPC files (the default) and Parquet, both zstd-compressed.
const (
	FormatArrow   Format = "arrow"
	FormatParquet Format = "parquet"
)

// ext is the file name extension of the format, without the dot.
func (f Format) ext() string { return string(f) }

// Valid reports whether f is a known format.
func (f Format) Valid() bool { return f == FormatArrow || f == FormatParquet }

// Batching of rows into record batches (Arrow) and row groups (Parquet): a batch holds at
// most maxBatchRows rows and, unless it has a single row, at most targetBatchBytes of
// estimated uncompressed data. Readers hold one batch at a time, so this bounds their
// memory.
const (
	targetBatchBytes = 8 << 20
	maxBatchRows     = 4096
)

// tmpSuffix marks a file being written; readers ignore such files and the next writer of
// the shard removes them.
const tmpSuffix = atomicfile.TmpSuffix

// fileName is the parsed name of a part file:
// "<task>-<shard>of<count>-<part:05d>[.occ].<arrow|parquet>".
type fileName struct {
	task         string
	shard, count int
	part         int
	occ          bool
	format       Format
}

var fileNameRE = regexp.MustCompile(`^([a-z]+)-([0-9]+)of([0-9]+)-([0-9]{5,})(\.occ)?\.(arrow|parquet)$`)

// parseFileName parses a part file's base name; ok is false for other names (temporary
// files included).
func parseFileName(name string) (fileName, bool) {
	m := fileNameRE.FindStringSubmatch(name)
	if m == nil {
		return fileName{}, false
	}
	shard, err1 := strconv.Atoi(m[2])
	count, err2 := strconv.Atoi(m[3])
	part, err3 := strconv.Atoi(m[4])
	if err1 != nil || err2 != nil || err3 != nil || count < 1 || shard >= count {
		return fileName{}, false
	}
	return fileName{task: m[1], shard: shard, count: count, part: part, occ: m[5] != "", format: Format(m[6])}, true
}

// shardPrefix is the common prefix of a shard's file names.
func shardPrefix(task Task, shard, count int) string {
	return fmt.Sprintf("%s-%dof%d-", task, shard, count)
}

// PartFileNames returns the base names of a part's rows file and occurrences file.
func PartFileNames(task Task, shard, count, part int, format Format) (rows, occ string) {
	base := fmt.Sprintf("%s%05d", shardPrefix(task, shard, count), part)
	return base + "." + format.ext(), base + ".occ." + format.ext()
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	Dir        string
	Format     Format           // default arrow
	Provenance Provenance       // ShardIndex/ShardCount identify this writer's shard; SchemaVersion 0 is SchemaVersion
	Alloc      memory.Allocator // nil: memory.DefaultAllocator
}

// Writer writes one shard of a dataset as a sequence of parts. Each part covers a range of
// work units and is two files, its rows and its occurrences, each written to a temporary
// name unique to the process and renamed when complete; a part is committed when the
// shard's manifest (ManifestName), rewritten atomically after the part's files are in
// place, lists it with the files' sizes and SHA-256. A Writer holds the shard's lock file
// (LockName) from NewWriter to Close, so a second writer of the same shard and directory,
// in any process, is refused. A Writer is not safe for concurrent use; writers of
// different shards may share a directory.
type Writer struct {
	dir    string
	format Format
	prov   Provenance
	mem    memory.Allocator
	prefix string
	node   int
	kernel int
	config int

	lock         *dirlock.Lock
	manifest     Manifest // the committed parts
	manifestPath string
	tmpTag       string // ".<pid>": temporary names are "<name>.<pid>.tmp"

	nextUnit   int64
	createdDir bool // NewWriter made dir (Discard removes it if it is left empty)
	seen       map[string]bool
	samples    int64 // measured configs of the committed parts
	nextPart   int
	closed     bool
}

// NewWriter creates Dir and takes the shard's lock (if another process holds it, the error
// wraps ErrLocked and says who: pid, host, start time, command line). It then removes this
// shard's leftover temporary files and the files of a part that was never committed,
// verifies the committed parts against the shard's manifest (size and SHA-256; a new
// shard gets an empty manifest), and checks that the parts already there (this shard's
// and others') were generated with the same settings (provenance equal except ShardIndex
// and unit ranges, and the same format); otherwise it returns an error saying that Dir
// holds a dataset generated with different settings and which field differs. Part files
// of this shard without a manifest (a directory written before manifests existed) are
// refused. A zero ShardCount means one shard. Close releases the lock.
func NewWriter(opts WriterOptions) (*Writer, error) {
	if opts.Dir == "" {
		return nil, errors.New("dataset: no output directory")
	}
	if opts.Format == "" {
		opts.Format = FormatArrow
	}
	if !opts.Format.Valid() {
		return nil, fmt.Errorf("dataset: unknown format %q (want arrow or parquet)", opts.Format)
	}
	if opts.Alloc == nil {
		opts.Alloc = memory.DefaultAllocator
	}
	p := opts.Provenance
	if p.ShardCount == 0 {
		p.ShardCount = 1
	}
	if p.ShardCount < 0 || p.ShardIndex < 0 || p.ShardIndex >= p.ShardCount {
		return nil, fmt.Errorf("dataset: shard %d of %d is out of range", p.ShardIndex, p.ShardCount)
	}
	if !slices.Contains(Tasks(), p.Task) {
		return nil, fmt.Errorf("dataset: unknown task %q", p.Task)
	}
	if p.SchemaVersion == 0 {
		p.SchemaVersion = SchemaVersion
	}
	if p.SchemaVersion < MinSchemaVersion || p.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("dataset: schema version %d: this tpucost writes %d to %d", p.SchemaVersion, MinSchemaVersion, SchemaVersion)
	}
	if p.SchemaVersion < 2 && len(p.Families) > 0 {
		return nil, fmt.Errorf("dataset: schema version %d records no model families; families need schema 2", p.SchemaVersion)
	}
	w := &Writer{dir: opts.Dir, format: opts.Format, prov: p, mem: opts.Alloc,
		prefix: shardPrefix(p.Task, p.ShardIndex, p.ShardCount), seen: map[string]bool{},
		manifestPath: filepath.Join(opts.Dir, ManifestName(p.Task, p.ShardIndex, p.ShardCount)),
		tmpTag:       fmt.Sprintf(".%d", os.Getpid())}
	w.node, w.kernel, w.config = p.Widths()
	if _, err := os.Stat(w.dir); errors.Is(err, os.ErrNotExist) {
		w.createdDir = true
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	lock, err := lockShard(w.dir, p.Task, p.ShardIndex, p.ShardCount)
	if err != nil {
		return nil, err
	}
	w.lock = lock
	if err := w.scan(); err != nil {
		lock.Release()
		return nil, err
	}
	return w, nil
}

// tmpPath is the temporary name of path while this writer writes it.
func (w *Writer) tmpPath(path string) string { return path + w.tmpTag + tmpSuffix }

// scan cleans up this shard's temporary files and uncommitted part, verifies its
// committed parts against its manifest, checks the parts of the directory against the
// writer's settings, and loads the resume state from this shard's committed parts. The
// writer holds the shard's lock, so no other process writes this shard's files.
func (w *Writer) scan() error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	manifestName := filepath.Base(w.manifestPath)
	var own []fileName
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(w.dir, name)
		if (strings.HasPrefix(name, w.prefix) || strings.HasPrefix(name, manifestName)) && strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("dataset: removing temporary file: %w", err)
			}
			continue
		}
		if measuredManifestRE.MatchString(name) {
			return fmt.Errorf("dataset: %s holds a measured-config table (%s): choose another directory", w.dir, name)
		}
		if t, i, n, ok := parseManifestName(name); ok && name != manifestName {
			// Another shard's manifest, written when its writer started: a run with
			// another task, shard count or format must not share the directory, even
			// before it commits a part.
			if err := w.checkManifest(path, t, i, n); err != nil {
				return err
			}
			continue
		}
		fn, ok := parseFileName(name)
		if !ok {
			continue
		}
		if strings.HasPrefix(name, w.prefix) {
			own = append(own, fn)
			continue
		}
		if fn.occ {
			continue
		}
		// Another shard's part: the same settings?
		if fn.format != w.format {
			return w.differ(path, "format", fn.format, w.format)
		}
		if _, err := w.checkPart(path, fn); err != nil {
			return err
		}
	}

	m, err := readManifest(w.manifestPath, w.prov.Task, w.prov.ShardIndex, w.prov.ShardCount)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if len(own) > 0 {
			rows, _ := PartFileNames(w.prov.Task, w.prov.ShardIndex, w.prov.ShardCount, own[0].part, own[0].format)
			return &FileError{File: filepath.Join(w.dir, rows), Err: fmt.Errorf("%s holds parts of this shard but no manifest %s: "+
				"it was written by a tpucost older than dataset manifests; regenerate it into a new directory", w.dir, manifestName)}
		}
		m = &Manifest{ManifestVersion: ManifestVersion, SchemaVersion: w.prov.SchemaVersion, Task: w.prov.Task, Format: w.format,
			ShardIndex: w.prov.ShardIndex, ShardCount: w.prov.ShardCount, Parts: []ManifestPart{}}
		if err := w.writeManifest(m); err != nil {
			return err
		}
	case err != nil:
		return err
	case m.Format != w.format:
		return w.differ(w.manifestPath, "format", m.Format, w.format)
	}
	w.manifest = *m

	// This shard's files: committed (listed) or the uncommitted next part, which a killed
	// writer can leave behind and is removed here; anything else is an error.
	committed := len(m.Parts)
	for _, fn := range own {
		rows, occ := PartFileNames(w.prov.Task, w.prov.ShardIndex, w.prov.ShardCount, fn.part, fn.format)
		name := rows
		if fn.occ {
			name = occ
		}
		path := filepath.Join(w.dir, name)
		switch {
		case fn.part < committed && fn.format == m.Format:
		case fn.part == committed && fn.format == m.Format:
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("dataset: removing an uncommitted part: %w", err)
			}
		default:
			return &FileError{File: path, Err: fmt.Errorf("not listed in %s, which lists parts 0 to %d: a stray or renamed file", manifestName, committed-1)}
		}
	}
	for _, p := range m.Parts {
		rowsPath, occPath := filepath.Join(w.dir, p.Rows.Name), filepath.Join(w.dir, p.Occurrences.Name)
		if err := verifyFile(occPath, p.Occurrences, w.manifestPath); err != nil {
			return err
		}
		if err := verifyFile(rowsPath, p.Rows, w.manifestPath); err != nil {
			return err
		}
		fn, _ := parseFileName(p.Rows.Name)
		meta, err := w.checkPart(rowsPath, fn)
		if err != nil {
			return err
		}
		if meta.UnitFirst != p.UnitFirst || meta.UnitLast != p.UnitLast {
			return &FileError{File: rowsPath, Err: fmt.Errorf("covers units [%d, %d], %s says [%d, %d]", meta.UnitFirst, meta.UnitLast, manifestName, p.UnitFirst, p.UnitLast)}
		}
	}
	w.nextPart = committed
	return nil
}

// checkManifest checks another shard's manifest against the writer's task, shard count
// and format.
func (w *Writer) checkManifest(path string, task Task, shard, count int) error {
	switch {
	case task != w.prov.Task:
		return w.differ(path, "task", task, w.prov.Task)
	case count != w.prov.ShardCount:
		return w.differ(path, "shard_count", count, w.prov.ShardCount)
	}
	m, err := readManifest(path, task, shard, count)
	if err != nil {
		return err
	}
	if m.Format != w.format {
		return w.differ(path, "format", m.Format, w.format)
	}
	return nil
}

// writeManifest replaces the shard's manifest with m, atomically and durably.
func (w *Writer) writeManifest(m *Manifest) error {
	b, err := m.encode()
	if err != nil {
		return fmt.Errorf("dataset: encoding the manifest: %w", err)
	}
	err = atomicfile.WriteVia(w.manifestPath, w.tmpPath(w.manifestPath), func(out io.Writer) error {
		_, err := out.Write(b)
		return err
	})
	if err != nil {
		return &FileError{File: w.manifestPath, Err: err}
	}
	return syncDir(w.dir)
}

// differ is the error for a file generated with other settings than the writer's.
func (w *Writer) differ(path, field string, have, want any) error {
	h, _ := json.Marshal(have)
	x, _ := json.Marshal(want)
	return fmt.Errorf("dataset: %s holds a dataset generated with different settings: %s has %s %s, this run has %s",
		w.dir, filepath.Base(path), field, abbreviate(string(h)), abbreviate(string(x)))
}

// checkPart checks one part's rows file against the writer's settings and, if it belongs
// to this shard, adds it to the resume state. It returns the file's metadata.
func (w *Writer) checkPart(path string, fn fileName) (fileMeta, error) {
	if fn.format != w.format {
		return fileMeta{}, w.differ(path, "format", fn.format, w.format)
	}
	f, err := openBatchFile(path, fn.format, w.mem, 0)
	if err != nil {
		return fileMeta{}, err
	}
	defer f.Close()
	m := f.meta
	if field := m.Prov.Diff(w.prov); field != "" {
		return m, w.differ(path, field, jsonField(m.Prov, field), jsonField(w.prov, field))
	}
	if fn.shard != w.prov.ShardIndex {
		return m, nil
	}
	if m.Prov.ShardIndex != fn.shard {
		return m, &FileError{File: path, Err: fmt.Errorf("metadata says shard %d, the name says %d", m.Prov.ShardIndex, fn.shard)}
	}
	w.nextUnit = max(w.nextUnit, m.UnitLast+1)
	return m, f.batches([]string{ColKernelKey, ColRuntimeNs}, func(rec arrow.RecordBatch) error {
		keys, err := stringColumn(rec, ColKernelKey)
		if err != nil {
			return err
		}
		for i := 0; i < keys.Len(); i++ {
			w.seen[strings.Clone(keys.Value(i))] = true
		}
		idx := rec.Schema().FieldIndices(ColRuntimeNs)
		if len(idx) != 1 {
			return fmt.Errorf("no column %q", ColRuntimeNs)
		}
		runtimes, ok := rec.Column(idx[0]).(*array.List)
		if !ok {
			return fmt.Errorf("column %q is %s, want a list", ColRuntimeNs, rec.Column(idx[0]).DataType())
		}
		for i := 0; i < runtimes.Len(); i++ {
			start, end := runtimes.ValueOffsets(i)
			w.samples += end - start
		}
		return nil
	})
}

// jsonField returns the value of the field of p whose JSON name is name.
func jsonField(p Provenance, name string) any {
	var m map[string]any
	b, _ := json.Marshal(p)
	_ = json.Unmarshal(b, &m)
	return m[name]
}

// abbreviate shortens long values in error messages.
func abbreviate(s string) string {
	const limit = 80
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// Resume reports, from this shard's complete parts (and the parts written since): the unit
// after the last unit covered (0 if none), the kernel keys already written (a copy the
// caller may change), and the next part number.
func (w *Writer) Resume() (nextUnit int64, seen map[string]bool, nextPart int) {
	seen = make(map[string]bool, len(w.seen))
	for k := range w.seen {
		seen[k] = true
	}
	return w.nextUnit, seen, w.nextPart
}

// WritePart writes one part covering units [firstUnit, lastUnit]: its occurrences file,
// then its rows file, each to a temporary name then renamed, then the shard's manifest
// listing them (size, SHA-256, rows) with the earlier parts, atomically: the part is
// committed exactly when the manifest lists it. Part files are named
// "<task>-<shardIndex>of<shardCount>-<part:05d>.<format>" and
// "<task>-<shardIndex>of<shardCount>-<part:05d>.occ.<format>". Rows and occurrences may be
// empty; every row and occurrence must lie in the unit range, which must start at or after
// the unit Resume reports, and every row must have the dataset's task and feature widths.
// The caller bounds the files' size by the units it puts in a part (Row.SizeBytes
// estimates a row's size).
func (w *Writer) WritePart(firstUnit, lastUnit int64, rows []Row, occ []Occurrence) error {
	return w.WritePartWithFailures(firstUnit, lastUnit, rows, occ, nil)
}

// WritePartWithFailures is WritePart for a part some of whose units failed: the manifest
// entry of the part lists them (ManifestPart.Failed), which must lie in the unit range, in
// increasing unit order, and have no rows or occurrences.
func (w *Writer) WritePartWithFailures(firstUnit, lastUnit int64, rows []Row, occ []Occurrence, failed []FailedUnit) error {
	if w.closed {
		return errors.New("dataset: WritePart after Close")
	}
	if firstUnit > lastUnit {
		return fmt.Errorf("dataset: empty unit range [%d, %d]", firstUnit, lastUnit)
	}
	if firstUnit < w.nextUnit {
		return fmt.Errorf("dataset: units [%d, %d] overlap units already written (next unit is %d)", firstUnit, lastUnit, w.nextUnit)
	}
	for i := range rows {
		r := &rows[i]
		if r.Unit < firstUnit || r.Unit > lastUnit {
			return fmt.Errorf("dataset: row %d (kernel %s) has unit %d outside [%d, %d]", i, r.KernelKey, r.Unit, firstUnit, lastUnit)
		}
		if r.Task != w.prov.Task {
			return fmt.Errorf("dataset: row %d (kernel %s) has task %q, the dataset's is %q", i, r.KernelKey, r.Task, w.prov.Task)
		}
		if err := checkRow(r, w.node, w.kernel, w.config); err != nil {
			return fmt.Errorf("dataset: row %d (kernel %s): %w", i, r.KernelKey, err)
		}
		if len(r.ConfigNodes) > 0 && !w.prov.PerNodeConfigs {
			return fmt.Errorf("dataset: row %d (kernel %s) has configurable nodes, the dataset has no per-node configs", i, r.KernelKey)
		}
		if (len(r.Normalizers) > 0) != w.prov.RuntimeNormalizers && len(r.Configs) > 0 {
			return fmt.Errorf("dataset: row %d (kernel %s) has %d runtime normalizers; the dataset records them: %v", i, r.KernelKey, len(r.Normalizers), w.prov.RuntimeNormalizers)
		}
	}
	for i, o := range occ {
		if o.Unit < firstUnit || o.Unit > lastUnit {
			return fmt.Errorf("dataset: occurrence %d (kernel %s) has unit %d outside [%d, %d]", i, o.KernelKey, o.Unit, firstUnit, lastUnit)
		}
	}
	failedUnits := map[int64]bool{}
	for i, f := range failed {
		if f.Unit < firstUnit || f.Unit > lastUnit || (i > 0 && f.Unit <= failed[i-1].Unit) {
			return fmt.Errorf("dataset: failed unit %d is outside [%d, %d] or out of order", f.Unit, firstUnit, lastUnit)
		}
		failedUnits[f.Unit] = true
	}
	var samples int64
	for i := range rows {
		if failedUnits[rows[i].Unit] {
			return fmt.Errorf("dataset: row %d (kernel %s) belongs to unit %d, which failed", i, rows[i].KernelKey, rows[i].Unit)
		}
		samples += int64(rows[i].Samples())
	}
	for i, o := range occ {
		if failedUnits[o.Unit] {
			return fmt.Errorf("dataset: occurrence %d (kernel %s) belongs to unit %d, which failed", i, o.KernelKey, o.Unit)
		}
	}
	rowsName, occName := PartFileNames(w.prov.Task, w.prov.ShardIndex, w.prov.ShardCount, w.nextPart, w.format)
	m := fileMeta{Prov: w.prov, UnitFirst: firstUnit, UnitLast: lastUnit, Part: w.nextPart}

	m.Content = contentOccurrences
	md, err := m.metadata()
	if err != nil {
		return err
	}
	occSchema := arrow.NewSchema(occFields(), &md)
	occFile, err := w.writeFile(occName, int64(len(occ)), func(out io.Writer) error {
		return writeBatches(out, w.format, occSchema, w.mem, 1, func(int) arrow.RecordBatch {
			return buildOcc(w.mem, occSchema, occ)
		})
	})
	if err != nil {
		return err
	}

	m.Content = contentRows
	if md, err = m.metadata(); err != nil {
		return err
	}
	rowsSchema := arrow.NewSchema(rowsFields(columnsOf(w.prov)), &md)
	chunks := batchBounds(rows)
	rowsFile, err := w.writeFile(rowsName, int64(len(rows)), func(out io.Writer) error {
		return writeBatches(out, w.format, rowsSchema, w.mem, len(chunks)-1, func(i int) arrow.RecordBatch {
			return buildRows(w.mem, rowsSchema, rows[chunks[i]:chunks[i+1]])
		})
	})
	if err != nil {
		return err
	}
	if err := syncDir(w.dir); err != nil {
		return err
	}
	next := w.manifest
	next.Parts = append(slices.Clip(w.manifest.Parts), ManifestPart{Part: w.nextPart, UnitFirst: firstUnit, UnitLast: lastUnit,
		Rows: rowsFile, Occurrences: occFile, Failed: slices.Clone(failed)})
	if err := w.writeManifest(&next); err != nil {
		return err
	}
	w.manifest = next
	w.samples += samples
	w.nextUnit = lastUnit + 1
	w.nextPart++
	for i := range rows {
		w.seen[rows[i].KernelKey] = true
	}
	return nil
}

// Committed sums this shard's committed parts (those of earlier runs and those written
// since): rows, samples (measured configs) and the failed units, in unit order.
func (w *Writer) Committed() (rows, samples int64, failed []FailedUnit) {
	for _, p := range w.manifest.Parts {
		rows += p.Rows.Rows
		failed = append(failed, p.Failed...)
	}
	return rows, w.samples, failed
}

// Close ends the writer and releases the shard's lock. Every part is committed when
// WritePart returns, so Close writes nothing. Calling Close again does nothing.
func (w *Writer) Close() error {
	w.closed = true
	return w.lock.Release()
}

// Discard ends a writer after a failure: if its shard holds no committed part, its
// manifest is removed (and the directory, if NewWriter made it and nothing else is in
// it), so a run that failed before writing anything leaves no stub that readers call an
// incomplete dataset; with committed parts it is Close (a rerun resumes). It releases the
// lock either way.
func (w *Writer) Discard() error {
	if w.closed {
		return nil
	}
	var rerr error
	if len(w.manifest.Parts) == 0 {
		if err := os.Remove(w.manifestPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			rerr = fmt.Errorf("dataset: removing an empty manifest: %w", err)
		}
	}
	cerr := w.Close()
	if len(w.manifest.Parts) == 0 && w.createdDir {
		_ = os.Remove(w.dir) // only if empty
	}
	return errors.Join(rerr, cerr)
}

// batchBounds splits rows into batches (see targetBatchBytes); batch i is
// rows[b[i]:b[i+1]]. There is always at least one batch, possibly empty.
func batchBounds(rows []Row) []int {
	b := []int{0}
	size := 0
	for i := range rows {
		s := rowBytes(&rows[i])
		if n := i - b[len(b)-1]; n > 0 && (n >= maxBatchRows || size+s > targetBatchBytes) {
			b = append(b, i)
			size = 0
		}
		size += s
	}
	return append(b, len(rows))
}

// writeBatches writes n record batches, made by batch(i) and released here, as one file of
// the format with schema.
func writeBatches(out io.Writer, format Format, schema *arrow.Schema, mem memory.Allocator, n int, batch func(i int) arrow.RecordBatch) error {
	switch format {
	case FormatArrow:
		// The zstd stream encoder's output does not depend on goroutine scheduling, so
		// files are byte-identical for identical input (TestWriteDeterministic); one
		// compression goroutine keeps the writer light on shared machines.
		fw, err := ipc.NewFileWriter(out, ipc.WithSchema(schema), ipc.WithAllocator(mem), ipc.WithZstd(), ipc.WithCompressConcurrency(1))
		if err != nil {
			return err
		}
		return writeRecords(fw, n, batch)
	case FormatParquet:
		props := parquet.NewWriterProperties(
			parquet.WithAllocator(mem),
			parquet.WithCompression(compress.Codecs.Zstd),
			parquet.WithMaxRowGroupLength(1<<30), // one row group per batch
		)
		// No ARROW:schema key: the Parquet types already give the Arrow types, and readers
		// then parse no serialized Arrow schema from untrusted bytes.
		arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem))
		fw, err := pqarrow.NewFileWriter(schema, out, props, arrowProps)
		if err != nil {
			return err
		}
		return writeRecords(fw, n, batch)
	}
	return fmt.Errorf("unknown format %q", format)
}

// recordWriter is what the Arrow IPC and Parquet file writers share.
type recordWriter interface {
	Write(arrow.RecordBatch) error
	Close() error
}

// writeRecords writes batches 0..n-1 (releasing each) and closes fw.
func writeRecords(fw recordWriter, n int, batch func(int) arrow.RecordBatch) error {
	for i := 0; i < n; i++ {
		rec := batch(i)
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			fw.Close()
			return err
		}
	}
	return fw.Close()
}

// writeFile writes the part file name (holding rows rows or occurrences) atomically
// (internal/atomicfile, through this writer's temporary name) and returns its manifest
// entry. Failures are FileErrors naming the file.
func (w *Writer) writeFile(name string, rows int64, write func(io.Writer) error) (ManifestFile, error) {
	path := filepath.Join(w.dir, name)
	var hw *hashingWriter
	err := atomicfile.WriteVia(path, w.tmpPath(path), func(out io.Writer) error {
		hw = newHashingWriter(out)
		return write(hw)
	})
	if err != nil {
		return ManifestFile{}, &FileError{File: path, Err: err}
	}
	return ManifestFile{Name: name, SizeBytes: hw.n, SHA256: hw.sum(), Rows: rows}, nil
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("dataset: syncing %s: %w", dir, err)
	}
	return nil
}
