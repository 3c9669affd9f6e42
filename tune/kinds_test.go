package tune

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// TestKindsErrorSaysKinds: a bad Kinds option, and a bad --kinds item (ParseKinds), list
// every registered kind (compiler.Kinds, staging included, which ParseKinds' typed list
// once left out) for people ("layout, fusion, tile, flags, staging"), not as a Go slice.
func TestKindsErrorSaysKinds(t *testing.T) {
	o := Defaults()
	c, err := tpusim.Preset("v4")
	if err != nil {
		t.Fatal(err)
	}
	o.Chip = c
	o.Budget = 10
	o.Kinds = []compiler.Kind{"bogus"}
	err = o.Validate()
	want := "one or more of layout, fusion, tile, flags, staging"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "[") {
		t.Errorf("Validate = %v", err)
	}
	if _, err := ParseKinds("layout,bogus"); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ParseKinds = %v", err)
	}
	if KindNames(compiler.Kinds()) != strings.TrimPrefix(want, "one or more of ") {
		t.Errorf("KindNames = %q: the registry has other kinds than %s", KindNames(compiler.Kinds()), want)
	}
}
