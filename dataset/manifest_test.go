package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tinyDataset writes a small dataset (one shard of three parts, tile task, rows of
// rowGen) into a new directory, as the generation driver would.
func tinyDataset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeShard(t, dir, FormatArrow, memory.DefaultAllocator, rowGen{task: TaskTile, maxNodes: 6, configs: 8}, testUnits(1, 12, 2, 20), 0, 1, 4)
	return dir
}

// checkOneLineNaming fails unless err is one line naming file and containing each of want.
func checkOneLineNaming(t *testing.T, what string, err error, file string, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, file) {
		t.Errorf("%s: error %q is not one line naming %s", what, msg, file)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q does not say %q", what, msg, w)
		}
	}
}

// TestChecksumDetectsFlippedRuntime is the regression test of the undetected corruption:
// one byte flipped in a rows file's runtime_ns buffer used to be read as a different
// runtime. Open must refuse the file, naming it.
func TestChecksumDetectsFlippedRuntime(t *testing.T) {
	dir := tinyDataset(t)
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rowsFile := d.Files[0]
	allRuntimes := func(d *Dataset) ([]float64, error) {
		var all []float64
		err := d.Rows(ReadOptions{}, func(r *Row) error { all = append(all, r.RuntimesNs...); return nil })
		return all, err
	}
	before, err := allRuntimes(d)
	if err != nil || len(before) == 0 {
		t.Fatal(err, before)
	}
	var runtime float64
	err = d.Rows(ReadOptions{}, func(r *Row) error {
		if runtime == 0 && r.Unit == d.parts[0].meta.UnitFirst && len(r.RuntimesNs) > 0 {
			runtime = r.RuntimesNs[len(r.RuntimesNs)-1]
		}
		return nil
	})
	if err != nil || runtime == 0 {
		t.Fatal(err, runtime)
	}
	b, err := os.ReadFile(rowsFile)
	if err != nil {
		t.Fatal(err)
	}
	// The runtime_ns buffer is stored uncompressed when zstd does not shrink it: find the
	// runtime's 8 bytes and flip a bit of its exponent's low byte.
	var enc [8]byte
	binary.LittleEndian.PutUint64(enc[:], math.Float64bits(runtime))
	pos := bytes.Index(b, enc[:])
	found := pos >= 0
	if !found {
		t.Logf("runtime %g not found uncompressed; flipping the middle byte", runtime)
		pos = len(b) / 2
	} else {
		pos += 6
	}
	b[pos] ^= 0x10
	if err := os.WriteFile(rowsFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	checkOneLineNaming(t, "flipped byte", err, rowsFile, "SHA-256", ManifestName(TaskTile, 0, 1))
	if os.Getenv("SHOW_ERRORS") != "" {
		t.Log(err)
	}
	// Without the manifest check the damage goes unnoticed: the file decodes to another
	// runtime (the bug this guards against).
	if found {
		du, err := open(dir, false, nil)
		if err != nil {
			t.Fatalf("unverified open: %v", err)
		}
		after, err := allRuntimes(du)
		if err != nil || slices.Equal(before, after) {
			t.Errorf("unverified read: err %v, runtimes changed %v; the test no longer reproduces the damage", err, !slices.Equal(before, after))
		}
	}
	// NewWriter (resuming gen) refuses it as well.
	_, err = NewWriter(WriterOptions{Dir: dir, Provenance: d.Provenance})
	checkOneLineNaming(t, "writer on a flipped byte", err, rowsFile, "SHA-256")
}

// TestManifestErrors covers the other ways a directory can disagree with its manifests.
func TestManifestErrors(t *testing.T) {
	ref := tinyDataset(t)
	manifest := ManifestName(TaskTile, 0, 1)
	rows0, occ0 := PartFileNames(TaskTile, 0, 1, 0, FormatArrow)
	rows9, _ := PartFileNames(TaskTile, 0, 1, 9, FormatArrow)
	for _, tc := range []struct {
		what   string
		change func(dir string) error
		file   string // the file the error must name
		want   string
	}{
		{"appended byte", func(dir string) error {
			f, err := os.OpenFile(filepath.Join(dir, occ0), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			f.Write([]byte{0})
			return f.Close()
		}, occ0, "size"},
		{"listed file missing", func(dir string) error { return os.Remove(filepath.Join(dir, rows0)) }, rows0, "missing"},
		{"manifest missing", func(dir string) error { return os.Remove(filepath.Join(dir, manifest)) }, rows0, "older than dataset manifests"},
		{"manifest damaged", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, manifest), []byte(`{"manifest_version": 1, "parts": [`), 0o644)
		}, manifest, "not a readable manifest"},
		{"manifest from the future", func(dir string) error {
			b, _ := os.ReadFile(filepath.Join(dir, manifest))
			b = bytes.Replace(b, []byte(`"manifest_version": 1`), []byte(`"manifest_version": 2`), 1)
			return os.WriteFile(filepath.Join(dir, manifest), b, 0o644)
		}, manifest, "manifest_version is 2"},
		{"part renamed", func(dir string) error {
			return os.Rename(filepath.Join(dir, rows0), filepath.Join(dir, rows9))
		}, rows9, "not listed in " + manifest},
		// The manifest's own fields are checked by its checksum: a row count edited (the
		// reported case, "rows": 61 → 62, was accepted), or a unit range.
		{"row count edited", func(dir string) error {
			return editManifest(dir, manifest, regexp.MustCompile(`"rows": ([0-9]+)`), func(n int) string { return fmt.Sprintf(`"rows": %d`, n+1) })
		}, manifest, "changed after it was written, or damaged"},
		{"unit range edited", func(dir string) error {
			return editManifest(dir, manifest, regexp.MustCompile(`"unit_last": ([0-9]+)`), func(n int) string { return fmt.Sprintf(`"unit_last": %d`, n+1) })
		}, manifest, "checksum"},
		{"checksum removed", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, manifest))
			if err != nil {
				return err
			}
			b = regexp.MustCompile(`,\n  "checksum": "[0-9a-f]*"`).ReplaceAll(b, nil)
			return os.WriteFile(filepath.Join(dir, manifest), b, 0o644)
		}, manifest, "no checksum"},
		// A value of the wrong kind is reported by its JSON field path, not Go types
		// (it was "json: cannot unmarshal string into Go struct field
		// ManifestFile.parts.rows_file.rows of type int64").
		{"row count not a number", func(dir string) error {
			return editManifest(dir, manifest, regexp.MustCompile(`"rows": ([0-9]+)`), func(int) string { return `"rows": "x"` })
		}, manifest, "field parts.rows_file.rows: want an integer, got a string"},
		{"manifest not JSON", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, manifest), []byte("{\n  \"manifest_version\": 1,\n  }"), 0o644)
		}, manifest, manifest + ":3:3: not a readable manifest: malformed JSON"},
	} {
		dir := copyDir(t, ref)
		if err := tc.change(dir); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		checkOneLineNaming(t, tc.what, err, filepath.Join(dir, tc.file), tc.want)
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "int64")) {
			t.Errorf("%s: %v names Go types", tc.what, err)
		}
		if os.Getenv("SHOW_ERRORS") != "" {
			t.Log(err)
		}
	}
}

// editManifest replaces the first match of re in dir's manifest by repl of the match's
// integer, leaving the rest (and the checksum field) as it is.
func editManifest(dir, manifest string, re *regexp.Regexp, repl func(n int) string) error {
	path := filepath.Join(dir, manifest)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	loc := re.FindSubmatchIndex(b)
	if loc == nil {
		return fmt.Errorf("%s: no match of %s", manifest, re)
	}
	n, err := strconv.Atoi(string(b[loc[2]:loc[3]]))
	if err != nil {
		return err
	}
	b = slices.Concat(b[:loc[0]], []byte(repl(n)), b[loc[1]:])
	return os.WriteFile(path, b, 0o644)
}

// TestSecondWriterOfAShardIsRefused: two gen runs on one directory and shard used to share
// temporary names, and one died renaming a file the other had renamed. The second is now
// refused, saying who holds the shard.
func TestSecondWriterOfAShardIsRefused(t *testing.T) {
	dir := t.TempDir()
	prov := testProv(TaskTile, 0, 2)
	w, err := NewWriter(WriterOptions{Dir: dir, Provenance: prov})
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, LockName(TaskTile, 0, 2))
	_, err = NewWriter(WriterOptions{Dir: dir, Provenance: prov})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second writer: err = %v, want ErrLocked", err)
	}
	checkOneLineNaming(t, "second writer", err, lock, fmt.Sprintf("pid %d", os.Getpid()), "started", "command")
	// A run with another shard count, task or format may not share the directory, even
	// before the first run commits a part.
	for _, other := range []struct {
		prov   Provenance
		format Format
		field  string
	}{
		{testProv(TaskTile, 0, 1), FormatArrow, "shard_count"},
		{testProv(TaskFlags, 1, 2), FormatArrow, "task"},
		{testProv(TaskTile, 1, 2), FormatParquet, "format"},
	} {
		if w2, err := NewWriter(WriterOptions{Dir: dir, Provenance: other.prov, Format: other.format}); err == nil || !strings.Contains(err.Error(), other.field) {
			t.Errorf("writer of %s %s/%d: %v; want an error naming %s", other.prov.Task, other.format, other.prov.ShardCount, err, other.field)
			if err == nil {
				w2.Close()
			}
		}
	}
	// Another shard of the directory is free.
	w2, err := NewWriter(WriterOptions{Dir: dir, Provenance: testProv(TaskTile, 1, 2)})
	if err != nil {
		t.Errorf("another shard: %v", err)
	} else {
		w2.Close()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("lock file left after Close: %v", err)
	}
	w, err = NewWriter(WriterOptions{Dir: dir, Provenance: prov})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	w.Close()
}

func readDir(t *testing.T, dir string) map[string]Row {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, d, ReadOptions{})
}
