package tune

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// TestKindsErrorSaysKinds: a bad Kinds option lists the kinds for people
// ("layout, fusion, tile, flags"), not as a Go slice ("[layout fusion tile flags]").
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
	if err == nil || !strings.Contains(err.Error(), "one or more of layout, fusion, tile, flags") || strings.Contains(err.Error(), "[") {
		t.Errorf("Validate = %v", err)
	}
}
