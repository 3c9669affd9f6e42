package buildinfo

import (
	"strings"
	"testing"
)

// TestReadNamesTheVersions: the versions handed in are the ones Info reports and prints.
func TestReadNamesTheVersions(t *testing.T) {
	v := Versions{Simulator: "tpusim-9.9", FeatureSchema: 7, DatasetSchema: 3, Generator: "gen-5"}
	i := Read(v)
	if i.Simulator != v.Simulator || i.FeatureSchema != v.FeatureSchema || i.DatasetSchema != v.DatasetSchema || i.Generator != v.Generator {
		t.Errorf("Read(%+v) = %+v: the versions are not the ones handed in", v, i)
	}
	s := i.String()
	for _, want := range []string{"tpucost ", "commit ", "simulator tpusim-9.9", "feature schema 7", "dataset schema 3", "generator gen-5"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}
