package zoo

import (
	"fmt"
	"os"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Resolve loads a module from src: a path to an HLO text file (anything that exists as a
// file, or ends in .hlo/.txt) or the name of a zoo model.
func Resolve(src string) (*hlo.Module, error) {
	if st, err := os.Stat(src); err == nil && !st.IsDir() {
		m, err := hlo.ParseFile(src)
		if err != nil {
			return nil, err
		}
		if err := hlo.CheckBounded(m); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		return m, nil
	}
	if strings.HasSuffix(src, ".hlo") || strings.HasSuffix(src, ".txt") || strings.ContainsRune(src, os.PathSeparator) {
		return nil, fmt.Errorf("%s: no such HLO file", src)
	}
	m, err := Lookup(src)
	if err != nil {
		return nil, err
	}
	return m.Build()
}
