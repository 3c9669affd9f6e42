package dataset

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/sealed"
)

// testMeasuredProv is a table of a made-up task with two int and one string parameter.
func testMeasuredProv() MeasuredProvenance {
	return MeasuredProvenance{SchemaVersion: MeasuredSchemaVersion, Table: MeasuredTable, Task: "lut", Backend: "cpu",
		IntColumns: []string{"p", "b"}, StringColumns: []string{"order"}, ProblemColumns: []string{"p", "b"},
		Workload: map[string]int64{"cin": 32, "cout": 32}, SpaceConfigs: 100, Seed: 7,
		Method:    MeasureMethod{Warmup: 2, Repeats: 9, OutlierK: 3, OutlierFloor: 0.01, MaxNoise: 0.05, Retries: 2},
		Machine:   Machine{CPUModel: "Test CPU", GOOS: "linux", GOARCH: "amd64", CPUs: 2, GoVersion: "go1.26"},
		LoadStart: "0.10 0.20 0.30", LoadEnd: "0.40 0.50 0.60", WallSeconds: 1.5, ToolVersion: "test"}
}

// testMeasuredRows are n rows: median i+1 ns, noise 0.01·(i mod 10) (rows 6..9 of each
// ten noisier than 0.05), rows 3 and 7 re-measured, problems p=16|32;b=i mod 3.
func testMeasuredRows(n int) []MeasuredRow {
	rows := make([]MeasuredRow, n)
	orders := []string{"bit-group", "channel"}
	for i := range rows {
		p, b := int64(16<<(i%2)), int64(i%3+1)
		rows[i] = MeasuredRow{Seq: int64(i), Config: "c" + string(rune('a'+i%26)) + strings.Repeat("x", i/26),
			Problem: "p" + string(rune('0'+p/16)) + "b" + string(rune('0'+b)), Ints: []int64{p, b}, Strs: []string{orders[i%2]},
			MedianNs: float64(i + 1), SpreadPct: 2, Noise: 0.01 * float64(i%10), Repeats: 9, Rejected: int32(i % 2), Calls: 11,
			AnalyticalNs: 3 * float64(i+1)}
		if i == 3 || i == 7 { // re-measured: a second attempt's calls
			rows[i].Remeasured = 1
			rows[i].Calls = 22
		}
	}
	if n > 5 {
		rows[5].AnalyticalNs = math.NaN() // no estimate: allowed
	}
	return rows
}

func writeMeasured(t *testing.T, dir string, f Format, rows []MeasuredRow) {
	t.Helper()
	w, err := CreateMeasured(dir, "lut", f)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(testMeasuredProv(), rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// sameRows compares rows, NaN equal to NaN.
func sameRows(a, b []MeasuredRow) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if math.IsNaN(x.AnalyticalNs) && math.IsNaN(y.AnalyticalNs) {
			x.AnalyticalNs, y.AnalyticalNs = 0, 0
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// TestMeasuredRoundTrip: a measured-config table reads back as written in both formats
// (several record batches), in a directory of kind dataset with a sealed manifest;
// inspect summarizes it.
func TestMeasuredRoundTrip(t *testing.T) {
	n := maxBatchRows + 10 // two batches
	rows := testMeasuredRows(n)
	for _, f := range []Format{FormatArrow, FormatParquet} {
		dir := filepath.Join(t.TempDir(), "data")
		writeMeasured(t, dir, f, rows)
		if k, recorded, err := dirlock.KindOf(dir); k != dirlock.Dataset || !recorded || err != nil {
			t.Errorf("%s: kind %q (recorded %v, %v), want dataset", f, k, recorded, err)
		}
		if !IsMeasured(dir) {
			t.Fatalf("%s: IsMeasured false", f)
		}
		d, err := OpenMeasured(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.Provenance, testMeasuredProv()) || d.Format != f || !sameRows(d.Rows, rows) {
			t.Fatalf("%s: read back %+v, %d rows; differs from what was written", f, d.Provenance, len(d.Rows))
		}
		s := InspectMeasured(d)
		// Medians 1..n; noise 0.00..0.09 by i mod 10, so 4 rows of each full ten above
		// 0.05 (n = 4106: 410 tens and 6 more rows, 0..5, none above).
		wantNoisy := 4 * (n / 10)
		if s.Rows != int64(n) || s.Problems != 6 || s.RuntimeNs.Min != 1 || s.RuntimeNs.Max != float64(n) ||
			s.RuntimeNs.Median != float64(n+1)/2 || s.NoisyRows != wantNoisy || s.RemeasuredRows != 2 || s.Rejected != int64(n/2) ||
			s.VerifiedFiles != 1 || len(s.Schema) != 3+2+1+8 || s.Files[0].SHA256 != d.File.SHA256 {
			t.Errorf("%s: summary %+v", f, s)
		}
		var sb strings.Builder
		if err := s.WriteText(&sb); err != nil || !strings.Contains(sb.String(), "measured on cpu (Test CPU") {
			t.Errorf("%s: text %q, %v", f, sb.String(), err)
		}
		// The same rows and provenance give the same bytes.
		again := filepath.Join(t.TempDir(), "again")
		writeMeasured(t, again, f, rows)
		name := MeasuredFileName("lut", f)
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(again, name))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: two writes of the same table differ (%d and %d bytes)", f, len(a), len(b))
		}
		// A kernel dataset reader opening it says what it is.
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "measured-config table") {
			t.Errorf("%s: Open of a measured table: %v", f, err)
		}
	}
}

// TestMeasuredOutRules: the table's directory is locked and of kind dataset: another
// kind, a directory that already holds a dataset and a directory another writer holds
// are refused, in one line, before anything is measured; a discarded writer leaves no
// directory behind, and a kernel dataset writer refuses a measured table's directory.
func TestMeasuredOutRules(t *testing.T) {
	root := t.TempDir()
	model := filepath.Join(root, "model")
	l, err := dirlock.AcquireDir(model, dirlock.Model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(model, "model.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if _, err := CreateMeasured(model, "lut", FormatArrow); !errors.Is(err, dirlock.ErrOtherKind) || strings.Contains(err.Error(), "\n") {
		t.Errorf("into a model directory: %v, want one line, ErrOtherKind", err)
	}
	data := filepath.Join(root, "data")
	w, err := CreateMeasured(data, "lut", FormatArrow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateMeasured(data, "lut", FormatArrow); !errors.Is(err, dirlock.ErrLocked) {
		t.Errorf("a second writer while the first holds the directory: %v, want ErrLocked", err)
	}
	if err := w.Write(testMeasuredProv(), testMeasuredRows(20)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := CreateMeasured(data, "other", FormatParquet); err == nil || !strings.Contains(err.Error(), "already holds a dataset") {
		t.Errorf("into a directory holding a table: %v", err)
	}
	if _, err := NewWriter(WriterOptions{Dir: data, Provenance: Provenance{Task: TaskTile}}); err == nil || !strings.Contains(err.Error(), "measured-config table") {
		t.Errorf("a kernel dataset writer into a measured table's directory: %v", err)
	}
	gone := filepath.Join(root, "gone")
	w, err = CreateMeasured(gone, "lut", FormatArrow)
	if err != nil {
		t.Fatal(err)
	}
	w.Discard()
	if _, err := os.Stat(gone); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a discarded writer left %s: %v", gone, err)
	}
	// Rows Write refuses: out of order, a non-positive median, a missing parameter.
	for name, mut := range map[string]func(r []MeasuredRow){
		"seq":    func(r []MeasuredRow) { r[2].Seq = 7 },
		"median": func(r []MeasuredRow) { r[1].MedianNs = 0 },
		"params": func(r []MeasuredRow) { r[0].Strs = nil },
		"calls":  func(r []MeasuredRow) { r[0].Calls = 3 },
	} {
		rows := testMeasuredRows(5)
		mut(rows)
		w, err := CreateMeasured(filepath.Join(root, name), "lut", FormatArrow)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(testMeasuredProv(), rows); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Write = %v, want a one-line refusal", name, err)
		}
		w.Discard()
	}
}

// TestMeasuredRefusesDamage: a truncated, altered or foreign table file, or an edited
// manifest, is refused in one line naming the file; so is a damaged file whose manifest
// was re-sealed to match it (the decoders' own checks, which must not panic).
func TestMeasuredRefusesDamage(t *testing.T) {
	for _, f := range []Format{FormatArrow, FormatParquet} {
		dir := t.TempDir()
		writeMeasured(t, dir, f, testMeasuredRows(300))
		path := filepath.Join(dir, MeasuredFileName("lut", f))
		mpath := filepath.Join(dir, MeasuredManifestName("lut"))
		good, _ := os.ReadFile(path)
		goodM, _ := os.ReadFile(mpath)
		m, err := readMeasuredManifest(mpath, "lut")
		if err != nil {
			t.Fatal(err)
		}
		restore := func() {
			os.WriteFile(path, good, 0o644)
			os.WriteFile(mpath, goodM, 0o644)
		}
		// reseal writes a manifest that lists b as the table file.
		reseal := func(b []byte) {
			mm := *m
			hw := newHashingWriter(&strings.Builder{})
			hw.Write(b)
			mm.File.SizeBytes, mm.File.SHA256, mm.Checksum = int64(len(b)), hw.sum(), ""
			s, err := sealed.Marshal(&mm)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(mpath, s, 0o644)
		}
		check := func(what, wantFile string) {
			t.Helper()
			_, err := OpenMeasured(dir)
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), wantFile+": ") {
				t.Errorf("%s %s: err = %v, want one line naming %s", f, what, err, wantFile)
			}
		}
		os.WriteFile(path, good[:len(good)/2], 0o644)
		check("truncated", path)
		restore()
		// One byte changed, its size kept: only the manifest's SHA-256 can tell.
		flipped := append([]byte(nil), good...)
		flipped[len(good)/2] ^= 1
		os.WriteFile(path, flipped, 0o644)
		if _, err := OpenMeasured(dir); err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Errorf("%s one byte changed: %v, want the manifest's SHA-256 to refuse it", f, err)
		}
		restore()
		os.WriteFile(mpath, []byte(strings.Replace(string(goodM), `"rows": 300`, `"rows": 299`, 1)), 0o644)
		check("manifest edited", mpath)
		restore()
		os.Remove(path)
		check("file missing", path)
		restore()
		for _, cut := range []int{len(good) - 1, len(good) / 2, 16, 0} {
			os.WriteFile(path, good[:cut], 0o644)
			reseal(good[:cut])
			check("truncated and resealed", path)
		}
		restore()
		// Every 97th byte flipped in turn, the manifest re-sealed: never a panic, and an
		// error (when the decoder notices) is one line naming the file.
		for i := 0; i < len(good); i += 97 {
			b := append([]byte(nil), good...)
			b[i] ^= 0x5a
			os.WriteFile(path, b, 0o644)
			reseal(b)
			if _, err := OpenMeasured(dir); err != nil && (strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), path+": ")) {
				t.Errorf("%s byte %d flipped: %v", f, i, err)
			}
		}
		restore()
		if _, err := OpenMeasured(dir); err != nil {
			t.Fatalf("%s restored: %v", f, err)
		}
	}
}
