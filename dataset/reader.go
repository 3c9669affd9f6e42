package dataset

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// FileError is an error about one dataset file. Its message is one line starting with the
// file's path.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// maxAllocBytes bounds any single allocation made while decoding a file. The writer's
// batches are far smaller (targetBatchBytes), so a larger buffer means a corrupt length
// field; refusing it turns what would be an out-of-memory crash into an error.
const maxAllocBytes = 256 << 20

// errTooLarge is the panic value of boundedAlloc.
type errTooLarge int

// boundedAlloc refuses allocations larger than maxAllocBytes (by panicking with
// errTooLarge, which guard turns into an error).
type boundedAlloc struct{ memory.Allocator }

func (a boundedAlloc) Allocate(n int) []byte {
	if n < 0 || n > maxAllocBytes {
		panic(errTooLarge(n))
	}
	return a.Allocator.Allocate(n)
}

func (a boundedAlloc) Reallocate(n int, b []byte) []byte {
	if n < 0 || n > maxAllocBytes {
		panic(errTooLarge(n))
	}
	return a.Allocator.Reallocate(n, b)
}

// guard turns a panic while decoding path into an error naming the file: the Arrow and
// Parquet decoders are not hardened against corrupt input, and a damaged file must be
// reported, not crash the program. Use as `defer guard(path, &err)`.
func guard(path string, err *error) {
	r := recover()
	if r == nil {
		return
	}
	switch v := r.(type) {
	case errTooLarge:
		*err = &FileError{File: path, Err: fmt.Errorf("corrupt file: a buffer of %d bytes", int(v))}
	default:
		*err = &FileError{File: path, Err: fmt.Errorf("corrupt file: %v", oneLine(fmt.Sprint(v)))}
	}
}

// oneLine keeps the first line of s.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// batchFile is an open part file of either format.
type batchFile struct {
	path   string
	format Format
	meta   fileMeta
	schema *arrow.Schema
	size   int64
	stamp  fileStamp

	f         *os.File
	ipc       *ipc.FileReader
	pq        *file.Reader
	pqa       *pqarrow.FileReader
	batchRows int
}

// fileStamp identifies a version of a file: its size and modification time.
type fileStamp struct {
	size int64
	mod  time.Time
}

// defaultBatchRows is the number of rows per batch read from Parquet files.
const defaultBatchRows = 256

// openBatchFile opens path, reads its metadata and checks its columns (rows or
// occurrences, by its metadata). Errors are FileErrors.
func openBatchFile(path string, format Format, mem memory.Allocator, batchRows int) (bf *batchFile, err error) {
	if batchRows <= 0 {
		batchRows = defaultBatchRows
	}
	mem = boundedAlloc{mem}
	ferr := func(err error) error { return &FileError{File: path, Err: err} }
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	opened := &batchFile{path: path, format: format, f: f, batchRows: batchRows}
	defer func() {
		if err != nil {
			opened.Close()
			bf = nil
		}
	}()
	defer guard(path, &err) // runs before the cleanup above, which then sees the error
	bf = opened
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	bf.size = st.Size()
	bf.stamp = fileStamp{size: st.Size(), mod: st.ModTime()}
	var get func(string) (string, bool)
	switch format {
	case FormatArrow:
		if err := verifyIPC(f, bf.size); err != nil {
			return nil, ferr(err)
		}
		bf.ipc, err = ipc.NewFileReader(f, ipc.WithAllocator(mem), ipc.WithBodySizeLimit(bf.size), ipc.WithMetadataSizeLimit(bf.size))
		if err != nil {
			return nil, ferr(fmt.Errorf("not a readable Arrow IPC file: %w", err))
		}
		bf.schema = bf.ipc.Schema()
		md := bf.schema.Metadata()
		get = func(k string) (string, bool) {
			i := md.FindKey(k)
			if i < 0 {
				return "", false
			}
			return md.Values()[i], true
		}
	case FormatParquet:
		props := parquet.NewReaderProperties(mem)
		props.BufferedStreamEnabled = true
		props.BufferSize = 1 << 20
		bf.pq, err = file.NewParquetReader(f, file.WithReadProps(props))
		if err != nil {
			return nil, ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		if kv := bf.pq.MetaData().KeyValueMetadata(); kv.FindValue("ARROW:schema") != nil {
			// tpucost never writes one, and arrow-go would trust the lengths inside it.
			return nil, ferr(errors.New("unexpected ARROW:schema metadata: not a tpucost file"))
		}
		bf.pqa, err = pqarrow.NewFileReader(bf.pq, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, mem)
		if err != nil {
			return nil, ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		if bf.schema, err = bf.pqa.Schema(); err != nil {
			return nil, ferr(fmt.Errorf("not a readable Parquet file: %w", err))
		}
		kv := bf.pq.MetaData().KeyValueMetadata()
		get = func(k string) (string, bool) {
			v := kv.FindValue(k)
			if v == nil {
				return "", false
			}
			return *v, true
		}
	default:
		return nil, ferr(fmt.Errorf("unknown format %q", format))
	}
	if bf.meta, err = parseFileMeta(get); err != nil {
		return nil, ferr(err)
	}
	want := rowsFields(columnsOf(bf.meta.Prov))
	switch bf.meta.Content {
	case contentRows:
	case contentOccurrences:
		want = occFields()
	default:
		return nil, ferr(fmt.Errorf("metadata %s is %q, want rows or occurrences", MetaContent, bf.meta.Content))
	}
	if err := checkFields(bf.schema, want); err != nil {
		return nil, ferr(err)
	}
	return bf, nil
}

// Close releases the file's readers and closes it.
func (bf *batchFile) Close() {
	if bf.ipc != nil {
		bf.ipc.Close()
	}
	if bf.pq != nil {
		bf.pq.Close() // closes f
	} else if bf.f != nil {
		bf.f.Close()
	}
	bf.ipc, bf.pq, bf.pqa, bf.f = nil, nil, nil, nil
}

// batches calls fn with each record batch of the file, checked and validated, in order,
// releasing it after fn returns. cols names the columns fn needs (nil: all); Parquet files
// read only those, Arrow files decode whole batches. Decoding errors are FileErrors; an
// error from fn stops the iteration and is returned unchanged.
func (bf *batchFile) batches(cols []string, fn func(arrow.RecordBatch) error) error {
	it, err := bf.iter(cols)
	if err != nil {
		return err
	}
	defer it.close()
	for {
		rec, err := it.next()
		if err != nil || rec == nil {
			return err
		}
		err = fn(rec)
		if bf.format == FormatArrow {
			rec.Release() // RecordBatchAt transfers ownership; the Parquet reader keeps its own
		}
		if err != nil {
			return err
		}
	}
}

// batchIter reads a file's record batches one at a time. Its methods recover from decoder
// panics (guard), so that only the caller's own code runs unguarded.
type batchIter struct {
	bf   *batchFile
	cols []string
	i    int
	rr   pqarrow.RecordReader
}

func (bf *batchFile) iter(cols []string) (it *batchIter, err error) {
	defer guard(bf.path, &err)
	it = &batchIter{bf: bf, cols: cols}
	if bf.format != FormatParquet {
		return it, nil
	}
	var leaves []int
	if cols != nil {
		sc := bf.pq.MetaData().Schema
		for _, c := range cols {
			i := sc.ColumnIndexByName(c)
			for j := 0; i < 0 && j < sc.NumColumns(); j++ {
				if strings.HasPrefix(sc.Column(j).Path(), c+".") { // a list column's one leaf
					i = j
				}
			}
			if i < 0 {
				return nil, &FileError{File: bf.path, Err: fmt.Errorf("no column %q", c)}
			}
			leaves = append(leaves, i)
		}
	}
	if it.rr, err = bf.pqa.GetRecordReader(context.Background(), leaves, nil); err != nil {
		return nil, &FileError{File: bf.path, Err: err}
	}
	return it, nil
}

// next returns the next batch, or nil at the end.
func (it *batchIter) next() (rec arrow.RecordBatch, err error) {
	bf := it.bf
	defer guard(bf.path, &err)
	ferr := func(err error) error { return &FileError{File: bf.path, Err: err} }
	switch bf.format {
	case FormatArrow:
		if it.i >= bf.ipc.NumRecords() {
			return nil, nil
		}
		rec, err = bf.ipc.RecordBatchAt(it.i)
		if err != nil {
			return nil, ferr(fmt.Errorf("record batch %d: %w", it.i, err))
		}
	case FormatParquet:
		if !it.rr.Next() {
			if err := it.rr.Err(); err != nil {
				return nil, ferr(fmt.Errorf("row batch %d: %w", it.i, err))
			}
			return nil, nil
		}
		rec = it.rr.RecordBatch()
	default:
		return nil, ferr(fmt.Errorf("unknown format %q", bf.format))
	}
	it.i++
	want, check := bf.schema.Fields(), it.cols
	if bf.format == FormatParquet {
		want = schemaFields(bf.schema, it.cols) // a projected read returns just these
	}
	if err := checkBatch(rec, want, check); err != nil {
		if bf.format == FormatArrow {
			rec.Release()
		}
		return nil, ferr(fmt.Errorf("record batch %d: %w", it.i-1, err))
	}
	return rec, nil
}

func (it *batchIter) close() {
	if it.rr != nil {
		it.rr.Release()
		it.rr = nil
	}
}

// checkBatch checks that rec has the wanted columns and that those named in check (all if
// nil) have valid buffers and no nulls.
func checkBatch(rec arrow.RecordBatch, want []arrow.Field, check []string) error {
	if err := checkFields(rec.Schema(), want); err != nil {
		return err
	}
	for i, c := range rec.Columns() {
		if int64(c.Len()) != rec.NumRows() {
			return fmt.Errorf("column %q has %d rows, the batch %d", rec.ColumnName(i), c.Len(), rec.NumRows())
		}
		if check != nil && !slices.Contains(check, rec.ColumnName(i)) {
			continue
		}
		if err := array.ValidateFull(c); err != nil {
			return fmt.Errorf("corrupt column %q: %w", rec.ColumnName(i), err)
		}
		if err := noNulls(c); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
	}
	return nil
}

// noNulls checks that a column and its list values, recursively, hold no nulls.
func noNulls(a arrow.Array) error {
	if a.NullN() != 0 {
		return fmt.Errorf("%d unexpected nulls", a.NullN())
	}
	if l, ok := a.(*array.List); ok {
		return noNulls(l.ListValues())
	}
	return nil
}

// schemaFields returns the fields of schema named in cols, in schema order (all if cols
// is nil): the columns a projected read returns.
func schemaFields(schema *arrow.Schema, cols []string) []arrow.Field {
	var out []arrow.Field
	for _, f := range schema.Fields() {
		if cols == nil || slices.Contains(cols, f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// stringColumn returns the named string column of rec.
func stringColumn(rec arrow.RecordBatch, name string) (*array.String, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no column %q", name)
	}
	c, ok := rec.Column(idx[0]).(*array.String)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, want string", name, rec.Column(idx[0]).DataType())
	}
	return c, nil
}

// int64Column returns the named int64 column of rec.
func int64Column(rec arrow.RecordBatch, name string) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no column %q", name)
	}
	c, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, want int64", name, rec.Column(idx[0]).DataType())
	}
	return c, nil
}

// Dataset is a directory of complete parts, opened for reading. Its methods may be called
// from several goroutines.
type Dataset struct {
	Dir        string
	Format     Format
	Provenance Provenance // of the first file; all files agree except shard fields and unit ranges
	Files      []string   // complete rows files, sorted by (shard, part)

	parts     []partInfo
	stamps    map[string]fileStamp // of every file when Open verified it
	checksums []ManifestFile
	manifests []string     // base names, sorted
	failed    []FailedUnit // the manifests' failed units, by unit

	mem memory.Allocator // the caller's (OpenOptions.Alloc), for every read without its own

	mu    sync.Mutex
	index *keyIndex
	occ   []Occurrence
}

// OpenOptions configure OpenWith.
type OpenOptions struct {
	// Alloc allocates the Arrow buffers of every read of the dataset: the metadata Open
	// reads, Occurrences, the key index and Rows (unless ReadOptions.Alloc is set). nil:
	// memory.DefaultAllocator. Every buffer is released before the call returns.
	Alloc memory.Allocator
}

// partInfo is one complete part.
type partInfo struct {
	rows, occ string // paths
	shard     int
	count     int
	part      int
	meta      fileMeta
	rowsBytes int64
	occBytes  int64
	fileIndex int
}

// Open opens the dataset in dir: every committed part (a rows file and its occurrences
// file, listed in its shard's manifest). It verifies every listed file's size and SHA-256
// against the manifest and reads the files' metadata, checking that every file is a
// tpucost dataset file with the expected columns and that all files agree on provenance
// except shard index and unit ranges. A part file no manifest lists is an error, except
// the next part of a shard (the one its writer is writing, or was writing when it was
// killed), which is ignored like temporary files; so is a listed file that is missing.
// Later reads check that files did not change since Open (size and modification time).
// Errors are one line naming the offending file.
func Open(dir string) (*Dataset, error) {
	return OpenWith(dir, OpenOptions{})
}

// OpenWith is Open with options: reads allocate from o.Alloc.
func OpenWith(dir string, o OpenOptions) (*Dataset, error) {
	return open(dir, true, o.Alloc)
}

// open is OpenWith; with verify false it ignores manifests and opens every complete part on
// disk (the decoders' own checks then face damaged files: the tests of those use it).
func open(dir string, verify bool, mem memory.Allocator) (*Dataset, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	type key struct {
		task               string
		shard, count, part int
	}
	type shardKey struct {
		task         Task
		shard, count int
	}
	rows, occs := map[key]fileName{}, map[key]bool{}
	onDisk := map[shardKey][]string{} // part file names by shard
	manifests := map[shardKey]bool{}
	formats := map[Format]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if t, i, n, ok := parseManifestName(e.Name()); ok {
			manifests[shardKey{t, i, n}] = true
			continue
		}
		fn, ok := parseFileName(e.Name())
		if !ok {
			continue
		}
		sk := shardKey{Task(fn.task), fn.shard, fn.count}
		onDisk[sk] = append(onDisk[sk], e.Name())
		if verify {
			continue
		}
		k := key{fn.task, fn.shard, fn.count, fn.part}
		formats[fn.format] = e.Name()
		if fn.occ {
			occs[k] = true
		} else {
			rows[k] = fn
		}
	}
	d := &Dataset{Dir: dir, stamps: map[string]fileStamp{}, mem: mem}
	listed := map[string]ManifestFile{} // committed files by base name
	manifestOf := map[string]string{}   // and the path of the manifest listing each
	if verify {
		for sk := range onDisk {
			if !manifests[sk] {
				names := onDisk[sk]
				slices.Sort(names)
				return nil, &FileError{File: filepath.Join(dir, names[0]), Err: fmt.Errorf("not listed in any manifest (no %s): "+
					"the dataset was written by a tpucost older than dataset manifests, or the manifest was removed; regenerate it",
					ManifestName(sk.task, sk.shard, sk.count))}
			}
		}
		for sk := range manifests {
			d.manifests = append(d.manifests, ManifestName(sk.task, sk.shard, sk.count))
			mpath := filepath.Join(dir, ManifestName(sk.task, sk.shard, sk.count))
			m, err := readManifest(mpath, sk.task, sk.shard, sk.count)
			if err != nil {
				return nil, err
			}
			for _, p := range m.Parts {
				fn, _ := parseFileName(p.Rows.Name)
				k := key{fn.task, fn.shard, fn.count, fn.part}
				rows[k], occs[k] = fn, true
				formats[fn.format] = p.Rows.Name
				listed[p.Rows.Name], listed[p.Occurrences.Name] = p.Rows, p.Occurrences
				manifestOf[p.Rows.Name], manifestOf[p.Occurrences.Name] = mpath, mpath
				d.failed = append(d.failed, p.Failed...)
			}
			// The shard's files on disk: listed, or the uncommitted next part.
			nextRows, nextOcc := PartFileNames(sk.task, sk.shard, sk.count, len(m.Parts), m.Format)
			for _, name := range onDisk[sk] {
				if _, ok := listed[name]; !ok && name != nextRows && name != nextOcc {
					return nil, &FileError{File: filepath.Join(dir, name), Err: fmt.Errorf("not listed in %s (%d committed parts): a stray, renamed or foreign file",
						filepath.Base(mpath), len(m.Parts))}
				}
			}
		}
	}
	slices.Sort(d.manifests)
	slices.SortFunc(d.failed, func(a, b FailedUnit) int { return cmp.Compare(a.Unit, b.Unit) })
	if len(formats) > 1 {
		return nil, fmt.Errorf("dataset: %s mixes formats (%s and %s)", dir, formats[FormatArrow], formats[FormatParquet])
	}
	if len(rows) == 0 && IsMeasured(dir) {
		return nil, fmt.Errorf("dataset: %s holds a measured-config table (OpenMeasured), not a kernel dataset", dir)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("dataset: %s holds no complete dataset files", dir)
	}
	keys := make([]key, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.task, b.task), cmp.Compare(a.count, b.count), cmp.Compare(a.shard, b.shard), cmp.Compare(a.part, b.part))
	})
	first := ""
	for _, k := range keys {
		fn := rows[k]
		rowsName, occName := PartFileNames(Task(k.task), k.shard, k.count, k.part, fn.format)
		p := partInfo{rows: filepath.Join(dir, rowsName), occ: filepath.Join(dir, occName), shard: k.shard, count: k.count, part: k.part}
		if !occs[k] {
			return nil, &FileError{File: p.occ, Err: errors.New("missing: a complete part needs its occurrences file")}
		}
		for _, path := range []string{p.rows, p.occ} {
			if verify {
				name := filepath.Base(path)
				if err := verifyFile(path, listed[name], manifestOf[name]); err != nil {
					return nil, err
				}
				d.checksums = append(d.checksums, listed[name])
			}
			bf, err := openBatchFile(path, fn.format, mem, 0)
			if err != nil {
				return nil, err
			}
			d.stamps[path] = bf.stamp
			m, size := bf.meta, bf.size
			bf.Close()
			wantContent := contentRows
			if path == p.occ {
				wantContent = contentOccurrences
				p.occBytes = size
			} else {
				p.meta, p.rowsBytes = m, size
			}
			if m.Content != wantContent {
				return nil, &FileError{File: path, Err: fmt.Errorf("holds %s, want %s", m.Content, wantContent)}
			}
			if m.Prov.ShardIndex != k.shard || m.Prov.ShardCount != k.count || string(m.Prov.Task) != k.task || m.Part != k.part {
				return nil, &FileError{File: path, Err: fmt.Errorf("metadata (task %s, shard %dof%d, part %d) disagrees with the file name",
					m.Prov.Task, m.Prov.ShardIndex, m.Prov.ShardCount, m.Part)}
			}
			if first == "" {
				d.Provenance, first = m.Prov, filepath.Base(path)
			} else if field := d.Provenance.Diff(m.Prov); field != "" {
				return nil, &FileError{File: path, Err: fmt.Errorf("generated with different settings than %s (%s: %s vs %s): the files come from different runs, or one is damaged",
					filepath.Join(dir, first), field, abbreviate(fmt.Sprint(jsonField(m.Prov, field))), abbreviate(fmt.Sprint(jsonField(d.Provenance, field))))}
			}
			if path == p.occ && (m.UnitFirst != p.meta.UnitFirst || m.UnitLast != p.meta.UnitLast) {
				return nil, &FileError{File: path, Err: fmt.Errorf("covers units [%d, %d], its rows file [%d, %d]", m.UnitFirst, m.UnitLast, p.meta.UnitFirst, p.meta.UnitLast)}
			}
		}
		d.Format = fn.format
		p.fileIndex = len(d.parts)
		d.parts = append(d.parts, p)
		d.Files = append(d.Files, p.rows)
	}
	return d, nil
}

// Manifests returns the base names of the manifests Open verified the files against,
// sorted.
func (d *Dataset) Manifests() []string { return slices.Clone(d.manifests) }

// FailedUnits lists the work units the manifests record as failed (ManifestPart.Failed:
// no rows, with their errors), in unit order; empty for a dataset without failures.
func (d *Dataset) FailedUnits() []FailedUnit { return slices.Clone(d.failed) }

// Checksums returns the manifest entries (name, size, SHA-256, rows) of the dataset's
// files, in file order (each part's rows file, then its occurrences file), as Open
// verified them.
func (d *Dataset) Checksums() []ManifestFile { return slices.Clone(d.checksums) }

// openPart opens a file of a part for reading after Open, refusing it if it changed since
// Open verified it.
func (d *Dataset) openPart(path string, mem memory.Allocator, batchRows int) (*batchFile, error) {
	bf, err := openBatchFile(path, d.Format, mem, batchRows)
	if err != nil {
		return nil, err
	}
	if want, ok := d.stamps[path]; ok && (bf.stamp.size != want.size || !bf.stamp.mod.Equal(want.mod)) {
		bf.Close()
		return nil, &FileError{File: path, Err: fmt.Errorf("changed since the dataset was opened (size %d bytes, was %d): reopen the dataset",
			bf.stamp.size, want.size)}
	}
	return bf, nil
}

// winner is where the row kept for a kernel key is: the row from the smallest unit
// (ties: the first in file order).
type winner struct {
	unit int64
	file int32
	row  int32
}

// keyIndex is the result of the first pass over the rows: the kept row of each key.
type keyIndex struct {
	win      map[string]winner
	fileRows []int64 // rows stored in each file
}

// keys returns the index, building it on first use (a pass reading only the kernel_key
// and unit columns).
func (d *Dataset) keys(mem memory.Allocator) (*keyIndex, error) {
	if mem == nil {
		mem = d.mem
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.index != nil {
		return d.index, nil
	}
	idx := &keyIndex{win: map[string]winner{}, fileRows: make([]int64, len(d.parts))}
	for fi, p := range d.parts {
		bf, err := d.openPart(p.rows, mem, 0)
		if err != nil {
			return nil, err
		}
		row := int64(0)
		err = bf.batches([]string{ColUnit, ColKernelKey}, func(rec arrow.RecordBatch) error {
			keys, err := stringColumn(rec, ColKernelKey)
			if err != nil {
				return &FileError{File: p.rows, Err: err}
			}
			units, err := int64Column(rec, ColUnit)
			if err != nil {
				return &FileError{File: p.rows, Err: err}
			}
			for i := 0; i < keys.Len(); i, row = i+1, row+1 {
				k, u := keys.Value(i), units.Value(i)
				if u < p.meta.UnitFirst || u > p.meta.UnitLast {
					return &FileError{File: p.rows, Err: fmt.Errorf("row %d has unit %d outside the file's units [%d, %d]", row, u, p.meta.UnitFirst, p.meta.UnitLast)}
				}
				if w, ok := idx.win[k]; !ok || u < w.unit {
					// Clone: k points into the batch's memory, and assigning may store it.
					idx.win[strings.Clone(k)] = winner{unit: u, file: int32(fi), row: int32(row)}
				}
			}
			return nil
		})
		bf.Close()
		if err != nil {
			return nil, err
		}
		idx.fileRows[fi] = row
	}
	d.index = idx
	return idx, nil
}

// SplitPart selects the rows of a split.
type SplitPart int

// The parts of a split.
const (
	All SplitPart = iota
	Train
	Test
)

func (p SplitPart) String() string {
	switch p {
	case All:
		return "all"
	case Train:
		return "train"
	case Test:
		return "test"
	}
	return fmt.Sprintf("SplitPart(%d)", int(p))
}

// ReadOptions configure Rows.
type ReadOptions struct {
	Split     *Split           // required for Train and Test
	Part      SplitPart        // All (default), Train or Test
	Alloc     memory.Allocator // nil: the dataset's (OpenOptions.Alloc)
	BatchRows int              // rows per batch read from Parquet files (0: 256); Arrow files are read in the batches they were written in
}

// Rows streams every row of the selected split part once, in file order, keeping for each
// kernel key only the row from the smallest unit (shards may duplicate keys; a first pass,
// done once per Dataset, reads just the kernel_key and unit columns to decide which row to
// keep). Memory is bounded by one record batch plus the key set.
//
// fn must not keep the *Row, nor any of its slices, after it returns: Rows reuses them for
// the next row (use Row.Clone to keep one). Its strings may be kept. An error from fn stops
// the stream and is returned unchanged; errors about the data are FileErrors naming the
// file.
func (d *Dataset) Rows(opts ReadOptions, fn func(*Row) error) error {
	mem := opts.Alloc
	if mem == nil {
		mem = d.mem
	}
	if opts.Part != All && opts.Split == nil {
		return fmt.Errorf("dataset: reading the %s part needs a split", opts.Part)
	}
	if opts.Part < All || opts.Part > Test {
		return fmt.Errorf("dataset: unknown split part %d", int(opts.Part))
	}
	idx, err := d.keys(mem)
	if err != nil {
		return err
	}
	node, kernel, config := d.Provenance.Widths()
	var (
		r   Row
		buf rowBuf
		in  = interner{}
	)
	for fi, p := range d.parts {
		bf, err := d.openPart(p.rows, mem, opts.BatchRows)
		if err != nil {
			return err
		}
		row := int64(0)
		err = bf.batches(nil, func(rec arrow.RecordBatch) error {
			b, err := newRowsBatch(rec)
			if err != nil {
				return &FileError{File: p.rows, Err: err}
			}
			for i := 0; i < b.n; i, row = i+1, row+1 {
				key := b.key.Value(i)
				if w, ok := idx.win[key]; !ok || int(w.file) != fi || int64(w.row) != row {
					if !ok {
						return &FileError{File: p.rows, Err: errors.New("changed while being read")}
					}
					continue
				}
				if opts.Part != All && opts.Split.isTest(key, b.program.Value(i)) != (opts.Part == Test) {
					continue
				}
				b.fill(i, &r, &buf, in)
				if string(r.Task) != string(p.meta.Prov.Task) {
					return &FileError{File: p.rows, Err: fmt.Errorf("row %d (kernel %s) has task %q, the file's is %q", row, r.KernelKey, r.Task, p.meta.Prov.Task)}
				}
				if err := checkRow(&r, node, kernel, config); err != nil {
					return &FileError{File: p.rows, Err: fmt.Errorf("row %d (kernel %s): %w", row, r.KernelKey, err)}
				}
				if err := fn(&r); err != nil {
					return err
				}
			}
			return nil
		})
		bf.Close()
		if err != nil {
			return err
		}
		if row != idx.fileRows[fi] {
			return &FileError{File: p.rows, Err: fmt.Errorf("changed while being read: %d rows, %d before", row, idx.fileRows[fi])}
		}
	}
	return nil
}

// Occurrences returns the occurrences of every complete part, ordered by unit (then file
// order), without duplicates of a (unit, kernel key) pair across shards.
func (d *Dataset) Occurrences() ([]Occurrence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.occ != nil {
		return slices.Clone(d.occ), nil
	}
	type uk struct {
		unit int64
		key  string
	}
	var out []Occurrence
	seen := map[uk]bool{}
	in := interner{}
	for _, p := range d.parts {
		bf, err := d.openPart(p.occ, d.mem, 0)
		if err != nil {
			return nil, err
		}
		err = bf.batches(nil, func(rec arrow.RecordBatch) error {
			b, err := newOccBatch(rec)
			if err != nil {
				return &FileError{File: p.occ, Err: err}
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				o := b.at(i, in)
				if o.Unit < p.meta.UnitFirst || o.Unit > p.meta.UnitLast {
					return &FileError{File: p.occ, Err: fmt.Errorf("occurrence %d has unit %d outside the file's units [%d, %d]", i, o.Unit, p.meta.UnitFirst, p.meta.UnitLast)}
				}
				if k := (uk{o.Unit, o.KernelKey}); !seen[k] {
					seen[k] = true
					out = append(out, o)
				}
			}
			return nil
		})
		bf.Close()
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(out, func(a, b Occurrence) int { return cmp.Compare(a.Unit, b.Unit) })
	if out == nil {
		out = []Occurrence{}
	}
	d.occ = out
	return slices.Clone(out), nil
}

// Programs returns the distinct programs of the dataset's occurrences, sorted.
func (d *Dataset) Programs() ([]string, error) {
	occ, err := d.Occurrences()
	if err != nil {
		return nil, err
	}
	var ps []string
	for _, o := range occ {
		ps = append(ps, o.Program)
	}
	slices.Sort(ps)
	return slices.Compact(ps), nil
}

// verifyIPC checks the flatbuffers of an Arrow IPC file before arrow-go parses them:
// arrow-go trusts vector lengths in them and allocates accordingly, so a damaged length
// would crash the process with an out-of-memory error that no recover can catch. It checks
// the footer (schema, fields, key-value metadata, blocks) and every record batch's message
// header, and accepts only the column types of tpucost files (int, float, utf8, list) and
// no dictionaries.
func verifyIPC(f *os.File, size int64) error {
	const magic = "ARROW1"
	tail := int64(len(magic) + 4)
	if size < 2*int64(len(magic))+4+tail {
		return fmt.Errorf("file too small (%d bytes) for an Arrow IPC file", size)
	}
	end := make([]byte, tail)
	if _, err := f.ReadAt(end, size-tail); err != nil {
		return err
	}
	if string(end[4:]) != magic {
		return errors.New("not an Arrow IPC file (no ARROW1 magic at the end; truncated?)")
	}
	n := int64(binary.LittleEndian.Uint32(end))
	if n <= 0 || n > size-tail-8 {
		return fmt.Errorf("footer length %d does not fit in a file of %d bytes", n, size)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-tail-n); err != nil {
		return err
	}
	v := &fbVerifier{b: buf}
	footer := v.table(v.u32(0))
	schema, ok := v.subtable(footer, 1)
	if !ok {
		v.fail("footer has no schema")
	}
	v.tables(schema, 1, v.arrowField)
	v.keyValues(schema, 2)
	v.vector(schema, 3, 8)
	if _, nd := v.vector(footer, 2, 24); nd != 0 {
		v.fail("dictionaries are not used by tpucost files")
	}
	start, nb := v.vector(footer, 3, 24)
	v.keyValues(footer, 4)
	if v.err != nil {
		return fmt.Errorf("corrupt footer: %w", v.err)
	}
	dataEnd := size - tail - n
	for i := int64(0); i < nb; i++ {
		p := start + 24*i
		off := int64(binary.LittleEndian.Uint64(buf[p:]))
		meta := int64(int32(binary.LittleEndian.Uint32(buf[p+8:])))
		body := int64(binary.LittleEndian.Uint64(buf[p+16:]))
		if off < 8 || meta < 8 || body < 0 || off > dataEnd || meta > dataEnd-off || body > dataEnd-off-meta {
			return fmt.Errorf("record batch %d: block (offset %d, metadata %d, body %d) outside the data of %d bytes", i, off, meta, body, dataEnd)
		}
		mb := make([]byte, meta)
		if _, err := f.ReadAt(mb, off); err != nil {
			return err
		}
		prefix := 4
		if binary.LittleEndian.Uint32(mb) == 0xFFFFFFFF {
			prefix = 8
		}
		mv := &fbVerifier{b: mb[prefix:]}
		msg := mv.table(mv.u32(0))
		if p := mv.field(msg, 1, 1); p < 0 || mv.b[p] != 3 {
			mv.fail("message is not a record batch")
		}
		rb, ok := mv.subtable(msg, 2)
		if !ok {
			mv.fail("record batch message has no header")
		}
		mv.vector(rb, 1, 16) // field nodes
		mv.vector(rb, 2, 16) // buffers
		mv.subtable(rb, 3)   // compression
		mv.vector(rb, 4, 8)  // variadic buffer counts
		mv.keyValues(msg, 4)
		if mv.err != nil {
			return fmt.Errorf("record batch %d: corrupt message header: %w", i, mv.err)
		}
	}
	return nil
}

// fbVerifier checks flatbuffer structures within b; the first problem is kept in err and
// makes every later check a no-op.
type fbVerifier struct {
	b     []byte
	err   error
	depth int
}

// fbTable is a verified table: its position, its vtable's position and both lengths.
type fbTable struct{ pos, vt, vtLen, tabLen int64 }

func (v *fbVerifier) fail(format string, a ...any) {
	if v.err == nil {
		v.err = fmt.Errorf(format, a...)
	}
}

// in checks that b[pos:pos+n] exists.
func (v *fbVerifier) in(pos, n int64) bool {
	if v.err != nil {
		return false
	}
	if pos < 0 || n < 0 || pos > int64(len(v.b))-n {
		v.fail("offset %d (+%d) outside the %d-byte flatbuffer", pos, n, len(v.b))
		return false
	}
	return true
}

func (v *fbVerifier) u32(pos int64) int64 {
	if !v.in(pos, 4) {
		return 0
	}
	return int64(binary.LittleEndian.Uint32(v.b[pos:]))
}

func (v *fbVerifier) u16(pos int64) int64 {
	if !v.in(pos, 2) {
		return 0
	}
	return int64(binary.LittleEndian.Uint16(v.b[pos:]))
}

// table verifies the table at pos and its vtable.
func (v *fbVerifier) table(pos int64) fbTable {
	if !v.in(pos, 4) {
		return fbTable{}
	}
	vt := pos - int64(int32(binary.LittleEndian.Uint32(v.b[pos:])))
	vtLen, tabLen := v.u16(vt), v.u16(vt+2)
	if v.err == nil && (vtLen < 4 || vtLen%2 != 0 || tabLen < 4) {
		v.fail("bad vtable (%d, %d) at %d", vtLen, tabLen, vt)
	}
	if !v.in(vt, vtLen) || !v.in(pos, tabLen) {
		return fbTable{}
	}
	return fbTable{pos: pos, vt: vt, vtLen: vtLen, tabLen: tabLen}
}

// field returns the position of field i of t, of size bytes, or -1 if it is absent.
func (v *fbVerifier) field(t fbTable, i int, size int64) int64 {
	if v.err != nil {
		return -1
	}
	o := 4 + 2*int64(i)
	if o+2 > t.vtLen {
		return -1
	}
	off := v.u16(t.vt + o)
	if off == 0 {
		return -1
	}
	if off+size > t.tabLen {
		v.fail("field %d at %d beyond its table of %d bytes", i, off, t.tabLen)
		return -1
	}
	return t.pos + off
}

// ref follows the offset in field i of t; -1 if absent.
func (v *fbVerifier) ref(t fbTable, i int) int64 {
	p := v.field(t, i, 4)
	if p < 0 {
		return -1
	}
	target := p + v.u32(p)
	if !v.in(target, 4) {
		return -1
	}
	return target
}

func (v *fbVerifier) subtable(t fbTable, i int) (fbTable, bool) {
	r := v.ref(t, i)
	if r < 0 {
		return fbTable{}, false
	}
	st := v.table(r)
	return st, v.err == nil
}

// vector verifies the vector in field i of t with elements of elem bytes and returns the
// position of its first element and its length (0, 0 if absent).
func (v *fbVerifier) vector(t fbTable, i int, elem int64) (start, n int64) {
	r := v.ref(t, i)
	if r < 0 {
		return 0, 0
	}
	n, start = v.u32(r), r+4
	if !v.in(start, n*elem) {
		return 0, 0
	}
	return start, n
}

// tables calls fn with each table of the vector of tables in field i of t.
func (v *fbVerifier) tables(t fbTable, i int, fn func(fbTable)) {
	start, n := v.vector(t, i, 4)
	for j := int64(0); j < n && v.err == nil; j++ {
		p := start + 4*j
		if tt := v.table(p + v.u32(p)); v.err == nil {
			fn(tt)
		}
	}
}

func (v *fbVerifier) keyValues(t fbTable, i int) {
	v.tables(t, i, func(kv fbTable) {
		v.vector(kv, 0, 1)
		v.vector(kv, 1, 1)
	})
}

// Arrow's flatbuffers Type union values of the types tpucost files use.
const (
	fbTypeInt           = 2
	fbTypeFloatingPoint = 3
	fbTypeUtf8          = 5
	fbTypeList          = 12
)

// arrowField verifies a Field table: name, a supported type, no dictionary, children
// (at most a few levels deep) and metadata.
func (v *fbVerifier) arrowField(t fbTable) {
	v.vector(t, 0, 1)
	typ := byte(0)
	if p := v.field(t, 2, 1); p >= 0 {
		typ = v.b[p]
	}
	switch typ {
	case fbTypeInt, fbTypeFloatingPoint, fbTypeUtf8, fbTypeList:
	default:
		v.fail("column type %d is not used by tpucost files", typ)
	}
	if _, ok := v.subtable(t, 3); !ok {
		v.fail("field without a type")
	}
	if v.ref(t, 4) >= 0 {
		v.fail("dictionaries are not used by tpucost files")
	}
	if v.depth++; v.depth > 4 {
		v.fail("fields nested too deep")
	}
	v.tables(t, 5, v.arrowField)
	v.depth--
	v.keyValues(t, 6)
}
