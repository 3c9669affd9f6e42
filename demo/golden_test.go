package demo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/nn"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata/golden.json, testdata/golden-values.json) from this run; pure-Go build only")

// The golden method. A seeded demo is deterministic on one machine, byte for byte, in
// either build. Across machines only the pure-Go build is: OpenBLAS picks its kernels by
// CPU (and by OPENBLAS_CORETYPE where a machine sets it), and kernels sum a matrix product
// in different orders, so trained weights differ in their low bits from one machine to
// another. The goldens therefore pin the code, not a machine:
//
//   - goldenHashes: the SHA-256 of every output file, recorded by the pure-Go build, which
//     is checked byte for byte against it on every machine.
//   - goldenValues: the same run's JSON outputs as values (wall times and hashes of the
//     weight files left out) and every trained model's predictions on the first rows of its
//     data. The BLAS build is checked against these within tolerances (blasTolerance), and
//     byte for byte on every file that no matrix product touches (the datasets, the
//     seen-key sets).
const (
	goldenHashes = "testdata/golden.json"
	goldenValues = "testdata/golden-values.json"
)

// The tolerances of a BLAS build against the pure-Go golden values. OpenBLAS's kernels
// round a product's sum differently from gonum's, by about float32's unit roundoff per
// product (gnn's backendTol bounds one forward pass at 1e-4 of the largest output), and
// two epochs of Adam carry that on: Adam divides each gradient by its running size, so a
// near-zero gradient of another rounding moves its weight by up to a step. Measured on AMD
// EPYC, OpenBLAS 0.3.21's kernels forced with OPENBLAS_CORETYPE and as it detects them:
// Zen within 3.4e-5 of pure Go everywhere; Haswell predictions 1.3e-3, a program's MAPE
// 1.8e-3; the detected kernel (and Sandybridge, SkylakeX) predictions 1.0e-2, the fusion
// model's validation loss 7.2e-3, a program's MAPE 2.1e-2 (a mean of |prediction − truth|
// / truth moves by the predictions' change over its own size, so a program predicted
// within 13% moves about twice as much as its predictions). The pure-Go build's byte pin
// is what catches a change to the code; these bounds catch a BLAS backend that computes
// something else (a transposed operand, a wrong stride), which moves predictions by far
// more than training's amplification of rounding.
const (
	// blasPredictionTol bounds a model's predictions and training losses, relative:
	// five times the largest difference measured.
	blasPredictionTol = 5e-2
	// blasMetricTol bounds everything else numeric (evaluation metrics, per-program
	// errors, dataset and report figures), relative: about five times the largest
	// measured.
	blasMetricTol = 1e-1
)

// blasTolerance is the relative tolerance of the golden value at path in a BLAS build,
// or skip for a value a BLAS build does not compare. Tuning results are skipped: a
// search keeps the model's top-ranked candidates, and two candidates the model scores
// within rounding of each other change places with the kernels, so the tuned config (and
// every time measured for it) is a discontinuous function of the weights. The pure-Go
// build pins them byte for byte, on every machine.
func blasTolerance(path string) (tol float64, skip bool) {
	switch {
	case strings.HasPrefix(path, "/tuned/"), strings.HasPrefix(path, "/report.json/tuning/"):
		return 0, true
	case strings.HasPrefix(path, "/predictions/"), strings.Contains(path, "loss"):
		return blasPredictionTol, false
	}
	return blasMetricTol, false
}

// predictedRows is how many rows of each model's data the golden values record
// predictions for (every configuration of each row).
const predictedRows = 16

// timingFields are the JSON fields that measure wall-clock time: the only values a seeded
// run may change from one run to the next. Everything else must be byte-identical.
var timingFields = map[string]bool{
	"wall_s": true, "seconds": true, "stage_seconds": true, "kernels_per_sec": true, "stage_wall_s": true, "kernels_per_s": true,
}

// blasDependent reports whether an output file's bytes depend on the BLAS kernels'
// rounding: the trained weights and optimizer state. Everything else is either free of
// matrix products (datasets, key sets) or a JSON document checked by value.
func blasDependent(rel string) bool {
	base := filepath.Base(rel)
	return strings.HasPrefix(rel, "models/") && (strings.HasPrefix(base, "weights-") || strings.HasPrefix(base, "state-")) && strings.HasSuffix(base, ".bin")
}

// TestGolden runs the quick demo and checks its outputs — datasets, weights, evaluation,
// tuning and the report — against the goldens (see goldenHashes, goldenValues), so that
// a refactor that is meant to change nothing (see issue 11) is checked to change nothing.
// A change that is meant to change results reruns this test with -update in the pure-Go
// build (make TAGS= or go test without -tags blas) and says why in its commit.
func TestGolden(t *testing.T) {
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Out: out, Quick: true}); err != nil {
		t.Fatal(err)
	}
	hashes, err := outputHashes(out)
	if err != nil {
		t.Fatal(err)
	}
	values, err := outputValues(out)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if nn.BLASBackend != "go" {
			t.Fatalf("the goldens are recorded by the pure-Go build (this is the %s build): go test ./demo -run TestGolden -update", nn.BLASBackend)
		}
		writeJSON(t, goldenHashes, hashes)
		writeJSON(t, goldenValues, values)
		return
	}
	var wantHashes map[string]string
	var wantValues map[string]any
	readJSON(t, goldenHashes, &wantHashes)
	readJSON(t, goldenValues, &wantValues)
	exact := nn.BLASBackend == "go"
	for name, h := range wantHashes {
		if !exact && (blasDependent(name) || isJSON(name)) {
			continue // checked by value below
		}
		if hashes[name] != h {
			t.Errorf("%s changed: hash %s, golden %s", name, short(hashes[name]), short(h))
		}
	}
	for name := range hashes {
		if _, ok := wantHashes[name]; !ok && !(!exact && blasDependent(name)) {
			t.Errorf("%s is new: not in %s", name, goldenHashes)
		}
	}
	tol := blasTolerance
	if exact {
		// The pure-Go build reproduces every value exactly, as its hashes say.
		tol = func(string) (float64, bool) { return 0, false }
	}
	for _, d := range compareValues("", wantValues, values, tol) {
		t.Errorf("%s (golden %s, %s build)", d, goldenValues, nn.BLASBackend)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./demo -run TestGolden -update in the pure-Go build to record)", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// compareValues lists the differences between a golden value and a run's: numbers
// within tol(path) relative to the larger of the two, everything else exactly, and
// nothing under a path tol skips.
func compareValues(path string, want, got any, tol func(path string) (float64, bool)) []string {
	if _, skip := tol(path); skip {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: an object in the golden, %T here", path, got)}
		}
		var out []string
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				out = append(out, fmt.Sprintf("%s/%s: missing", path, k))
			case !inW:
				out = append(out, fmt.Sprintf("%s/%s: new", path, k))
			default:
				out = append(out, compareValues(path+"/"+k, wv, gv, tol)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: a list of %d in the golden, %v here", path, len(w), describe(got))}
		}
		var out []string
		for i := range w {
			out = append(out, compareValues(fmt.Sprintf("%s/%d", path, i), w[i], g[i], tol)...)
		}
		return out
	case float64:
		g, ok := got.(float64)
		if !ok {
			return []string{fmt.Sprintf("%s: %v in the golden, %v here", path, w, got)}
		}
		t, _ := tol(path)
		if d, scale := math.Abs(w-g), math.Max(math.Abs(w), math.Abs(g)); d > t*scale {
			return []string{fmt.Sprintf("%s: %v in the golden, %v here (relative difference %.2g, tolerance %g)", path, w, g, d/scale, t)}
		}
		return nil
	default:
		if want != got {
			return []string{fmt.Sprintf("%s: %v in the golden, %v here", path, want, got)}
		}
		return nil
	}
}

func describe(v any) string {
	if l, ok := v.([]any); ok {
		return fmt.Sprintf("a list of %d", len(l))
	}
	return fmt.Sprintf("%T", v)
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
// are not ours to pin), Markdown (the report prints wall times) and lock files: binary
// files as they are, JSON files as normalizedJSON.
func outputHashes(out string) (map[string]string, error) {
	hashes := map[string]string{}
	err := walkOutputs(out, func(rel string, b []byte) error {
		if isJSON(rel) {
			v, err := normalizedJSON(rel, b, out)
			if err != nil {
				return err
			}
			if b, err = json.Marshal(v); err != nil {
				return err
			}
		}
		sum := sha256.Sum256(b)
		hashes[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	return hashes, err
}

// outputValues is a demo run as values: every JSON output (normalizedJSON, without the
// hashes of BLAS-dependent files) under its path, and under "predictions/<model>" each
// trained model's predictions for every configuration of the first predictedRows rows of
// the data it was trained on.
func outputValues(out string) (map[string]any, error) {
	values := map[string]any{}
	err := walkOutputs(out, func(rel string, b []byte) error {
		if !isJSON(rel) {
			return nil
		}
		v, err := normalizedJSON(rel, b, out)
		if err != nil {
			return err
		}
		values[rel] = dropWeightHashes(v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range []struct{ model, data string }{{"tile", "tile"}, {"fusion", "fusion"}} {
		preds, err := predictFirstRows(modelDir(out, m.model), dataDir(out, dataset.Task(m.data)))
		if err != nil {
			return nil, fmt.Errorf("predictions of model %s: %w", m.model, err)
		}
		values["predictions/"+m.model] = preds
	}
	return values, nil
}

func predictFirstRows(model, data string) ([]any, error) {
	mdl, _, err := gnn.Load(model)
	if err != nil {
		return nil, err
	}
	p, err := gnn.NewRowPredictor(mdl, gnn.PredictorOptions{})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	d, err := dataset.Open(data)
	if err != nil {
		return nil, err
	}
	var rows []*dataset.Row
	errEnough := fmt.Errorf("enough rows")
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		c := r.Clone()
		rows = append(rows, &c)
		if len(rows) == predictedRows {
			return errEnough
		}
		return nil
	})
	if err != nil && err != errEnough {
		return nil, err
	}
	preds, err := p.PredictRows(rows)
	if err != nil {
		return nil, err
	}
	var flat []any
	for _, ps := range preds {
		for _, x := range ps {
			flat = append(flat, x)
		}
	}
	return flat, nil
}

// walkOutputs calls fn with every output file of a demo run that the goldens cover.
func walkOutputs(out string, fn func(rel string, b []byte) error) error {
	return filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
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
		return fn(rel, b)
	})
}

// isJSON reports whether an output file is JSON: a document (.json) or one per line
// (.jsonl, the training logs).
func isJSON(rel string) bool {
	return strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, ".jsonl")
}

// normalizedJSON is a JSON output (a .jsonl file as the list of its lines) without
// timingFields and checksums, with the output directory replaced by "OUT".
func normalizedJSON(rel string, b []byte, out string) (any, error) {
	if strings.HasSuffix(rel, ".jsonl") {
		var lines []any
		for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			var v any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", rel, i+1, err)
			}
			lines = append(lines, normalize(v, out))
		}
		return lines, nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return normalize(v, out), nil
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

// dropWeightHashes removes the SHA-256 of BLAS-dependent files (a checkpoint's weights
// and state, a manifest's members) from a JSON value: their bytes are checked through the
// predictions instead.
func dropWeightHashes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x["file"].(string); ok && blasDependent("models/"+f) {
			delete(x, "sha256")
		}
		for k, e := range x {
			x[k] = dropWeightHashes(e)
		}
	case []any:
		for i, e := range x {
			x[i] = dropWeightHashes(e)
		}
	}
	return v
}
