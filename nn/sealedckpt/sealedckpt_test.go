package sealedckpt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/nn"
)

var (
	errMismatch = errors.New("mismatch")
	errCorrupt  = errors.New("corrupt")
)

func testKind() Kind {
	return Kind{What: "thing", File: "thing.json", Prefix: "test-thing/", Version: 3,
		Older:   func(v int) string { return "format " + string(rune('0'+v)) + " was different" },
		Retrain: "tpucost thing train", Mismatch: errMismatch, Corrupt: errCorrupt}
}

type thingFile struct {
	Format   string `json:"format"`
	Checksum string `json:"checksum"`
	Width    int    `json:"width"`
	nn.Saved
}

func params() nn.Params { return nn.Params{nn.NewParam("w", 2, 3), nn.NewParam("b", 3)} }

// TestSaveLoad: a saved checkpoint loads back into the same values; a flipped byte, an
// older or foreign format and another parameter layout are refused with the owner's
// errors, in one line; nothing temporary is left.
func TestSaveLoad(t *testing.T) {
	k := testKind()
	dir := filepath.Join(t.TempDir(), "ck")
	ps := params()
	for i := range ps[0].Data {
		ps[0].Data[i] = float32(i) / 7
	}
	if err := k.Save(dir, &thingFile{Format: k.Format(), Width: 5, Saved: nn.Save(ps)}); err != nil {
		t.Fatal(err)
	}
	var f thingFile
	path, err := k.Load(dir, &f)
	if err != nil {
		t.Fatal(err)
	}
	back := params()
	if err := k.Restore(path, f.Saved, back); err != nil {
		t.Fatal(err)
	}
	if f.Width != 5 || !slices.Equal(back[0].Data, ps[0].Data) {
		t.Errorf("loaded width %d, w %v; saved 5, %v", f.Width, back[0].Data, ps[0].Data)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), atomicfile.TmpSuffix) {
			t.Errorf("%s left behind", e.Name())
		}
	}
	good, _ := os.ReadFile(path)
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, want error, says ...string) {
		t.Helper()
		var f thingFile
		_, err := k.Load(dir, &f)
		if !errors.Is(err, want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line wrapping %v", what, err, want)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %v does not say %q", what, err, s)
			}
		}
	}
	write([]byte(strings.Replace(string(good), `"width": 5`, `"width": 6`, 1)))
	check("edited value", errCorrupt, "checksum")
	write([]byte(strings.Replace(string(good), `"test-thing/3"`, `"test-thing/2"`, 1)))
	check("older format", errMismatch, "older thing", "format 2 was different", "tpucost thing train", `"test-thing/3"`)
	write([]byte(strings.Replace(string(good), `"test-thing/3"`, `"other/3"`, 1)))
	check("foreign format", errMismatch, `want "test-thing/3"`)
	write(good[:len(good)/2])
	check("truncated", errCorrupt)
	write(good)
	other := nn.Params{nn.NewParam("w", 3, 3), nn.NewParam("b", 3)}
	if err := k.Restore(path, f.Saved, other); !errors.Is(err, errMismatch) {
		t.Errorf("another layout: %v, want the mismatch error", err)
	}
}
