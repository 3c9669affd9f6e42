package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/gnn/nn"
)

var update = flag.Bool("update", false, "rewrite this backend's golden file (goldenFile) from this run")

// goldenFile is the golden file of the BLAS backend this test runs on: testdata/golden.json
// for the pure-Go build, testdata/golden-openblas.json for -tags blas. OpenBLAS sums a
// matrix product in another order than gonum's pure-Go GEMM, so weights and everything
// that depends on them differ in their low bits between the backends; each backend is
// pinned byte for byte to its own file (gnn's TestBackendsAgree checks that the two agree
// within a tolerance).
func goldenFile() string {
	if nn.BLASBackend == "go" {
		return filepath.Join("testdata", "golden.json")
	}
	return filepath.Join("testdata", "golden-"+nn.BLASBackend+".json")
}

// timingFields are the JSON fields that measure wall-clock time: the only values a seeded
// run may change from one run to the next. Everything else must be byte-identical.
var timingFields = map[string]bool{
	"wall_s": true, "seconds": true, "stage_seconds": true, "kernels_per_sec": true, "stage_wall_s": true, "kernels_per_s": true,
}

// TestGolden pins the quick demo's outputs — datasets, weights, evaluation, tuning and the
// report — to hashes recorded in the backend's golden file (goldenFile), so that a refactor that is meant to
// change nothing (see issue 11) is checked to change nothing. A change that is meant to
// change results reruns this test with -update and says why in its commit.
func TestGolden(t *testing.T) {
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Out: out, Quick: true}); err != nil {
		t.Fatal(err)
	}
	got, err := outputHashes(out)
	if err != nil {
		t.Fatal(err)
	}
	path := goldenFile()
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./demo -run TestGolden -update, with the backend's build tags, to record)", err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for name, h := range want {
		if got[name] != h {
			t.Errorf("%s changed: hash %s, golden %s", name, short(got[name]), short(h))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is new: not in %s", name, path)
		}
	}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(missing)"
	}
	return h
}

// outputHashes hashes every output file of a demo run except the plots (PNG encoders
// are not ours to pin) and report.md (it prints wall times): binary files as they are,
// JSON files with timingFields removed and the output directory replaced by "OUT".
func outputHashes(out string) (map[string]string, error) {
	hashes := map[string]string{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "plots/") || strings.HasSuffix(rel, ".md") || strings.HasSuffix(rel, ".lock") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".json") {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			if b, err = json.Marshal(normalize(v, out)); err != nil {
				return err
			}
		}
		sum := sha256.Sum256(b)
		hashes[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	return hashes, err
}

func normalize(v any, out string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if timingFields[k] || k == "checksum" {
				delete(x, k)
				continue
			}
			x[k] = normalize(e, out)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e, out)
		}
	case string:
		return strings.ReplaceAll(x, out, "OUT")
	}
	return v
}
