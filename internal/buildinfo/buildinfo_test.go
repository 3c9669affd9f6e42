package buildinfo

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

func TestReadNamesTheVersions(t *testing.T) {
	s := Read().String()
	for _, want := range []string{"tpucost ", "commit ", tpusim.Version, "feature schema ", "dataset schema ", "generator "} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}
