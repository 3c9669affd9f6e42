package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunErrorsPointTheRightWay: --split bogus is named as a bad value (it once
// suggested "train a model with --split bogus"); a model whose training data moved says
// to pass --data (it once said only "no such file"); an unwritable --plots is refused
// before the evaluation.
func TestRunErrorsPointTheRightWay(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "a")
	genAt(t, data, "v4", 3, "mlp_96x2_b1", "resnet18_b1", "bert_tiny_s128_b32")
	model := filepath.Join(root, "m")
	trainTiny(t, data, model)
	if _, err := Run(RunOptions{ModelDir: model, Split: "bogus"}); err == nil || !strings.Contains(err.Error(), `--split "bogus": want one of`) ||
		strings.Contains(err.Error(), "train a model") {
		t.Errorf("--split bogus: %v", err)
	}
	file := filepath.Join(root, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(RunOptions{ModelDir: model, PlotsDir: filepath.Join(file, "plots")}); err == nil || !strings.Contains(err.Error(), "--plots") ||
		!strings.Contains(err.Error(), "not writable") {
		t.Errorf("--plots under a file: %v", err)
	}
	if err := os.Rename(data, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(RunOptions{ModelDir: model}); err == nil || !strings.Contains(err.Error(), "pass --data") {
		t.Errorf("data moved away: %v", err)
	}
}
