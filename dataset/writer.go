package dataset

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
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
	Provenance Provenance       // ShardIndex/ShardCount identify this writer's shard
	Alloc      memory.Allocator // nil: memory.DefaultAllocator
}

// Writer writes one shard of a dataset as a sequence of parts. Each part covers a range of
// work units and is two files, its rows and its occurrences, each written to a temporary
// name and renamed when complete; a part is complete when its rows file exists. A Writer
// is not safe for concurrent use; writers of different shards may share a directory.
type Writer struct {
	dir    string
	format Format
	prov   Provenance
	mem    memory.Allocator
	prefix string
	node   int
	kernel int
	config int

	nextUnit int64
	seen     map[string]bool
	nextPart int
	closed   bool
}

// NewWriter creates Dir, removes this shard's leftover temporary files (and the
// occurrences files of parts whose rows file was never completed), and checks that the
// complete parts already there (this shard's and others') were generated with the same
// settings (provenance equal except ShardIndex and unit ranges, and the same format);
// otherwise it returns an error saying that Dir holds a dataset generated with different
// settings and which field differs. A zero ShardCount means one shard.
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
	w := &Writer{dir: opts.Dir, format: opts.Format, prov: p, mem: opts.Alloc,
		prefix: shardPrefix(p.Task, p.ShardIndex, p.ShardCount), seen: map[string]bool{}}
	w.node, w.kernel, w.config = p.Widths()
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if err := w.scan(); err != nil {
		return nil, err
	}
	return w, nil
}

// scan cleans up this shard's incomplete files, checks the complete parts against the
// writer's settings, and loads the resume state from this shard's complete parts.
func (w *Writer) scan() error {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(w.dir, name)
		if strings.HasPrefix(name, w.prefix) && strings.HasSuffix(name, tmpSuffix) {
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("dataset: removing temporary file: %w", err)
			}
			continue
		}
		fn, ok := parseFileName(name)
		if !ok {
			continue
		}
		rowsName, _ := PartFileNames(Task(fn.task), fn.shard, fn.count, fn.part, fn.format)
		if fn.occ {
			if strings.HasPrefix(name, w.prefix) && !names[rowsName] {
				// The occurrences of a part whose rows file was never renamed into place.
				if err := os.Remove(path); err != nil {
					return fmt.Errorf("dataset: removing incomplete part: %w", err)
				}
			}
			continue
		}
		if err := w.checkPart(path, fn); err != nil {
			return err
		}
	}
	return nil
}

// checkPart checks one complete part's rows file against the writer's settings and, if it
// belongs to this shard, adds it to the resume state.
func (w *Writer) checkPart(path string, fn fileName) error {
	differ := func(field string, have, want any) error {
		h, _ := json.Marshal(have)
		x, _ := json.Marshal(want)
		return fmt.Errorf("dataset: %s holds a dataset generated with different settings: %s has %s %s, this run has %s",
			w.dir, filepath.Base(path), field, abbreviate(string(h)), abbreviate(string(x)))
	}
	if fn.format != w.format {
		return differ("format", fn.format, w.format)
	}
	f, err := openBatchFile(path, fn.format, w.mem, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	m := f.meta
	if field := m.Prov.Diff(w.prov); field != "" {
		return differ(field, jsonField(m.Prov, field), jsonField(w.prov, field))
	}
	if fn.shard != w.prov.ShardIndex {
		return nil
	}
	if m.Prov.ShardIndex != fn.shard {
		return &FileError{File: path, Err: fmt.Errorf("metadata says shard %d, the name says %d", m.Prov.ShardIndex, fn.shard)}
	}
	w.nextUnit = max(w.nextUnit, m.UnitLast+1)
	w.nextPart = max(w.nextPart, fn.part+1)
	return f.batches([]string{ColKernelKey}, func(rec arrow.RecordBatch) error {
		keys, err := stringColumn(rec, ColKernelKey)
		if err != nil {
			return err
		}
		for i := 0; i < keys.Len(); i++ {
			w.seen[strings.Clone(keys.Value(i))] = true
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
// then its rows file, each to a temporary name then renamed, so that the part is complete
// exactly when its rows file exists. Part files are named
// "<task>-<shardIndex>of<shardCount>-<part:05d>.<format>" and
// "<task>-<shardIndex>of<shardCount>-<part:05d>.occ.<format>". Rows and occurrences may be
// empty; every row and occurrence must lie in the unit range, which must start at or after
// the unit Resume reports, and every row must have the dataset's task and feature widths.
// The caller bounds the files' size by the units it puts in a part (Row.SizeBytes
// estimates a row's size).
func (w *Writer) WritePart(firstUnit, lastUnit int64, rows []Row, occ []Occurrence) error {
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
	}
	for i, o := range occ {
		if o.Unit < firstUnit || o.Unit > lastUnit {
			return fmt.Errorf("dataset: occurrence %d (kernel %s) has unit %d outside [%d, %d]", i, o.KernelKey, o.Unit, firstUnit, lastUnit)
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
	err = writeAtomic(filepath.Join(w.dir, occName), func(out io.Writer) error {
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
	rowsSchema := arrow.NewSchema(rowsFields(), &md)
	chunks := batchBounds(rows)
	err = writeAtomic(filepath.Join(w.dir, rowsName), func(out io.Writer) error {
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
	w.nextUnit = lastUnit + 1
	w.nextPart++
	for i := range rows {
		w.seen[rows[i].KernelKey] = true
	}
	return nil
}

// Close ends the writer. Every part is complete when WritePart returns, so Close only
// prevents further writes.
func (w *Writer) Close() error {
	w.closed = true
	return nil
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

// writeAtomic writes path atomically (internal/atomicfile), reporting failures as a
// FileError naming path.
func writeAtomic(path string, write func(io.Writer) error) error {
	if err := atomicfile.Write(path, write); err != nil {
		return &FileError{File: path, Err: err}
	}
	return nil
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
