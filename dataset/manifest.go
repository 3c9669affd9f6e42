package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/tpucost/tpucost/internal/jsonerr"
	"github.com/tpucost/tpucost/internal/sealed"
)

// ManifestVersion is the version of the manifest format and of the directory contract it
// carries: every part file is listed, with its size and SHA-256, in its shard's manifest,
// and the manifest carries a SHA-256 of itself (Manifest.Checksum). Directories written
// before manifests existed hold part files and no manifest, and manifests written before
// manifest checksums have none; both are refused (regenerate them).
const ManifestVersion = 1

// manifestSuffix ends the name of a shard's manifest: "<task>-<i>of<n>.manifest.json".
const manifestSuffix = ".manifest.json"

// ManifestName returns the base name of the manifest of a shard.
func ManifestName(task Task, shard, count int) string {
	return fmt.Sprintf("%s-%dof%d%s", task, shard, count, manifestSuffix)
}

var manifestNameRE = regexp.MustCompile(`^([a-z]+)-([0-9]+)of([0-9]+)\.manifest\.json$`)

// ManifestFile is one file of a committed part: its base name, size, SHA-256 (lowercase
// hex) and the number of rows (rows file) or occurrences (occurrences file) it holds.
type ManifestFile struct {
	Name      string `json:"name"`
	SizeBytes int64  `json:"size_bytes"`
	SHA256    string `json:"sha256"`
	Rows      int64  `json:"rows"`
}

// ManifestPart is one committed part of a shard.
type ManifestPart struct {
	Part        int          `json:"part"`
	UnitFirst   int64        `json:"unit_first"`
	UnitLast    int64        `json:"unit_last"`
	Rows        ManifestFile `json:"rows_file"`
	Occurrences ManifestFile `json:"occurrences_file"`
	// Failed lists the units of the part's range that produced no rows because they
	// failed (to compile or to simulate), with their errors, in unit order.
	Failed []FailedUnit `json:"failed_units,omitempty"`
}

// FailedUnit is a work unit that failed: its unit number, program and variant, and the
// error, one line. A generation run records it in the part that covers it and goes on
// (gen.Options.Strict stops instead).
type FailedUnit struct {
	Unit    int64  `json:"unit"`
	Program string `json:"program"`
	Variant int32  `json:"variant"`
	Error   string `json:"error"`
}

// Manifest lists the committed parts of one shard, parts 0..len(Parts)-1 in order. A
// part is committed when its shard's manifest (written atomically after the part's files
// are in place) lists it. Each shard has its own manifest, so shards of one run can write
// into one directory at the same time.
type Manifest struct {
	ManifestVersion int            `json:"manifest_version"`
	SchemaVersion   int            `json:"schema_version"`
	Task            Task           `json:"task"`
	Format          Format         `json:"format"`
	ShardIndex      int            `json:"shard_index"`
	ShardCount      int            `json:"shard_count"`
	Parts           []ManifestPart `json:"parts"`
	// Checksum is the SHA-256 (lowercase hex) of the manifest file with this field's
	// value empty, so that an edit of any field (a row count, a unit range) is detected
	// like damage to a part file. It is written last; readers verify it.
	Checksum string `json:"checksum"`
}

// maxManifestBytes bounds the size of a manifest file read (about 400 bytes per part).
const maxManifestBytes = 64 << 20

// encode returns the manifest's file content: indented JSON, fields in a fixed order, so
// that the same parts give the same bytes, sealed with its checksum.
func (m *Manifest) encode() ([]byte, error) {
	c := *m
	c.Checksum = ""
	return sealed.Marshal(&c)
}

// readManifest reads and checks the manifest at path, the manifest of (task, shard,
// count) by its name, and its checksum. Errors name path: FileErrors, or *jsonerr.Error
// for a file that is not well-formed JSON of the manifest's fields.
func readManifest(path string, task Task, shard, count int) (*Manifest, error) {
	ferr := func(format string, a ...any) error { return &FileError{File: path, Err: fmt.Errorf(format, a...)} }
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError names the file
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, &FileError{File: path, Err: err}
	}
	if len(b) > maxManifestBytes {
		return nil, ferr("manifest larger than %d bytes", maxManifestBytes)
	}
	var m Manifest
	if err := jsonerr.UnmarshalStrict(path, b, &m); err != nil {
		if je, ok := err.(*jsonerr.Error); ok && je.Field == "" {
			je.Msg = "not a readable manifest: " + je.Msg
		}
		return nil, err // names path, and a position or field, never Go types
	}
	if m.ManifestVersion != ManifestVersion {
		return nil, ferr("manifest_version is %d, this tpucost reads %d", m.ManifestVersion, ManifestVersion)
	}
	if m.SchemaVersion < MinSchemaVersion || m.SchemaVersion > SchemaVersion {
		return nil, ferr("schema_version is %d, this tpucost reads %d to %d", m.SchemaVersion, MinSchemaVersion, SchemaVersion)
	}
	if err := sealed.Verify(b); errors.Is(err, sealed.ErrNoChecksum) {
		return nil, ferr("no checksum: written by a tpucost older than manifest checksums, or damaged; regenerate the dataset")
	} else if err != nil {
		return nil, ferr("%v", err)
	}
	m.Checksum = ""
	if m.Task != task || m.ShardIndex != shard || m.ShardCount != count {
		return nil, ferr("manifest of task %s, shard %dof%d disagrees with its file name", m.Task, m.ShardIndex, m.ShardCount)
	}
	if !m.Format.Valid() {
		return nil, ferr("unknown format %q", m.Format)
	}
	if m.Parts == nil {
		m.Parts = []ManifestPart{}
	}
	for i, p := range m.Parts {
		rows, occ := PartFileNames(task, shard, count, i, m.Format)
		switch {
		case p.Part != i:
			return nil, ferr("entry %d is part %d: parts must be listed in order from 0", i, p.Part)
		case p.Rows.Name != rows || p.Occurrences.Name != occ:
			return nil, ferr("entry %d names %s and %s, want %s and %s", i, p.Rows.Name, p.Occurrences.Name, rows, occ)
		case p.UnitFirst > p.UnitLast || (i > 0 && p.UnitFirst <= m.Parts[i-1].UnitLast):
			return nil, ferr("entry %d has unit range [%d, %d] out of order", i, p.UnitFirst, p.UnitLast)
		}
		for j, f := range p.Failed {
			if f.Unit < p.UnitFirst || f.Unit > p.UnitLast || (j > 0 && f.Unit <= p.Failed[j-1].Unit) {
				return nil, ferr("entry %d: failed unit %d is outside [%d, %d] or out of order", i, f.Unit, p.UnitFirst, p.UnitLast)
			}
		}
		for _, mf := range []ManifestFile{p.Rows, p.Occurrences} {
			if mf.SizeBytes < 0 || mf.Rows < 0 || !sha256RE.MatchString(mf.SHA256) {
				return nil, ferr("entry %d (%s): bad size, rows or sha256", i, mf.Name)
			}
		}
	}
	return &m, nil
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// parseManifestName parses a manifest's base name.
func parseManifestName(name string) (task Task, shard, count int, ok bool) {
	m := manifestNameRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, 0, false
	}
	shard, err1 := strconv.Atoi(m[2])
	count, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil || count < 1 || shard >= count {
		return "", 0, 0, false
	}
	return Task(m[1]), shard, count, true
}

// verifyFile checks that the file at path has the size and SHA-256 its manifest entry
// gives. The error is a FileError naming path and saying what differs.
func verifyFile(path string, want ManifestFile, manifest string) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &FileError{File: path, Err: fmt.Errorf("missing: %s lists it", filepath.Base(manifest))}
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != want.SizeBytes {
		return &FileError{File: path, Err: fmt.Errorf("size %d bytes, %s says %d: the file is damaged or was changed after it was written",
			st.Size(), filepath.Base(manifest), want.SizeBytes)}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &FileError{File: path, Err: err}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return &FileError{File: path, Err: fmt.Errorf("SHA-256 %s, %s says %s: the file is damaged or was changed after it was written",
			got[:16]+"...", filepath.Base(manifest), want.SHA256[:16]+"...")}
	}
	return nil
}

// hashingWriter passes writes through and records their SHA-256 and count.
type hashingWriter struct {
	w    io.Writer
	hash hash.Hash
	n    int64
}

func newHashingWriter(w io.Writer) *hashingWriter { return &hashingWriter{w: w, hash: sha256.New()} }

func (hw *hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.hash.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

// sum returns the hex SHA-256 of everything written.
func (hw *hashingWriter) sum() string { return hex.EncodeToString(hw.hash.Sum(nil)) }
