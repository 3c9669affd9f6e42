package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// TestCalibrateRequestCheck: every value is checked as given, and --out may only replace
// a chip file.
func TestCalibrateRequestCheck(t *testing.T) {
	dir := t.TempDir()
	notChip := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notChip, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := CalibrateRequest{Out: filepath.Join(dir, "c.json"), MinConfigs: 2, MaxEvals: 1, Prior: 0}
	if err := ok.Check(); err != nil {
		t.Errorf("valid request: %v", err)
	}
	for _, c := range []struct {
		edit func(*CalibrateRequest)
		want string
	}{
		{func(r *CalibrateRequest) { r.Out = "" }, "--out is required: the file the fitted preset is written to"},
		{func(r *CalibrateRequest) { r.MinConfigs = 1 }, "--min-configs \"1\": want at least 2"},
		{func(r *CalibrateRequest) { r.Prior = -0.5 }, "--prior \"-0.5\": want a weight >= 0"},
		{func(r *CalibrateRequest) { r.MaxEvals = 0 }, "--max-evals \"0\": want at least 1"},
		{func(r *CalibrateRequest) { r.Out = notChip }, "--out " + notChip + " exists and is not a chip file; refusing to overwrite it"},
	} {
		r := ok
		c.edit(&r)
		if err := r.Check(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", r, err, c.want)
		}
		unresolved := func() (tpusim.Chip, error) {
			t.Error("the chip was resolved before the checks passed")
			return v3(t), nil
		}
		if _, err := r.Calibrate(unresolved); err == nil || err.Error() != c.want {
			t.Errorf("Calibrate %+v: %v, want the check's %q before any fit", r, err, c.want)
		}
	}
}

// TestValidateRequestWrites: the request replays the files, writes the rows and plots it
// is asked for and names each file written; --min-configs below 2 is refused first.
func TestValidateRequestWrites(t *testing.T) {
	if _, err := (ValidateRequest{Files: []string{opFile}, MinConfigs: 1}).Validate(v3(t)); err == nil || err.Error() != "--min-configs \"1\": want at least 2" {
		t.Errorf("--min-configs 1: %v", err)
	}
	dir := t.TempDir()
	var notes bytes.Buffer
	r := ValidateRequest{Files: []string{opFile}, MinConfigs: DefaultMinConfigs, Rows: filepath.Join(dir, "rows"), Plots: filepath.Join(dir, "plots"), Notes: &notes}
	rep, err := r.Validate(v3(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tile == nil || rep.Tile.ScoredKernels == 0 {
		t.Fatalf("no scored tile kernels: %+v", rep.Tile)
	}
	if !strings.Contains(notes.String(), "measured runs to "+r.Rows) || !strings.Contains(notes.String(), "wrote "+r.Plots) {
		t.Errorf("notes %q: want the rows and each plot named", notes.String())
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil || text.Len() == 0 {
		t.Errorf("text: %v, %d bytes", err, text.Len())
	}
}
